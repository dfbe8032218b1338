package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// shadows reports each rule that an earlier one shadows: every request it
// would match, the earlier one matches first, so it never decides. It is
// conservative, never reporting a rule that can decide. It finds a
// shadow when the earlier rule's scope takes everything the later one's
// does and each of the later rule's entries is covered by one entry of
// the earlier rule: the same tools and the same or a wider pattern (a
// bare tool; a prefix rule over the commands, prefixes and wildcard
// heads that extend it by a word; a literal DIR/** over paths below DIR;
// *.HOST over hosts below HOST; an MCP server over its tools). It does
// not find a rule covered only by several earlier rules together, by
// wildcards or globs wider than those forms, or when an allow rule comes
// first and the later rule denies or asks (an allow rule needs every part
// of a compound command, a deny rule only one, so a deny may still match
// what an allow did not).
func shadows(file string, rules []*Rule) []Problem {
	var out []Problem
	for j, b := range rules {
		for _, a := range rules[:j] {
			if shadowedBy(b, a) {
				out = append(out, Problem{file, b.Line, fmt.Sprintf("rule %q is shadowed by rule %q (line %d): every request it matches, %q matches first, so it never decides",
					b.Name, a.Name, a.Line, a.Name)})
				break
			}
		}
	}
	return out
}

// shadowedBy reports whether a, coming first, takes every request b does.
func shadowedBy(b, a *Rule) bool {
	if !within(b.Channels, a.Channels) || !within(b.Tokens, a.Tokens) || !reposWithin(b, a) {
		return false
	}
	aAll, bAll := a.Action == Allow, b.Action == Allow
	for _, mb := range b.Match {
		if !slices.ContainsFunc(a.Match, func(ma Matcher) bool { return covers(ma, mb, aAll, bAll) }) {
			return false
		}
	}
	return len(b.Match) > 0
}

