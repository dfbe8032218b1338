package policy

import (
	"cmp"
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"
)

// MaxInputBytes bounds the tool input Evaluate reads; a larger one is
// unknown: no rule that looks at the input allows it, and every deny or
// ask rule about its tool matches.
const MaxInputBytes = 1 << 20

// Request is what the policy knows of one permission request.
type Request struct {
	// Tool and Input are the tool's name and its input as it will run
	// (after an edit, the edited input).
	Tool  string
	Input json.RawMessage
	// Cwd is the session's working directory and Home the home of the
	// user Claude runs as, both absolute; "" when unknown. Relative paths
	// and relative path rules are below Cwd; ~ is Home.
	Cwd  string
	Home string
	// Channel is the session's Slack channel; Token the name of the
	// approval API token that asked ("" for sessions started in Slack).
	Channel string
	Token   string
	// Resolved maps each path of Paths(Tool, Input), Cwd and Home to its
	// real path with every symlink resolved on the machine Claude runs on
	// (Request.Resolve does it given that machine's realpath). A path
	// without its real path never matches an allow rule: the stdio worker,
	// `slackgate hook` and `slackgate mcp` run beside Claude and resolve
	// before they ask.
	Resolved map[string]string
}

// Evaluate decides a request: the first rule (in file order) whose scope
// takes the request and one of whose match entries matches it decides;
// when none does, a card asks APPROVERS once, as it does for every
// request of a nil *Policy (no POLICY_FILE). It is pure: no I/O and no
// clock but now (which grants with an expiry will use).
func (p *Policy) Evaluate(req Request, now time.Time) Verdict {
	_ = now
	if p == nil {
		return Verdict{Action: Ask, Ask: AskSpec{Count: 1}}
	}
	f := newFacts(req)
	for _, r := range p.rules {
		if !r.takes(f) {
			continue
		}
		if matcher, subject, ok := r.matches(f); ok {
			v := Verdict{Action: r.Action, Rule: &RuleRef{Name: r.Name, Line: r.Line}, Message: r.Message, Matcher: matcher, Subject: subject}
			if r.Action == Ask {
				v.Ask = r.Ask
			}
			return v
		}
	}
	return Verdict{Action: Ask, Ask: AskSpec{Count: 1}}
}

// facts is what a request is, worked out once per evaluation.
type facts struct {
	req         Request
	cwds, homes []string // the working directory and home, as given and resolved
	cwdResolved bool
	input       map[string]json.RawMessage
	inputOK     bool
	sh          *shell
	cmdOK       bool
	paths       []factPath
	pathsOK     bool
	pathsDone   bool
	host        string
	hostOK      bool
	hostDone    bool
}

// factPath is one path a request names: its canonical spelling and its
// real path when the caller gave it.
type factPath struct {
	cands    []string
	resolved bool
	dir      bool
}

func newFacts(req Request) *facts {
	f := &facts{req: req}
	f.cwds, f.cwdResolved = forms(req.Cwd, req.Resolved)
	f.homes, _ = forms(req.Home, req.Resolved)
	if len(req.Input) <= MaxInputBytes && json.Unmarshal(req.Input, &f.input) == nil {
		f.inputOK = true
	}
	return f
}

// forms are an absolute directory as given (cleaned) and resolved.
func forms(dir string, resolved map[string]string) (out []string, real bool) {
	if !boundedPath(dir) {
		return nil, false
	}
	out = []string{path.Clean(dir)}
	if r, ok := resolved[dir]; ok && boundedPath(r) {
		out, real = append(out, path.Clean(r)), true
	}
	return out, real
}

