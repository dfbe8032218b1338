package blocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// The card body shows every field of the input: the fields a tool's card
// knows are rendered for people (a command as code, a diff, a path), every
// other field, and a known field of an unexpected type, is listed as
// "key: value" under "Other input". Nothing Claude sends is left off a card.

// JSON value types, by the first byte of the raw value.
const (
	jsonString = '"'
	jsonArray  = '['
	jsonBool   = 'b'
	jsonNumber = 'n'
)

func jsonType(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == 't' || c == 'f':
		return jsonBool
	case c == '-' || (c >= '0' && c <= '9'):
		return jsonNumber
	default:
		return c
	}
}

// known names the fields a card renders itself, with the type it expects.
type known map[string]byte

// toolBodies renders the built-in tools; any other tool (MCP tools too)
// shows its whole input as JSON.
var toolBodies = map[string]func(*card, fields){
	"Bash":      (*card).bash,
	"Write":     (*card).write,
	"Edit":      (*card).edit,
	"MultiEdit": (*card).multiEdit,
	"Read":      (*card).read,
	"Glob":      (*card).search,
	"Grep":      (*card).search,
	"WebFetch":  (*card).webFetch,
	"WebSearch": (*card).webSearch,
}

func (c *card) body() {
	f := decodeInput(c.req.Input)
	switch c.req.Kind {
	case store.KindPlan:
		c.plan(f)
		return
	case store.KindQuestion:
		c.questions(f)
		return
	case store.KindElicitation:
		c.elicitBody()
		return
	}
	c.sensitive(f)
	if render, ok := toolBodies[c.req.ToolName]; ok && len(f) > 0 {
		render(c, f)
		return
	}
	full := pretty(c.req.Input)
	c.add(c.codeSection("", keyValues(c.req.Input), previewLines, previewRunes, full, "input.json", "input"))
}

// keyValues shows an object input as "key: value" lines (a multi-line
// string indented under its key), anything else as indented JSON.
func keyValues(raw json.RawMessage) string {
	f := decodeInput(raw)
	if len(f) == 0 {
		return pretty(raw)
	}
	keys := unknownKeys(f, known{})
	var lines []string
	for _, k := range keys {
		v := valueText(f[k])
		if jsonType(f[k]) == jsonString && strings.Contains(v, "\n") {
			lines = append(lines, k+":")
			for _, l := range strings.Split(strings.TrimRight(v, "\n"), "\n") {
				lines = append(lines, "  "+l)
			}
			continue
		}
		lines = append(lines, k+": "+v)
	}
	return strings.Join(lines, "\n")
}

// truthy reads a flag the way a lenient tool would: true or "true".
func truthy(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.EqualFold(strings.TrimSpace(s), "true")
}

func (c *card) bash(f fields) {
	cmd := f.str("command")
	shown := cmd
	if c.diffShown {
		shown, _, _ = editDiff(c.asked, c.req.Input)
	}
	c.add(c.codeSection("", shown, previewLines, previewRunes, cmd, "command.sh", "command"))
	desc := f.str("description")
	if desc == "" && c.req.Description != cmd {
		desc = c.req.Description
	}
	if strings.TrimSpace(desc) != "" {
		c.said = "_" + c.oneLine("description", desc, 300) + "_"
	}
	if truthy(f["dangerouslyDisableSandbox"]) {
		c.flag("⚠️ *Sandbox disabled*: this command runs outside the sandbox", "sandbox disabled")
	}
	if truthy(f["run_in_background"]) {
		c.flag("⚠️ *Runs in background*: Claude does not wait for it to finish", "runs in background")
	}
	c.extras(f, known{"command": jsonString, "description": jsonString})
}

func (c *card) write(f fields) {
	content := f.str("content")
	lines := strings.Count(content, "\n")
	if content != "" && !strings.HasSuffix(content, "\n") {
		lines++
	}
	label := c.pathLabel(f.str("file_path")) + plural(lines, "line") + " · " + size(len(content))
	c.add(c.codeSection(label, strings.TrimSuffix(content, "\n"), previewLines, previewRunes, content, baseName(f.str("file_path")), "content"))
	c.extras(f, known{"file_path": jsonString, "content": jsonString})
}

