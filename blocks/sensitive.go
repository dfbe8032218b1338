package blocks

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Some files decide what runs later, outside any card: git's hooks and
// config, Claude Code's configuration and instructions, direnv's .envrc,
// shell start-up files. A card that writes one (Write, Edit, MultiEdit,
// NotebookEdit by path; Bash by any word of its command) says so in one
// line under the headline, naming the file and why it matters. slackgate
// runs Claude Code without reading a repository's or the config
// directory's settings unless the operator opts in, but people's own
// Claude Code, git and shells read them.

// touchy is one kind of file that matters, in the order a card names
// them (the first that matches).
type touchy struct {
	short string              // for the notification text
	why   string              // after the file's name
	match func([]string) bool // on the path's components
}

var touchies = []touchy{
	{"git hooks", "git runs hooks at its next commit or checkout, outside slackgate's cards",
		func(c []string) bool { return adjacent(c, ".git", "hooks") }},
	{"git config", "it names programs git runs (hooks, fsmonitor, filters), outside slackgate's cards",
		func(c []string) bool { return adjacent(c, ".git", "config") || last(c) == ".gitconfig" }},
	{"Claude Code configuration", "it can allow tools and run hooks in any Claude Code that loads it",
		func(c []string) bool { return slices.Contains(c, ".claude") || last(c) == ".claude.json" }},
	{"MCP servers", "it names programs (MCP servers) Claude Code starts for whoever opens this repository",
		func(c []string) bool { return last(c) == ".mcp.json" }},
	{"Claude Code instructions", "Claude Code follows it as instructions whenever it opens this repository",
		func(c []string) bool {
			return strings.EqualFold(last(c), "CLAUDE.md") || strings.EqualFold(last(c), "CLAUDE.local.md")
		}},
	{"shell start-up file", "shells run it at start, Claude Code's too, outside slackgate's cards",
		func(c []string) bool {
			return slices.Contains(shellStartup, last(c)) || strings.HasSuffix(strings.Join(c, "/"), ".config/fish/config.fish")
		}},
	{".envrc", "direnv runs it for whoever enters this directory, outside slackgate's cards",
		func(c []string) bool { return last(c) == ".envrc" }},
}

// shellStartup are the start-up files of bash, sh, zsh, ksh and csh.
var shellStartup = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
	".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".login"}

// gitConfigCommand spots `git … config` within one step of a command: it
// writes .git/config or ~/.gitconfig without naming either.
var gitConfigCommand = regexp.MustCompile(`(^|[\s;&|(])git(\s+-[^\s;&|]+(\s+[^-\s;&|][^\s;&|]*)?)*\s+config\b`)

// pathTools are the tools whose input names the one file they write.
var pathTools = map[string]struct{ field, verb string }{
	"Write":        {"file_path", "Writes"},
	"Edit":         {"file_path", "Edits"},
	"MultiEdit":    {"file_path", "Edits"},
	"NotebookEdit": {"notebook_path", "Edits"},
}

// sensitive flags the card when its tool writes, or its command names, a
// file of touchies.
func (c *card) sensitive(f fields) {
	verb, name, t, ok := "", "", touchy{}, false
	if pt, found := pathTools[c.req.ToolName]; found {
		verb, name = pt.verb, f.str(pt.field)
		t, ok = touchyPath(name)
		name = relPath(name, c.sess.WorkDir)
	} else if c.req.ToolName == "Bash" {
		verb = "Touches"
		name, t, ok = touchyCommand(f.str("command"))
	}
	if ok {
		c.flag("⚠️ *"+verb+"* "+inlineCode(tail(name, nameRunes), nameRunes)+": "+t.why, strings.ToLower(verb)+" "+t.short)
	}
}

// nameRunes bounds the file's name on its line, which keeps to two lines
// on a phone: the end of a path says most (the headline or the body has
// the whole of it).
const nameRunes = 40

// tail keeps the last n runes of s, marking a cut with "…".
func tail(s string, n int) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) <= n {
		return string(r)
	}
	return "…" + string(r[len(r)-n+1:])
}

// touchyPath finds the kind of file p is, if it matters.
func touchyPath(p string) (touchy, bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return touchy{}, false
	}
	comps := strings.Split(path.Clean(strings.ReplaceAll(p, "\\", "/")), "/")
	for _, t := range touchies {
		if t.match(comps) {
			return t, true
		}
	}
	return touchy{}, false
}

// touchyCommand finds the word of cmd that names a file that matters, in
// touchies' order (of several words of one kind, the longest: the file
// rather than its directory), or a `git config`.
func touchyCommand(cmd string) (string, touchy, bool) {
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\r\n;|&<>()`'\"=,{}", r)
	})
	for _, t := range touchies {
		best := ""
		for _, w := range words {
			if found, ok := touchyPath(w); ok && found.short == t.short && len(w) > len(best) {
				best = w
			}
		}
		if best != "" {
			return best, t, true
		}
		if t.short == "git config" && gitConfigCommand.MatchString(cmd) {
			return "git config", t, true
		}
	}
	return "", touchy{}, false
}

func adjacent(c []string, a, b string) bool {
	for i := 0; i+1 < len(c); i++ {
		if c[i] == a && c[i+1] == b {
			return true
		}
	}
	return false
}

func last(c []string) string {
	if len(c) == 0 {
		return ""
	}
	return c[len(c)-1]
}