func (f *facts) str(key string) (string, bool) {
	var s string
	raw, ok := f.input[key]
	if !f.inputOK || !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// shell is the Bash command read as shell; false when there is none.
func (f *facts) shell() (shell, bool) {
	if f.sh == nil {
		cmd, ok := f.str("command")
		var sh shell
		if ok {
			sh = parseShell(cmd)
		}
		f.sh, f.cmdOK = &sh, ok
	}
	return *f.sh, f.cmdOK
}

// filePaths are the paths the request reads, writes or searches; false
// when its input does not say (a missing or malformed field).
func (f *facts) filePaths() ([]factPath, bool) {
	if f.pathsDone {
		return f.paths, f.pathsOK
	}
	f.pathsDone = true
	raws, dir, ok := requestPaths(f.req.Tool, f)
	if !ok {
		return nil, false
	}
	for _, raw := range raws {
		fp := factPath{dir: dir}
		c, ok := canonicalPath(raw, f.req.Cwd, f.req.Home)
		r, given := f.req.Resolved[raw]
		if len(raw) <= MaxPathBytes && (ok || c == "") && (!given || boundedPath(r)) { // else over the bounds: unknown
			if ok {
				fp.cands = append(fp.cands, c)
			}
			if given {
				fp.cands, fp.resolved = append(fp.cands, path.Clean(r)), true
			}
		}
		f.paths = append(f.paths, fp)
	}
	f.pathsOK = true
	return f.paths, true
}

// fetchHost is the host a WebFetch reaches; false when unknown.
func (f *facts) fetchHost() (string, bool) {
	if !f.hostDone {
		f.hostDone = true
		if u, ok := f.str("url"); ok {
			f.host, f.hostOK = fetchHost(u)
		}
	}
	return f.host, f.hostOK
}

// takes reports whether the rule's scope takes the request. A working
// directory the request does not give (or not resolved) keeps an allow
// rule with repos out and lets a deny or ask rule in.
func (r *Rule) takes(f *facts) bool {
	if len(r.Channels) > 0 && !slices.Contains(r.Channels, f.req.Channel) {
		return false
	}
	if len(r.Tokens) > 0 && (f.req.Token == "" || !slices.Contains(r.Tokens, f.req.Token)) {
		return false
	}
	if len(r.repos) == 0 {
		return true
	}
	if r.Action != Allow {
		return len(f.cwds) == 0 || slices.ContainsFunc(f.cwds, r.inRepo)
	}
	return f.cwdResolved && !slices.ContainsFunc(f.cwds, func(c string) bool { return !r.inRepo(c) })
}

// inRepo reports whether a working directory lies in one of the repos.
func (r *Rule) inRepo(cwd string) bool {
	for _, g := range r.repos {
		if g.matchDir(cwd, "/", false) {
			return true
		}
	}
	return false
}

// matches reports whether one of the rule's entries matches the request,
// and which (as written) and what it matched. An allow rule needs every
// part of the request to match (every simple command of a compound one,
// each path under each of its names); a deny or ask rule any part.
func (r *Rule) matches(f *facts) (matcher, subject string, ok bool) {
	var ms []Matcher
	for _, m := range r.Match {
		if !m.appliesTo(f.req.Tool) {
			continue
		}
		if m.whole() {
			return m.raw, f.req.Tool, true
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return "", "", false
	}
	anyPart := r.Action != Allow
	switch ms[0].kind {
	case kindBash:
		return matchBash(ms, f, anyPart)
	case kindPath:
		return matchPaths(ms, f, anyPart)
	case kindDomain:
		host, ok := f.fetchHost()
		if !ok {
			return ms[0].raw, "a URL whose host is unclear", anyPart
		}
		for _, m := range ms {
			if m.domain.match(host) {
				return m.raw, host, true
			}
		}
	}
	return "", "", false
}

// matchBash matches a Bash command: in an allow rule every simple
// command must match one of ms; in a deny or ask rule one is enough.
func matchBash(ms []Matcher, f *facts, anyPart bool) (matcher, subject string, ok bool) {
	sh, known := f.shell()
	if !known {
		return ms[0].raw, "a Bash request without a command", anyPart
	}
	if anyPart {
		for _, pt := range sh.texts {
			if pt.dynamic {
				return ms[0].raw, pt.allow + " (its program is known only when it runs)", true
			}
			for _, t := range pt.deny {
				for _, m := range ms {
					if m.bash.match(t) {
						return m.raw, t, true
					}
				}
			}
		}
		return "", "", false
	}
	if !sh.ok || len(sh.parts) == 0 {
		return "", "", false
	}
	var used []string
	for _, pt := range sh.texts {
		if !pt.allowable {
			return "", "", false
		}
		i := slices.IndexFunc(ms, func(m Matcher) bool { return m.bash.match(pt.allow) && m.bash.spells(pt.allow, pt.risky) })
		if i < 0 {
			return "", "", false
		}
		if !slices.Contains(used, ms[i].raw) {
			used = append(used, ms[i].raw)
		}
	}
	cmd, _ := f.str("command")
	return strings.Join(used, ", "), cmd, true
}

// matchPaths matches the paths a file tool names.
func matchPaths(ms []Matcher, f *facts, anyPart bool) (matcher, subject string, ok bool) {
	fps, known := f.filePaths()
	if !known {
		return ms[0].raw, "a request whose path is unclear", anyPart
	}
	var used []string
	for _, fp := range fps {
		if len(fp.cands) == 0 {
			if anyPart {
				return ms[0].raw, "a path that cannot be placed (no working directory or home)", true
			}
			return "", "", false
		}
		if !anyPart && !fp.resolved {
			return "", "", false
		}
		for _, c := range fp.cands {
			i := slices.IndexFunc(ms, func(m Matcher) bool { return m.path.match(c, fp.dir, f, anyPart) })
			switch {
			case i >= 0 && anyPart:
				return ms[i].raw, c, true
			case i < 0 && !anyPart:
				return "", "", false
			case i >= 0 && !slices.Contains(used, ms[i].raw):
				used = append(used, ms[i].raw)
			}
		}
	}
	if anyPart || len(used) == 0 {
		return "", "", false
	}
	return strings.Join(used, ", "), fps[0].cands[0], true
}

// match matches one canonical path against the pattern, anchored at any
// form of its anchor (a working directory reached through a symlink has
// two names; a path below either is below it).
func (pp pathPattern) match(abs string, dir bool, f *facts, anyMode bool) bool {
	var bases []string
	switch pp.anchor {
	case anchorRoot:
		bases = []string{"/"}
	case anchorHome:
		bases = f.homes
	default:
		bases = f.cwds
	}
	if len(bases) == 0 {
		return anyMode
	}
	for _, b := range bases {
		if (dir && pp.matchDir(abs, b, anyMode)) || (!dir && pp.matchFile(abs, b, anyMode)) {
			return true
		}
	}
	return false
}

// requestPaths are the paths a file tool's input names, as written (the
// keys of Request.Resolved), and whether it searches them as directories.
func requestPaths(tool string, f *facts) (raws []string, dir, ok bool) {
	switch tool {
	case "Read", "Edit", "Write", "MultiEdit":
		p, ok := f.str("file_path")
		return []string{p}, false, ok
	case "NotebookEdit", "NotebookRead":
		p, ok := f.str("notebook_path")
		return []string{p}, false, ok
	case "Grep", "LS", "Glob":
		if !f.inputOK {
			return nil, true, false
		}
		dir := "."
		if _, given := f.input["path"]; given {
			if dir, ok = f.str("path"); !ok {
				return nil, true, false
			}
			dir = cmp.Or(dir, ".")
		}
		if tool != "Glob" {
			return []string{dir}, true, true
		}
		pattern, ok := f.str("pattern")
		if !ok {
			return nil, true, false
		}
		root, ok := globRoot(dir, pattern)
		return []string{root}, true, ok
	}
	return nil, false, false
}

// globRoot is the directory a Glob searches: its path joined with the
// pattern's leading literal directories. A .. after a wildcard leaves
// it unknown.
func globRoot(dir, pattern string) (string, bool) {
	segs := strings.Split(pattern, "/")
	lit := 0
	for lit < len(segs) && !strings.ContainsAny(segs[lit], "*?[{") {
		lit++
	}
	if slices.Contains(segs[lit:], "..") {
		return "", false
	}
	prefix := strings.Join(segs[:lit], "/")
	switch {
	case strings.HasPrefix(pattern, "/") || strings.HasPrefix(pattern, "~"):
		return cmp.Or(prefix, "/"), true
	case prefix == "":
		return dir, true
	}
	return strings.TrimSuffix(dir, "/") + "/" + prefix, true
}
