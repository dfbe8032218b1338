package policy

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
	"time"
)

// What Claude Code lets run without asking never reaches the policy: a
// permission rule "Approve and allow…" hands the CLI for the session, or
// a permission mode that skips prompts, runs what it covers with no card
// and past every deny and ask rule. Before slackgate offers one it asks
// which deny and ask rules it could stand in front of. The answer is
// conservative: a rule overlaps unless it plainly cannot meet what the
// CLI's rule lets through (when unsure, it overlaps).

// Scope is where a session runs, as the rules' channels, repos and tokens
// see it: its channel, working directory (with its real path in Resolved
// when known) and approval API token.
type Scope struct {
	Channel  string
	Cwd      string
	Token    string
	Home     string
	Resolved map[string]string
}

// Widens returns the deny and ask rules that could apply in sc whose
// requests rule (Claude Code's permission-rule syntax: "Bash(git:*)",
// "Edit(src/**)", "WebFetch(domain:x.org)", "mcp__s__t") could let run
// without a card once the CLI holds it. Nil when none: the rule is safe
// to offer. A rule slackgate cannot read overlaps every deny and ask rule.
func (p *Policy) Widens(rule string, sc Scope) []*Rule {
	if p == nil {
		return nil
	}
	c, ok := parseCLIRule(rule)
	return p.restricting(sc, func(r *Rule) bool {
		if !ok {
			return true
		}
		if c.tool == "Bash" && c.kind == cliExact && p.ruleMatchesCommand(r, c.text, sc) {
			return true
		}
		return slices.ContainsFunc(r.Match, func(m Matcher) bool { return c.overlaps(m) })
	})
}

