package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// MaxAuditInput bounds an entry's Input, in characters: the summary of a
// long input is cut there, and its digest (InputSHA256) names it whole.
const MaxAuditInput = 1000

// toolArgFields are the input fields that say what a tool call is about,
// in the order they are looked for.
var toolArgFields = []string{"command", "file_path", "notebook_path", "pattern", "url", "query", "description", "prompt"}

// ToolArg is what a tool's input is about: its command, path, pattern,
// URL, query, or a subagent's description or prompt; an MCP tool's name
// when it has no arguments; else the input as compact JSON ("" for none,
// or one that is no JSON object). Secrets are not masked here.
func ToolArg(tool string, input json.RawMessage) string {
	var f map[string]json.RawMessage
	_ = json.Unmarshal(input, &f) // not an object: shown as compact JSON
	for _, key := range toolArgFields {
		var s string
		if raw, ok := f[key]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	if _, name, ok := MCPToolName(tool); ok && len(f) == 0 {
		return name
	}
	if len(f) == 0 {
		return ""
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, input); err != nil {
		return string(input)
	}
	return compact.String()
}

// MCPToolName splits an MCP tool's name, mcp__<server>__<tool>.
func MCPToolName(tool string) (server, name string, ok bool) {
	rest, found := strings.CutPrefix(tool, "mcp__")
	if !found {
		return "", "", false
	}
	server, name, ok = strings.Cut(rest, "__")
	return server, name, ok && server != "" && name != ""
}

// AuditInput is what an audit entry records of a request's input: a
// summary (ToolArg, or the questions, the plan, the form's request, for
// the other kinds) with secrets of known shapes masked and cut to
// MaxAuditInput characters, and the SHA-256 of the whole input with its
// secrets masked, in hex, which names it exactly however long it was.
// Both are "" without an input.
func AuditInput(r Request, input json.RawMessage) (summary, digest string) {
	if len(bytes.TrimSpace(input)) == 0 {
		return "", ""
	}
	masked := MaskSecretsJSON(input)
	summary = ToolArg(r.ToolName, masked)
	sum := sha256.Sum256(masked)
	return cutRunes(MaskSecrets(summary), MaxAuditInput), hex.EncodeToString(sum[:])
}

// cutRunes cuts s to at most max characters, the last an ellipsis when
// it was longer, on a character's boundary.
func cutRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
