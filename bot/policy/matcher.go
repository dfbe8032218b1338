package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Bounds on Bash patterns.
const (
	maxBashPatternBytes = 1024
	maxBashStars        = 16
)

type matcherKind uint8

const (
	kindTool   matcherKind = iota // a bare tool name: every use of the tool
	kindBash                      // Bash(pattern)
	kindPath                      // Read(path), Edit(path)
	kindDomain                    // WebFetch(domain:…)
	kindMCP                       // mcp__server, mcp__server__*, mcp__server__tool
)

// Matcher is one entry of a rule's match list, in Claude Code's
// permission-rule syntax.
type Matcher struct {
	raw       string
	line      int
	kind      matcherKind
	tool      string // the name before the parentheses
	bash      bashPattern
	path      pathPattern
	domain    domainPattern
	mcpServer string
	mcpTool   string // "" for every tool of the server
	preset    string // the preset it came from, if any
}

// String is the matcher as written in the file.
func (m Matcher) String() string { return m.raw }

// The tools a Read(…) or Edit(…) rule covers, as in the CLI: Edit rules
// cover every built-in tool that edits files, Read rules every one that
// reads them. A bare Read or Edit covers the same tools.
var (
	readTools = []string{"Read", "Grep", "Glob", "LS", "NotebookRead"}
	editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
)

// knownTools are the tool names Claude Code 2.1.197 and 2.1.330 offer (and
// older ones some clients still send); a rule naming another is kept, but
// `policy check` warns, since a misspelt name matches nothing.
var knownTools = []string{
	"Agent", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList", "Edit",
	"EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep", "KillBash", "KillShell",
	"LS", "ListAgents", "ListMcpResourcesTool", "LSP", "Monitor", "MultiEdit", "NotebookEdit", "NotebookRead",
	"Read", "ReadMcpResourceTool", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "SlashCommand",
	"Task", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "TodoWrite",
	"ToolSearch", "WebFetch", "WebSearch", "Workflow", "Write",
}

// parseMatcher reads one match entry.
func parseMatcher(s string) (Matcher, error) {
	m := Matcher{raw: s, kind: kindTool, tool: s}
	if s != strings.TrimSpace(s) || s == "" {
		return m, errors.New("blanks around it, or empty")
	}
	if rest, ok := strings.CutPrefix(s, "mcp__"); ok {
		return m, m.parseMCP(rest)
	}
	name, content, hasArgs := strings.Cut(s, "(")
	m.tool = name
	if !validToolName(name) {
		return m, errors.New("a tool name starts with a capital letter and has only letters, digits and _ (or is mcp__server…)")
	}
	if !hasArgs {
		if strings.Contains(s, ")") {
			return m, errors.New(") without (")
		}
		return m, nil
	}
	content, ok := strings.CutSuffix(content, ")")
	if !ok {
		return m, errors.New("missing the closing )")
	}
	if content == "*" {
		return m, nil // Tool(*) is the bare tool, as in the CLI
	}
	var err error
	switch {
	case name == "Bash":
		m.kind = kindBash
		m.bash, err = parseBashPattern(content)
	case name == "Read" || name == "Edit":
		m.kind = kindPath
		m.path, err = parsePathPattern(content)
	case name == "WebFetch":
		m.kind = kindDomain
		m.domain, err = parseDomain(content)
	case slices.Contains(editTools, name):
		err = fmt.Errorf("paths of %s are matched by Edit(…) rules, which cover Edit, Write, MultiEdit and NotebookEdit", name)
	case slices.Contains(readTools, name):
		err = fmt.Errorf("paths of %s are matched by Read(…) rules, which cover Read, Grep, Glob, LS and NotebookRead", name)
	default:
		err = fmt.Errorf("only Bash, Read, Edit and WebFetch rules look at a tool's input; write %s alone for every use of it", name)
	}
	return m, err
}

func validToolName(s string) bool { return s != "" && s[0] >= 'A' && s[0] <= 'Z' && wordChars(s) }

// parseMCP reads mcp__server, mcp__server__* and mcp__server__tool.
func (m *Matcher) parseMCP(rest string) error {
	m.kind = kindMCP
	server, tool, _ := strings.Cut(rest, "__")
	if !mcpName(server) {
		return errors.New("an MCP rule is mcp__SERVER, mcp__SERVER__* or mcp__SERVER__TOOL (letters, digits, - and _)")
	}
	m.mcpServer = server
	if tool != "*" && tool != "" {
		if !mcpName(tool) {
			return errors.New("an MCP tool is named in full or with * alone (mcp__SERVER__*)")
		}
		m.mcpTool = tool
	}
	return nil
}

func mcpName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && c != '-' && c != '.' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// tools are the tool names the matcher is about (nil for MCP ones, which
// appliesTo decides by name).
func (m Matcher) tools() []string {
	switch {
	case m.kind == kindMCP:
		return nil
	case m.tool == "Read":
		return readTools
	case m.tool == "Edit":
		return editTools
	}
	return []string{m.tool}
}