// ModeWidens returns the deny and ask rules that could apply in sc whose
// requests permission mode could let run without a card: acceptEdits runs
// file edits and the file commands the CLI takes with them (mkdir, touch,
// rm, rmdir, mv, cp, sed) without asking; bypassPermissions, auto and any
// mode slackgate does not know run everything. default, plan and dontAsk
// skip no prompt.
func (p *Policy) ModeWidens(mode string, sc Scope) []*Rule {
	if p == nil {
		return nil
	}
	switch mode {
	case "default", "plan", "dontAsk":
		return nil
	case "acceptEdits":
		var out []*Rule
		for _, rule := range acceptEditsRuns {
			for _, r := range p.Widens(rule, sc) {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
		// In file order, as the rules are tried.
		slices.SortFunc(out, func(a, b *Rule) int { return slices.Index(p.rules, a) - slices.Index(p.rules, b) })
		return out
	}
	return p.Restricting(sc)
}

// ModeWidensAnywhere is ModeWidens for a mode every session starts in
// (CLAUDE_PERMISSION_MODE): the deny and ask rules of any scope it could
// let a request past.
func (p *Policy) ModeWidensAnywhere(mode string) []*Rule {
	if p == nil {
		return nil
	}
	anywhere := *p
	anywhere.rules = nil
	for _, r := range p.rules {
		open := *r
		open.Channels, open.Tokens, open.repos = nil, nil, nil
		anywhere.rules = append(anywhere.rules, &open)
	}
	var out []*Rule
	for _, r := range anywhere.ModeWidens(mode, Scope{}) {
		out = append(out, p.rules[slices.IndexFunc(anywhere.rules, func(o *Rule) bool { return o == r })])
	}
	return out
}

// acceptEditsRuns are the permission rules that cover what acceptEdits
// runs without asking (Claude Code 2.1.197 and 2.1.330).
var acceptEditsRuns = []string{"Edit", "Bash(mkdir:*)", "Bash(touch:*)", "Bash(rm:*)", "Bash(rmdir:*)",
	"Bash(mv:*)", "Bash(cp:*)", "Bash(sed:*)"}

// Restricting returns every deny and ask rule that could apply in sc:
// what a permission update slackgate cannot weigh (new directories,
// removed rules) could stand in front of.
func (p *Policy) Restricting(sc Scope) []*Rule {
	if p == nil {
		return nil
	}
	return p.restricting(sc, func(*Rule) bool { return true })
}

// restricting are the deny and ask rules that could apply in sc and that
// meet reports true for.
func (p *Policy) restricting(sc Scope, meet func(*Rule) bool) []*Rule {
	var out []*Rule
	for _, r := range p.rules {
		if r.Action != Allow && r.couldTake(sc) && meet(r) {
			out = append(out, r)
		}
	}
	return out
}

// couldTake reports whether the deny or ask rule r could take a request
// of a session in sc: its channels and tokens name sc's (when given), and
// sc's working directory, as written or resolved, lies in its repos (or is
// unknown).
func (r *Rule) couldTake(sc Scope) bool {
	if len(r.Channels) > 0 && !slices.Contains(r.Channels, sc.Channel) {
		return false
	}
	if len(r.Tokens) > 0 && !slices.Contains(r.Tokens, sc.Token) {
		return false
	}
	if len(r.repos) == 0 || !strings.HasPrefix(sc.Cwd, "/") {
		return true
	}
	cwds := []string{path.Clean(sc.Cwd)}
	if real, ok := sc.Resolved[sc.Cwd]; ok && strings.HasPrefix(real, "/") {
		cwds = append(cwds, path.Clean(real))
	}
	for _, g := range r.repos {
		for _, c := range cwds {
			if g.matchDir(c, "/", false) {
				return true
			}
		}
	}
	return false
}

// ruleMatchesCommand reports whether r, alone, matches the Bash command
// cmd in sc: how the policy itself reads what an exact rule lets run.
func (p *Policy) ruleMatchesCommand(r *Rule, cmd string, sc Scope) bool {
	in, err := json.Marshal(map[string]string{"command": cmd})
	if err != nil {
		return true
	}
	one := &Policy{file: p.file, digest: p.digest, rules: []*Rule{r}}
	v := one.Evaluate(Request{Tool: "Bash", Input: in, Cwd: sc.Cwd, Home: sc.Home, Channel: sc.Channel,
		Token: sc.Token, Resolved: sc.Resolved}, time.Time{})
	return v.Rule != nil
}

type cliKind uint8

const (
	cliWhole  cliKind = iota // every use of the tool (or, for mcp__s, the server)
	cliExact                 // Bash(cmd): that command
	cliPrefix                // Bash(cmd:*), Bash(cmd *) and wildcards: cmd followed by anything
	cliInput                 // a rule on the tool's input slackgate reads only roughly (paths, domains)
)

// cliRule is a permission rule as the CLI would hold it, read for overlap
// only: the tool, and for Bash the command text before any star.
type cliRule struct {
	tool string
	kind cliKind
	text string // Bash: the command (exact) or its fixed start (prefix); WebFetch: the domain
}

// parseCLIRule reads a permission rule; false when it is not one slackgate
// can weigh.
func parseCLIRule(s string) (cliRule, bool) {
	name, content, hasArgs := strings.Cut(s, "(")
	if name == "" || strings.ContainsAny(name, " )*") {
		return cliRule{}, false
	}
	c := cliRule{tool: name, kind: cliWhole}
	if !hasArgs {
		return c, true
	}
	content, ok := strings.CutSuffix(content, ")")
	if !ok {
		return cliRule{}, false
	}
	content = strings.TrimSpace(content)
	if content == "" || content == "*" {
		return c, true
	}
	if name != "Bash" {
		c.kind, c.text = cliInput, content
		return c, true
	}
	fixed, _, starred := strings.Cut(strings.TrimSuffix(content, ":*"), "*")
	c.text = strings.TrimSpace(strings.ReplaceAll(fixed, `\`, ""))
	switch {
	case !starred && !strings.HasSuffix(content, ":*"):
		c.kind, c.text = cliExact, content
	case c.text == "":
		c.kind = cliWhole
	default:
		c.kind = cliPrefix
	}
	return c, true
}

// overlaps reports whether the deny or ask rule entry m could match a
// request c lets run.
func (c cliRule) overlaps(m Matcher) bool {
	dm, ok := parseCLIRule(m.String())
	if !ok {
		return true
	}
	if strings.HasPrefix(c.tool, "mcp__") || strings.HasPrefix(dm.tool, "mcp__") {
		return mcpMeet(c.tool, dm.tool)
	}
	if !slices.Contains(family(c.tool), dm.tool) && !slices.Contains(family(dm.tool), c.tool) {
		return false
	}
	switch {
	case c.kind == cliWhole || dm.kind == cliWhole:
		return true
	case c.tool == "Bash":
		return c.bashOverlaps(dm)
	case c.tool == "WebFetch":
		return domainsMeet(c.text, dm.text)
	}
	return true // paths: a symlink can take any path anywhere
}

// The tools a Read(…) or Edit(…) rule covers, as in the CLI and the
// policy (each family is one rule's).
var (
	editFamily = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	readFamily = []string{"Read", "Grep", "Glob", "LS", "NotebookRead"}
)

// family are the tools a rule naming tool covers.
func family(tool string) []string {
	switch {
	case slices.Contains(editFamily, tool):
		return editFamily
	case slices.Contains(readFamily, tool):
		return readFamily
	}
	return []string{tool}
}

// mcpMeet reports whether two MCP rules (mcp__server, mcp__server__*,
// mcp__server__tool) could take the same tool.
func mcpMeet(a, b string) bool {
	as, at, aok := strings.Cut(strings.TrimPrefix(a, "mcp__"), "__")
	bs, bt, bok := strings.Cut(strings.TrimPrefix(b, "mcp__"), "__")
	if !strings.HasPrefix(a, "mcp__") || !strings.HasPrefix(b, "mcp__") || as != bs {
		return false
	}
	return !aok || !bok || at == "*" || bt == "*" || at == bt
}

// bashOverlaps reports whether the Bash entry d of a deny or ask rule
// could match a command c lets run (c exact is weighed by the policy
// itself: see Widens). A prefix rule lets its command run with any
// arguments: one whose program runs others (a shell, a wrapper, an
// interpreter) meets every Bash entry; otherwise d meets it when their
// fixed starts agree as far as both go.
func (c cliRule) bashOverlaps(d cliRule) bool {
	if c.kind == cliExact {
		return false
	}
	for _, form := range commandForms(c.text) {
		if runsOthers(form) {
			return true
		}
		for _, dform := range commandForms(d.text) {
			if strings.HasPrefix(dform, form) || strings.HasPrefix(form, dform) {
				return true
			}
		}
	}
	return false
}

// commandForms are cmd as written and as a deny rule also reads it:
// without quotes, leading VAR=value words and its program's directory.
func commandForms(cmd string) []string {
	bare := strings.NewReplacer(`"`, "", `'`, "").Replace(cmd)
	words := strings.Fields(bare)
	for len(words) > 0 && strings.Contains(words[0], "=") {
		words = words[1:]
	}
	if len(words) > 0 {
		words[0] = path.Base(words[0])
	}
	return []string{cmd, strings.Join(words, " ")}
}

// runsOthers reports whether a command starting with cmd runs another
// command named in its arguments, one the policy's deny and ask rules
// look for (a wrapper, a shell's -c, eval, ssh, watch): a prefix rule for
// it lets that other command run too. What runs code or its own
// configuration (interpreters, make, npm scripts, git aliases) is not
// read by the rules either way, with a card or without.
func runsOthers(cmd string) bool {
	prog, rest, _ := strings.Cut(cmd, " ")
	if prog == "git" && strings.TrimSpace(rest) == "" {
		return true // global options before the subcommand: git -C . push
	}
	return slices.Contains(programsRunningOthers, prog)
}

var programsRunningOthers = []string{
	"env", "sudo", "doas", "su", "runuser", "chroot", "xargs", "find", "parallel", "timeout", "time", "nice",
	"nohup", "stdbuf", "ionice", "chrt", "taskset", "setsid", "flock", "unshare", "nsenter", "script",
	"unbuffer", "busybox", "systemd-run", "strace", "ltrace", "watch", "ssh", "command", "builtin",
	"exec", "eval", "source", ".", "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh",
}

// domainsMeet reports whether a WebFetch rule for domain a and one for b
// could take the same host (either with a star: when unsure, they do).
func domainsMeet(a, b string) bool {
	a, b = strings.ToLower(strings.TrimPrefix(a, "domain:")), strings.ToLower(strings.TrimPrefix(b, "domain:"))
	if strings.Contains(a, "*") || strings.Contains(b, "*") {
		return true
	}
	return a == b
}