// within reports whether a scope list a (empty: any) takes all b takes.
func within(b, a []string) bool {
	if len(a) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// reposWithin is within for repos. A request whose working directory is
// unknown (or not resolved) meets an allow rule's repos as outside them
// and a deny or ask rule's as inside.
func reposWithin(b, a *Rule) bool {
	switch {
	case len(a.repos) == 0:
		return true
	case len(b.repos) == 0 || (a.Action == Allow && b.Action != Allow):
		return false
	}
	for _, gb := range b.repos {
		if !slices.ContainsFunc(a.repos, func(ga pathPattern) bool { return pathCovers(ga, gb, true, true) }) {
			return false
		}
	}
	return true
}

// covers reports whether entry ma (of a rule with aAll: an allow rule)
// matches every request entry mb does.
func covers(ma, mb Matcher, aAll, bAll bool) bool {
	if mb.kind == kindMCP || ma.kind == kindMCP {
		return ma.kind == kindMCP && mb.kind == kindMCP && ma.mcpServer == mb.mcpServer && (ma.mcpTool == "" || ma.mcpTool == mb.mcpTool)
	}
	for _, t := range mb.tools() {
		if !slices.Contains(ma.tools(), t) {
			return false
		}
	}
	switch {
	case ma.whole():
		return true
	case mb.whole() || ma.kind != mb.kind || (aAll && !bAll):
		return false
	}
	switch mb.kind {
	case kindBash:
		return bashCovers(ma.bash, mb.bash)
	case kindPath:
		return pathCovers(ma.path, mb.path, bAll, false)
	case kindDomain:
		a, b := ma.domain, mb.domain
		return (a.sub && strings.HasSuffix(b.host, "."+a.host)) || a == b
	}
	return false
}

// bashCovers reports whether every command b matches, a matches.
func bashCovers(a, b bashPattern) bool {
	switch a.kind {
	case bashExact:
		return b.kind == bashExact && b.text == a.text
	case bashWild:
		return b.kind == bashWild && slices.Equal(a.chunks, b.chunks) && (a.tail || !b.tail)
	}
	head := b.text
	if b.kind == bashWild {
		head = b.chunks[0]
		return len(head) > len(a.text) && a.match(head[:len(a.text)+1]) // a word boundary follows a's prefix
	}
	return a.match(head)
}

// pathCovers reports whether every path b matches, a matches: the same
// pattern, or a literal DIR/** and b below DIR (inside: b may name DIR
// itself, as repos do). A deny or ask rule's NAME/** also matches NAME at
// any depth, so only the same pattern covers it (bAll false).
func pathCovers(a, b pathPattern, bAll, inside bool) bool {
	if a.anchor != b.anchor {
		return false
	}
	if slices.Equal(a.segs, b.segs) && a.dirOnly == b.dirOnly && a.anyDepth == b.anyDepth && a.dirAnyDepth == b.dirAnyDepth {
		return true
	}
	n := len(a.segs)
	if a.anyDepth || a.dirOnly || b.anyDepth || (b.dirAnyDepth && !bAll) || n < 2 || a.segs[n-1] != "**" {
		return false
	}
	dir := a.segs[:n-1]
	if len(b.segs) < len(dir) || (len(b.segs) == len(dir) && !inside) {
		return false
	}
	for i, s := range dir {
		if strings.ContainsAny(s, `*?[\`) || b.segs[i] != s {
			return false
		}
	}
	return true
}

// unknownTools warns of entries naming a tool no Claude Code has.
func unknownTools(file string, rules []*Rule) []Problem {
	var out []Problem
	for _, r := range rules {
		for _, m := range r.Match {
			if m.kind != kindMCP && !slices.Contains(knownTools, m.tool) {
				out = append(out, Problem{file, m.line, fmt.Sprintf("rule %q: no Claude Code tool is called %s; the entry matches only a tool of exactly that name", r.Name, m.tool)})
			}
		}
	}
	return out
}

// runnerWarnings warns of allow entries for programs that run what their
// files or arguments name (make, npm run, interpreters, shells), and for
// the builtins that evaluate what they are given: the policy sees the
// command, not what it runs.
func runnerWarnings(file string, rules []*Rule) []Problem {
	var out []Problem
	for _, r := range rules {
		if r.Action != Allow {
			continue
		}
		for _, m := range r.Match {
			if m.kind != kindBash || m.preset != "" {
				continue
			}
			if why := runnerWhy(m.bash); why != "" {
				out = append(out, Problem{file, m.line, fmt.Sprintf("rule %q: %s allows %s; the policy sees the command, not what it runs", r.Name, m.raw, why)})
			}
		}
	}
	return out
}

// runners are programs that run what their files, configuration or
// arguments name, and what each runs.
var runners = map[string]string{
	"make": "make, which runs the commands its makefile names", "npm": "npm, whose scripts are package.json's commands",
	"npx": "npx, which runs any package", "yarn": "yarn, whose scripts are package.json's commands",
	"pnpm": "pnpm, whose scripts are package.json's commands", "bun": "bun, which runs scripts and packages",
	"python": "an interpreter, which runs any code", "python3": "an interpreter, which runs any code",
	"node": "an interpreter, which runs any code", "ruby": "an interpreter, which runs any code",
	"perl": "an interpreter, which runs any code", "php": "an interpreter, which runs any code",
	"deno": "an interpreter, which runs any code", "awk": "awk, whose programs run commands and write files",
	"gawk": "awk, whose programs run commands and write files", "bash": "a shell, which runs any command",
	"sh": "a shell, which runs any command", "zsh": "a shell, which runs any command", "dash": "a shell, which runs any command",
	"eval": "eval, which runs any command", "source": "source, which runs a script", ".": "source, which runs a script",
	"xargs": "xargs, which runs the command it is given", "env": "env, which runs the command it is given",
	"sudo": "sudo, which runs the command it is given as another user", "ssh": "ssh, which runs commands elsewhere",
	"docker": "docker, which runs containers", "kubectl": "kubectl, whose exec runs commands in pods",
	"cargo": "cargo, whose builds and tests run the crate's code", "go": "go, whose test, run and generate run the module's code",
	"git":    "git, which runs aliases, hooks and programs its configuration names",
	"printf": "a builtin that evaluates the names it is given", "read": "a builtin that evaluates the names it is given",
	"declare": "a builtin that evaluates the names it is given", "export": "a builtin that evaluates the names it is given",
	"local": "a builtin that evaluates the names it is given", "typeset": "a builtin that evaluates the names it is given",
	"unset": "a builtin that evaluates the names it is given", "let": "let, which evaluates arithmetic",
	"test": "a builtin that evaluates the names it is given", "[": "a builtin that evaluates the names it is given",
	"mapfile": "a builtin that runs callbacks", "readarray": "a builtin that runs callbacks",
	"trap": "trap, which runs the command it is given", "alias": "alias, which changes what later commands run",
	"hash": "hash, which changes which program a name runs",
}

// runnerWhy says what the program a Bash pattern names runs ("" when it
// names none of runners). A subcommand that only reads (git status, go
// vet) is not a runner's.
func runnerWhy(b bashPattern) string {
	text := b.text
	if b.kind == bashWild {
		text = b.chunks[0]
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return ""
	}
	prog := fields[0]
	if b.kind == bashWild && len(fields) == 1 && !strings.HasSuffix(text, " ") {
		return "" // ls* : the program itself is a wildcard's
	}
	why, ok := runners[path.Base(prog)]
	if !ok {
		return ""
	}
	if len(fields) > 1 {
		switch prog + " " + fields[1] {
		case "git status", "git diff", "git log", "git show", "git blame", "git branch", "go vet", "go list", "go env",
			"go version", "go fmt", "npm view", "npm ls", "npm outdated", "cargo tree", "docker ps", "docker images", "kubectl get",
			"kubectl describe", "kubectl logs":
			return ""
		}
	}
	return why
}

// reorderings warns of deny and ask entries whose command bundles short
// options (rm -rf): they match text, and rm -fr, rm -r -f and
// rm --recursive --force are other text.
func reorderings(file string, rules []*Rule) []Problem {
	var out []Problem
	for _, r := range rules {
		if r.Action == Allow {
			continue
		}
		for _, m := range r.Match {
			if m.kind != kindBash {
				continue
			}
			text := m.bash.text
			if m.bash.kind == bashWild {
				text = strings.Join(m.bash.chunks, "*")
			}
			for _, f := range strings.Fields(text) {
				if len(f) > 2 && f[0] == '-' && f[1] != '-' && isLetters(f[1:]) {
					other := "-" + reverse(f[1:])
					out = append(out, Problem{file, m.line, fmt.Sprintf("rule %q: %s matches text: it does not match %s, nor the options written apart or long; add those forms, or match the program alone", r.Name, m.raw, strings.Replace(text, f, other, 1))})
					break
				}
			}
		}
	}
	return out
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if (s[i] < 'a' || s[i] > 'z') && (s[i] < 'A' || s[i] > 'Z') {
			return false
		}
	}
	return true
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}
