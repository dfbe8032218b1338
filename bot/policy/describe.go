package policy

import (
	"fmt"
	"strings"
	"time"
)

// Describe says in words what the entry matches, as `policy check`
// prints it.
func (m Matcher) Describe() string {
	switch m.kind {
	case kindMCP:
		if m.mcpTool == "" {
			return "every tool of MCP server " + m.mcpServer
		}
		return fmt.Sprintf("MCP tool %s of server %s", m.mcpTool, m.mcpServer)
	case kindBash:
		switch b := m.bash; {
		case b.kind == bashExact:
			return fmt.Sprintf("the command %q exactly", b.text)
		case b.kind == bashPrefix:
			return fmt.Sprintf("%q alone or followed by arguments", b.text)
		case b.tail:
			return fmt.Sprintf("commands matching %q, alone or followed by arguments, * being any text", strings.Join(b.chunks, "*"))
		default:
			return fmt.Sprintf("commands matching %q, * being any text", strings.Join(b.chunks, "*"))
		}
	case kindPath:
		return m.toolsWord() + " of " + m.path.describe()
	case kindDomain:
		if m.domain.sub {
			return fmt.Sprintf("fetches from hosts below %s (not %s itself), any port", m.domain.host, m.domain.host)
		}
		return fmt.Sprintf("fetches from %s, any port", m.domain.host)
	}
	switch m.tool {
	case "Bash":
		return "every Bash command"
	case "WebFetch":
		return "every fetch"
	case "Read", "Edit":
		return "every " + m.toolsWord()
	}
	return "every use of " + m.tool
}

func (m Matcher) toolsWord() string {
	switch m.tool {
	case "Read":
		return "read (" + strings.Join(readTools, ", ") + ")"
	case "Edit":
		return "edit (" + strings.Join(editTools, ", ") + ")"
	}
	return m.tool
}

// describe writes the path as it is matched.
func (pp pathPattern) describe() string {
	rel := strings.Join(pp.segs, "/")
	var s string
	switch {
	case pp.anyDepth:
		s = fmt.Sprintf("%q at any depth below the working directory", rel)
	case pp.anchor == anchorRoot:
		s = "/" + rel
	case pp.anchor == anchorHome:
		s = "~/" + rel + " (in the home of the user Claude runs as)"
	default:
		s = "<working directory>/" + rel
	}
	if pp.dirOnly {
		s += ", a directory"
	}
	if pp.dirAnyDepth {
		s += fmt.Sprintf(" (in deny and ask rules, any %q directory below it)", pp.segs[0])
	}
	return s
}

// Describe says what the rule does when it matches.
func (r *Rule) Describe() string {
	switch r.Action {
	case Allow:
		return "allow: runs without a card"
	case Deny:
		return fmt.Sprintf("deny without a card, telling Claude %q", r.Message)
	}
	return "ask: " + r.Ask.String()
}

// Scope says which sessions the rule is for; "" for every one.
func (r *Rule) Scope() string {
	var parts []string
	if len(r.Channels) > 0 {
		parts = append(parts, "channels "+strings.Join(r.Channels, ", "))
	}
	if len(r.Repos) > 0 {
		parts = append(parts, "working directories "+strings.Join(r.Repos, ", "))
	}
	if len(r.Tokens) > 0 {
		parts = append(parts, "approval API tokens "+strings.Join(r.Tokens, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "only for " + strings.Join(parts, "; ")
}

// String says whom a card asks and how it is followed up.
func (a AskSpec) String() string {
	who := strings.Join(a.Approvers, ", ")
	switch {
	case a.Approvers == nil:
		who = "APPROVERS"
	case who == "*":
		who = "anyone who sees the card"
	}
	s := fmt.Sprintf("a card asks %s; one approval is enough", who)
	if a.Count > 1 {
		s = fmt.Sprintf("a card asks %s; %d different people must approve, and any deny wins", who, a.Count)
	}
	if a.NotSelf {
		s += "; the session's starter (or the API token's owner) never counts"
	}
	if len(a.Notify) > 0 {
		s += "; it is also announced to " + strings.Join(a.Notify, ", ")
	}
	if a.RemindAfter > 0 {
		s += "; a reminder after " + short(a.RemindAfter)
	}
	if a.EscalateAfter > 0 {
		s += fmt.Sprintf("; after %s, %s may approve too", short(a.EscalateAfter), strings.Join(a.EscalateTo, ", "))
	}
	return s
}

// short writes a duration without trailing zero units (10m, 1h30m).
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
