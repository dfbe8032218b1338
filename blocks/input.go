package blocks

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/slackgate/slackgate/store"
)

// fields is a tool input decoded one level deep; unknown fields are kept so
// an edited input can be written back with the same shape.
type fields map[string]json.RawMessage

func decodeInput(raw json.RawMessage) fields {
	f := fields{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &f) // a non-object input renders as pretty JSON instead
	}
	return f
}

// str returns a string field, "" when it is missing or not a string.
func (f fields) str(key string) string {
	var s string
	if raw, ok := f[key]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

func (f fields) has(key string) bool { _, ok := f[key]; return ok }

// pretty indents JSON for display; invalid JSON comes back as it was. Go's
// encoder writes <, > and & as \u003c, \u003e and \u0026 (any RawMessage
// that went through json.Marshal has them); people should read the
// characters, so they are turned back.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// unescapeHTML replaces the \u003c, \u003e and \u0026 escapes of valid JSON
// text with the characters, leaving an escaped backslash followed by
// "u003c" alone.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c", "003C":
				b.WriteByte('<')
				i += 5
				continue
			case "003e", "003E":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // keep any other escape whole, including \\
		i++
	}
	return b.String()
}

// question is one AskUserQuestion question. Unknown fields are ignored.
type question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header"`
	MultiSelect bool     `json:"multiSelect"`
	Options     []option `json:"options"`
}

type option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// maxQuestions and maxQuestionOptions bound what a card renders; the CLI
// sends 1–4 questions of 2–4 options, so these only stop a runaway input
// from breaking Slack's limits.
const (
	maxQuestions       = 10
	maxQuestionOptions = 50
	maxAnswerButtons   = 20
)

func questions(r store.Request) []question {
	var in struct {
		Questions []question `json:"questions"`
	}
	_ = json.Unmarshal(r.Input, &in)
	qs := in.Questions
	if len(qs) > maxQuestions {
		qs = qs[:maxQuestions]
	}
	for i := range qs {
		if len(qs[i].Options) > maxQuestionOptions {
			qs[i].Options = qs[i].Options[:maxQuestionOptions]
		}
	}
	return qs
}

// normalize fills in a missing Kind from the tool name, so a request
// recorded without one still gets the right card and decoders.
//
// A question whose input is not exactly the question schema (an MCP tool
// named like AskUserQuestion with other arguments) is a tool call: its card
// shows every argument, and Approve/Deny decide it.
func normalize(r store.Request) store.Request {
	if r.Kind == store.KindQuestion && !store.IsQuestionForm(r.ToolName, r.Input) {
		r.Kind = store.KindTool
	}
	if r.Kind != "" {
		return r
	}
	switch r.ToolName {
	case "AskUserQuestion":
		r.Kind = store.KindQuestion
	case "ExitPlanMode":
		r.Kind = store.KindPlan
	default:
		r.Kind = store.KindTool
	}
	return r
}

// mcpName splits "mcp__server__tool"; ok is false for other names.
func mcpName(tool string) (server, name string, ok bool) { return store.MCPToolName(tool) }

// editFields lists the input fields the edit modal offers, per tool.
var editFields = map[string][]string{
	"Bash":  {"command"},
	"Write": {"file_path", "content"},
	"Edit":  {"file_path", "old_string", "new_string"},
}

// Editable reports whether the card offers "Edit & approve": a tool request
// for Bash, Write or Edit whose editable fields are strings that fit a modal
// text input (3,000 characters) and that the modal can show exactly as they
// are: no secret to mask, no invisible character to escape. The modal's
// initial values are the real input, so such fields are never offered:
// showing them would leak the secret, masking them would send the mask to
// Claude as the "edited" input.
func Editable(r store.Request) bool {
	r = normalize(r)
	names, ok := editFields[r.ToolName]
	if !ok || r.Kind != store.KindTool {
		return false
	}
	f := decodeInput(r.Input)
	for _, name := range names {
		raw, ok := f[name]
		if !ok {
			if name == "content" {
				continue
			}
			return false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil || runes(s) > MaxInputLength || !shownAsIs(s) {
			// A masked secret or an escaped invisible character in the
			// modal would be sent back as the edited input.
			return false
		}
	}
	return true
}