func (c *card) edit(f fields) {
	label := strings.TrimSuffix(c.pathLabel(f.str("file_path")), " · ")
	if truthy(f["replace_all"]) {
		label = strings.TrimPrefix(label+" · replace all", " · ")
	}
	full := pretty(c.req.Input)
	c.add(c.codeSection(label, diff(f.str("old_string"), f.str("new_string")), previewLines, previewRunes, full, "input.json", "edit"))
	c.extras(f, known{"file_path": jsonString, "old_string": jsonString, "new_string": jsonString, "replace_all": jsonBool})
}

func (c *card) multiEdit(f fields) {
	c.add(section("*File:* " + c.inline("file_path", f.str("file_path"), 500)))
	var edits []fields
	if json.Unmarshal(f["edits"], &edits) != nil {
		c.extras(f, known{"file_path": jsonString})
		return
	}
	full := pretty(c.req.Input)
	var other []string
	for i, e := range edits {
		if len(edits) > maxEdits && i == maxEdits-1 {
			what := plural(len(edits)-maxEdits, "edit") + " hidden"
			c.add(section("_… " + what + " …_"))
			c.hide("edits: "+what, full, "input.json")
		}
		if len(edits) > maxEdits && i >= maxEdits-1 && i < len(edits)-1 {
			continue // shown: the first edits and the last one
		}
		label := fmt.Sprintf("Edit %d of %d", i+1, len(edits))
		if truthy(e["replace_all"]) {
			label += " · replace all"
		}
		c.add(c.codeSection(label, diff(e.str("old_string"), e.str("new_string")), 25, 1200, full, "input.json", "edit "+fmt.Sprint(i+1)))
		for _, k := range unknownKeys(e, known{"old_string": jsonString, "new_string": jsonString, "replace_all": jsonBool}) {
			other = append(other, fmt.Sprintf("edits[%d].%s: %s", i, k, valueText(e[k])))
		}
	}
	c.extras(f, known{"file_path": jsonString, "edits": jsonArray}, other...)
}

func (c *card) read(f fields) {
	text := "*File:* " + c.inline("file_path", f.str("file_path"), 500)
	if f.has("offset") || f.has("limit") {
		text += fmt.Sprintf(" · offset %s, limit %s", numOr(f["offset"], "0"), numOr(f["limit"], "all"))
	}
	c.add(section(text))
	c.extras(f, known{"file_path": jsonString, "offset": jsonNumber, "limit": jsonNumber})
}

func (c *card) search(f fields) {
	text := "*Pattern:* " + c.inline("pattern", f.str("pattern"), 500)
	if p := f.str("path"); p != "" {
		text += "\n*In:* " + c.inline("path", p, 500)
	}
	if g := f.str("glob"); g != "" {
		text += "\n*Files:* " + c.inline("glob", g, 500)
	}
	c.add(section(text))
	c.extras(f, known{"pattern": jsonString, "path": jsonString, "glob": jsonString})
}

func (c *card) webFetch(f fields) {
	text := "*URL:* " + c.inline("url", f.str("url"), 1000)
	if p := f.str("prompt"); p != "" {
		text += "\n*Prompt:* " + c.oneLine("prompt", p, 1500)
	}
	c.add(section(text))
	c.extras(f, known{"url": jsonString, "prompt": jsonString})
}

func (c *card) webSearch(f fields) {
	c.add(section("*Query:* " + c.inline("query", f.str("query"), 1000)))
	c.extras(f, known{"query": jsonString})
}