// appliesTo reports whether the matcher is about tool at all.
func (m Matcher) appliesTo(tool string) bool {
	if m.kind == kindMCP {
		prefix := "mcp__" + m.mcpServer + "__"
		return strings.HasPrefix(tool, prefix) && (m.mcpTool == "" || tool == prefix+m.mcpTool)
	}
	return slices.Contains(m.tools(), tool)
}

// whole reports whether the matcher takes every use of its tools,
// whatever the input.
func (m Matcher) whole() bool { return m.kind == kindTool || m.kind == kindMCP }

type bashKind uint8

const (
	bashExact  bashKind = iota // the command exactly
	bashPrefix                 // the command, or it followed by a blank and anything
	bashWild                   // * is any text, anywhere
)

// bashPattern is the content of Bash(…).
type bashPattern struct {
	kind   bashKind
	text   string   // exact and prefix
	chunks []string // wild: the literal text between the stars
	// tail: a wildcard rule ending in :* (kubectl --context prod*:*) also
	// matches its match followed by a blank and anything.
	tail bool
}

// parseBashPattern reads Bash(…): `npm test:*` and `npm test *` (a single
// trailing " *") are prefixes that end at a word boundary, other stars
// are wildcards, anything else is exact; \* is a literal star.
func parseBashPattern(s string) (bashPattern, error) {
	switch {
	case len(s) > maxBashPatternBytes:
		return bashPattern{}, fmt.Errorf("a command longer than %d bytes", maxBashPatternBytes)
	case strings.ContainsAny(s, "\n\r\x00"):
		return bashPattern{}, errors.New("a line break in a command rule")
	case strings.TrimSpace(s) != s || s == "":
		return bashPattern{}, errors.New("blanks around the command, or no command")
	}
	chunks := splitStars(s)
	if prefix, ok := strings.CutSuffix(s, ":*"); ok {
		prefix = strings.TrimRight(prefix, " \t")
		switch pc := splitStars(prefix); {
		case prefix == "":
			return bashPattern{}, errors.New(":* needs a command before it")
		case len(pc) > maxBashStars+1:
			return bashPattern{}, fmt.Errorf("more than %d *", maxBashStars)
		case len(pc) > 1:
			return bashPattern{kind: bashWild, chunks: pc, tail: true}, nil
		}
		return bashPattern{kind: bashPrefix, text: unescapeStars(prefix)}, nil
	}
	switch {
	case len(chunks) == 1:
		return bashPattern{kind: bashExact, text: chunks[0]}, nil
	case len(chunks) == 2 && chunks[1] == "" && strings.HasSuffix(chunks[0], " "):
		return bashPattern{kind: bashPrefix, text: strings.TrimRight(chunks[0], " ")}, nil
	case len(chunks) > maxBashStars+1:
		return bashPattern{}, fmt.Errorf("more than %d *", maxBashStars)
	}
	return bashPattern{kind: bashWild, chunks: chunks}, nil
}

// splitStars splits s at unescaped stars, unescaping \* and \\.
func splitStars(s string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && (s[i+1] == '*' || s[i+1] == '\\'):
			b.WriteByte(s[i+1])
			i++
		case s[i] == '*':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(s[i])
		}
	}
	return append(out, b.String())
}

func unescapeStars(s string) string { return splitStars(s)[0] }

// match reports whether the command text t matches.
func (b bashPattern) match(t string) bool {
	switch b.kind {
	case bashExact:
		return t == b.text
	case bashPrefix:
		rest, ok := strings.CutPrefix(t, b.text)
		return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n')
	}
	rest, ok := strings.CutPrefix(t, b.chunks[0])
	if !ok {
		return false
	}
	last := b.chunks[len(b.chunks)-1]
	for _, c := range b.chunks[1 : len(b.chunks)-1] {
		i := strings.Index(rest, c)
		if i < 0 {
			return false
		}
		rest = rest[i+len(c):]
	}
	if strings.HasSuffix(rest, last) || (b.tail && last == "") {
		return true
	}
	for b.tail {
		i := strings.Index(rest, last)
		if i < 0 {
			return false
		}
		if after := rest[i+len(last):]; after != "" && (after[0] == ' ' || after[0] == '\t' || after[0] == '\n') {
			return true
		}
		rest = rest[i+1:]
	}
	return false
}

// spells reports whether the pattern itself writes out each risky word
// of text (a program's option that writes or runs): an exact pattern
// spells all of text, a prefix its own text, and a wildcard each word
// that stands whole in one of its literal chunks.
func (b bashPattern) spells(text string, risky []textSpan) bool {
	for _, r := range risky {
		switch b.kind {
		case bashExact:
		case bashPrefix:
			if r.end > len(b.text) {
				return false
			}
		default:
			if r.end > len(b.chunks[0]) && !slices.ContainsFunc(b.chunks[1:], func(c string) bool { return spelledIn(c, text[r.start:r.end]) }) {
				return false
			}
		}
	}
	return true
}

// spelledIn reports whether w stands in chunk as a whole word: at its
// start or after a blank, and at its end or before a blank or =.
func spelledIn(chunk, w string) bool {
	for i := 0; ; {
		j := strings.Index(chunk[i:], w)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(w)
		if (at == 0 || chunk[at-1] == ' ') && (end == len(chunk) || chunk[end] == ' ' || chunk[end] == '=') {
			return true
		}
		i = at + 1
	}
}