// unknownKeys lists, sorted, the fields of f a card does not render itself.
func unknownKeys(f fields, k known) []string {
	var out []string
	for key, raw := range f {
		if t, ok := k[key]; !ok || jsonType(raw) != t {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// valueText shows a field's value: a string as its text, anything else as
// compact JSON.
func valueText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// extras lists the fields the card did not render itself (and any lines
// the caller collected) as "key: value" lines.
func (c *card) extras(f fields, k known, more ...string) {
	var lines []string
	for _, key := range unknownKeys(f, k) {
		lines = append(lines, key+": "+valueText(f[key]))
	}
	lines = append(lines, more...)
	if len(lines) == 0 {
		return
	}
	c.add(c.codeSection("*Other input:*", strings.Join(lines, "\n"), 20, 1500, pretty(c.req.Input), "input.json", "other input"))
}

// pathLabel repeats a file path under the headline only when the headline
// could not show it whole; it ends with " · " when not empty.
func (c *card) pathLabel(p string) string {
	if rel := relPath(p, c.sess.WorkDir); runes(rel) <= headRunes && !strings.Contains(rel, "\n") && rel == strings.TrimSpace(rel) {
		return ""
	}
	return "*File:* " + c.inline("file_path", p, 500) + " · "
}

// inline quotes one field as `code`, recording when the card shortened it.
func (c *card) inline(field, raw string, max int) string {
	if runes(raw) > max || strings.Contains(strings.TrimSpace(raw), "\n") {
		c.hide(field+": shortened", pretty(c.req.Input), "input.json")
	}
	return inlineCode(raw, max)
}

// oneLine quotes prose from the input on one line, recording when the card
// shortened it.
func (c *card) oneLine(field, raw string, max int) string {
	line := oneLine(raw)
	if runes(line) > max {
		c.hide(field+": shortened", pretty(c.req.Input), "input.json")
	}
	return codeSafe(cutShown(line, max))
}

func (c *card) plan(f fields) {
	plan := f.str("plan")
	k := known{"plan": jsonString, "planFilePath": jsonString}
	defer c.extras(f, k)
	// A plan of only markup ("# ") renders as nothing Slack would take.
	if md := Markdown(plan); strings.TrimSpace(md) == "" {
		c.add(section("_Claude wants to leave plan mode and start working; it sent no plan text._"))
	} else {
		chunks := splitText(md, previewRunes/2)
		if len(chunks) > 1 && c.req.Decision == nil {
			// The first part, and the note, above Slack's "Show more".
			what := plural(approxLines(chunks[1:len(chunks)-1]), "line")
			c.hide("plan: "+what+" hidden", plan, "plan.md")
			tight := func(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n\n", "\n") }
			chunks = []string{tight(chunks[0]) + "\n_… " + what + " hidden … (" + c.whereFull() + ")_\n" + tight(chunks[len(chunks)-1])}
		}
		for _, ch := range chunks {
			c.add(section(ch))
		}
	}
	if p := f.str("planFilePath"); p != "" {
		c.said = "Plan file " + c.inline("planFilePath", p, 500)
	}
}

func (c *card) questions(f fields) {
	if server, _, ok := mcpName(c.req.ToolName); ok {
		c.add(slack.NewContextBlock("", mrkdwn("Asked through MCP server "+inlineCode(server, 200)+
			" (tool "+inlineCode(c.req.ToolName, 300)+"), not Claude Code's own question tool")))
	}
	qs := questions(c.req)
	if len(qs) == 0 {
		full := pretty(c.req.Input)
		c.add(c.codeSection("", full, codeLines, codeRunes, full, "input.json", "input"))
		return
	}
	pending := c.req.Decision == nil
	if pending && formOnly(qs) {
		var b strings.Builder
		for i, q := range qs {
			line := "*" + strconv.Itoa(i+1) + ".* " + codeSafe(cutShown(oneLine(q.Question), 300))
			if q.Header != "" {
				line = "*" + strconv.Itoa(i+1) + ". " + codeSafe(cutShown(oneLine(q.Header), 60)) + ":* " + codeSafe(cutShown(oneLine(q.Question), 300))
			}
			b.WriteString(line + " _(" + plural(len(q.Options), "option") + ")_\n")
		}
		c.add(section(cutSafe(strings.TrimSuffix(b.String(), "\n"), MaxText)))
		c.extras(f, known{"questions": jsonArray})
		return
	}
	for i, q := range qs {
		if len(qs) > 1 || q.MultiSelect || q.Question != oneLine(q.Question) || runes(q.Question) > 200 {
			c.add(section(questionText(q))) // one short question is the headline already
		}
		switch {
		case !pending:
		case oneTap(qs):
			if list := optionList(q); list != "" {
				c.add(section(list))
			}
		case len(q.Options) > 0:
			c.add(slack.NewActionBlock(questionBlockID(i, c.req.ID), picker(q)))
		}
	}
	c.extras(f, known{"questions": jsonArray})
}
