package blocks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Message is one Slack message: the text fallback (what notifications and
// screen readers show) and the blocks. FullInput is set when the card had to
// truncate something: the complete text, for the bot to upload as a file in
// the thread, named FullInputName.
type Message struct {
	Text          string
	Blocks        []slack.Block
	FullInput     string
	FullInputName string
}

// Budgets that keep a card well inside Slack's limits: a code section stays
// under the 3,000-character text limit with room for its fence and marker.
const (
	codeRunes    = 2600 // escaped characters of code in one section
	codeLines    = 60   // lines of code shown in one section
	headRunes    = 120  // the command or path quoted in the headline
	planSections = 3    // sections of plan text before truncating
	bodyChunk    = 2900 // one section of converted markdown
	maxEdits     = 5    // MultiEdit edits shown
	maxButtons   = 10   // "Always allow" buttons shown
)

// Card renders a request as its Slack card: pending (with buttons) while
// r.Decision is nil, final (outcome, who, when; no buttons) once it is set.
// s is the request's session, for the context line and the mention.
func Card(r store.Request, s store.Session) Message {
	c := &card{r: normalize(r), s: s}
	c.render()
	return c.msg
}

type card struct {
	r         store.Request
	s         store.Session
	msg       Message
	truncated bool
	full      string // what FullInput holds when truncated
	fullName  string
}

func (c *card) render() {
	head := headline(c.r)
	c.add(section(head))
	c.body()
	c.add(c.context())
	if c.r.Decision == nil {
		c.controls()
	} else {
		c.add(section(cutSafe(outcome(c.r), MaxText)))
	}
	if c.truncated {
		c.msg.FullInput = c.full
		c.msg.FullInputName = c.fullName
	}
	c.msg.Text = c.fallback(head)
}

func (c *card) add(bs ...slack.Block) { c.msg.Blocks = append(c.msg.Blocks, bs...) }

func (c *card) fallback(head string) string {
	t := head
	if c.r.Decision != nil {
		t = outcomeWord(c.r) + ": " + head
	}
	if c.s.StartedBy != "" {
		t = "<@" + c.s.StartedBy + "> " + t
	}
	return cutSafe(t, 1000)
}

// toolHeadlines says, for the built-in tools, what Claude wants to do and
// which input field names the thing it wants to do it to.
var toolHeadlines = map[string]struct{ verb, field string }{
	"Bash":         {"run", "command"},
	"Write":        {"write", "file_path"},
	"Edit":         {"edit", "file_path"},
	"MultiEdit":    {"edit", "file_path"},
	"NotebookEdit": {"edit", "notebook_path"},
	"Read":         {"read", "file_path"},
	"Glob":         {"search for", "pattern"},
	"Grep":         {"search for", "pattern"},
	"WebFetch":     {"fetch", "url"},
	"WebSearch":    {"search the web for", "query"},
}

// headline is the first line: what Claude wants, in words a phone
// notification can show.
func headline(r store.Request) string {
	r = normalize(r)
	f := decodeInput(r.Input)
	code := func(key string) string { return inlineCode(f.str(key), headRunes) }
	switch r.Kind {
	case store.KindPlan:
		return "📋 Claude has a plan for your approval"
	case store.KindQuestion:
		qs := questions(r)
		switch len(qs) {
		case 0:
			return "❓ Claude has a question"
		case 1:
			return "❓ Claude asks: *" + codeSafe(cut(oneLine(qs[0].Question), 200)) + "*"
		default:
			return fmt.Sprintf("❓ Claude has %d questions", len(qs))
		}
	}
	if h, ok := toolHeadlines[r.ToolName]; ok {
		return "Claude wants to " + h.verb + " " + code(h.field)
	}
	if server, tool, ok := mcpName(r.ToolName); ok {
		return "Claude wants to use " + inlineCode(tool, headRunes) + " from MCP server " + inlineCode(server, headRunes)
	}
	name := r.ToolName
	if r.DisplayName != "" {
		name = r.DisplayName
	}
	return "Claude wants to use " + inlineCode(name, headRunes)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

func section(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(s), nil, nil)
}

// truncate records that the card cut something; full is the whole text for
// the attachment.
func (c *card) truncate(full, name string) {
	if !c.truncated {
		c.truncated, c.full, c.fullName = true, full, name
	}
}

// codeSection renders raw text as a code block within the budgets, with a
// visible marker when it had to cut. label (mrkdwn) goes above the fence.
func (c *card) codeSection(label, raw string, lines, runesMax int, full, name string) *slack.SectionBlock {
	kept, marker := clip(raw, lines, runesMax)
	text := codeBlock(kept)
	if label != "" {
		text = label + "\n" + text
	}
	if marker != "" {
		text += "\n_" + marker + attachedNote + "_"
		c.truncate(full, name)
	}
	return section(text)
}

func (c *card) body() {
	r := c.r
	f := decodeInput(r.Input)
	fullJSON := pretty(r.Input)
	switch r.Kind {
	case store.KindPlan:
		c.plan(f.str("plan"))
		if p := f.str("planFilePath"); p != "" {
			c.add(slack.NewContextBlock("", mrkdwn("Plan file on the worker: "+inlineCode(p, 500))))
		}
		return
	case store.KindQuestion:
		c.questions()
		return
	}
	switch r.ToolName {
	case "Bash":
		c.add(c.codeSection("", f.str("command"), codeLines, codeRunes, f.str("command"), "command.sh"))
		desc := f.str("description")
		if desc == "" && r.Description != f.str("command") {
			desc = r.Description
		}
		if strings.TrimSpace(desc) != "" {
			c.add(section("_" + codeSafe(cut(oneLine(desc), 500)) + "_"))
		}
	case "Write":
		content := f.str("content")
		lines := strings.Count(content, "\n")
		if content != "" && !strings.HasSuffix(content, "\n") {
			lines++
		}
		label := fmt.Sprintf("*File:* %s · %s · %s", inlineCode(f.str("file_path"), 500),
			plural(lines, "line"), size(len(content)))
		c.add(c.codeSection(label, strings.TrimSuffix(content, "\n"), 30, codeRunes, content, baseName(f.str("file_path"))))
	case "Edit":
		label := "*File:* " + inlineCode(f.str("file_path"), 500)
		var all bool
		_ = json.Unmarshal(f["replace_all"], &all)
		if all {
			label += " · replace all"
		}
		c.add(c.codeSection(label, diff(f.str("old_string"), f.str("new_string")), codeLines, codeRunes, fullJSON, "input.json"))
	case "MultiEdit":
		c.add(section("*File:* " + inlineCode(f.str("file_path"), 500)))
		var edits []struct {
			Old string `json:"old_string"`
			New string `json:"new_string"`
		}
		_ = json.Unmarshal(f["edits"], &edits)
		for i, e := range edits {
			if i == maxEdits {
				c.add(section(fmt.Sprintf("_… %s more edits%s_", thousands(len(edits)-i), attachedNote)))
				c.truncate(fullJSON, "input.json")
				break
			}
			c.add(c.codeSection(fmt.Sprintf("Edit %d of %d", i+1, len(edits)), diff(e.Old, e.New), 25, 1200, fullJSON, "input.json"))
		}
	case "Read":
		text := "*File:* " + inlineCode(f.str("file_path"), 500)
		if f.has("offset") || f.has("limit") {
			text += fmt.Sprintf(" · offset %s, limit %s", numOr(f["offset"], "0"), numOr(f["limit"], "all"))
		}
		c.add(section(text))
	case "Glob", "Grep":
		text := "*Pattern:* " + inlineCode(f.str("pattern"), 500)
		if p := f.str("path"); p != "" {
			text += "\n*In:* " + inlineCode(p, 500)
		}
		if g := f.str("glob"); g != "" {
			text += "\n*Files:* " + inlineCode(g, 500)
		}
		c.add(section(text))
	case "WebFetch":
		text := "*URL:* " + inlineCode(f.str("url"), 1000)
		if p := f.str("prompt"); p != "" {
			text += "\n*Prompt:* " + codeSafe(cut(oneLine(p), 1500))
		}
		c.add(section(text))
	case "WebSearch":
		c.add(section("*Query:* " + inlineCode(f.str("query"), 1000)))
	default:
		label := ""
		if server, tool, ok := mcpName(r.ToolName); ok {
			label = "*Server:* " + inlineCode(server, 200) + " · *Tool:* " + inlineCode(tool, 200) + "\n*Arguments:*"
		}
		c.add(c.codeSection(label, fullJSON, codeLines, codeRunes, fullJSON, "input.json"))
	}
}

func numOr(raw json.RawMessage, dflt string) string {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil || n == "" {
		return dflt
	}
	return n.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return thousands(n) + " " + unit + "s"
}

func size(n int) string {
	switch {
	case n < 1024:
		return plural(n, "byte")
	case n < 1024*1024:
		return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB"
	}
	return strconv.FormatFloat(float64(n)/(1024*1024), 'f', 1, 64) + " MB"
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, "/\\"); i >= 0 {
		p = p[i+1:]
	}
	if p == "" {
		return "content.txt"
	}
	return p
}

// diff shows old → new as unified-style lines: the unchanged lines at both
// ends as context (at most 3), the rest as - and +.
func diff(old, new string) string {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []string
	for _, l := range a[max(0, pre-3):pre] {
		out = append(out, "  "+l)
	}
	for _, l := range a[pre : len(a)-suf] {
		out = append(out, "- "+l)
	}
	for _, l := range b[pre : len(b)-suf] {
		out = append(out, "+ "+l)
	}
	for _, l := range a[len(a)-suf : min(len(a), len(a)-suf+3)] {
		out = append(out, "  "+l)
	}
	return strings.Join(out, "\n")
}

func (c *card) plan(plan string) {
	if strings.TrimSpace(plan) == "" {
		c.add(section("_Claude wants to leave plan mode and start working; it sent no plan text._"))
		return
	}
	chunks := splitText(Markdown(plan), bodyChunk)
	if len(chunks) > planSections {
		chunks = chunks[:planSections]
		left := strings.Count(plan, "\n") + 1 - approxLines(chunks)
		chunks[planSections-1] += fmt.Sprintf("\n_… %s more lines%s_", thousands(max(left, 1)), attachedNote)
		c.truncate(plan, "plan.md")
	}
	for _, ch := range chunks {
		c.add(section(ch))
	}
}

func approxLines(chunks []string) int {
	n := 0
	for _, ch := range chunks {
		n += strings.Count(ch, "\n") + 1
	}
	return n
}

// questionText renders one question with its options for the card.
func questionText(q question) string {
	var b strings.Builder
	if q.Header != "" {
		b.WriteString("*" + codeSafe(cut(oneLine(q.Header), 100)) + "*\n")
	}
	b.WriteString(codeSafe(cut(q.Question, 1000)))
	if q.MultiSelect {
		b.WriteString(" _(pick any)_")
	}
	for _, o := range q.Options {
		line := "\n• *" + codeSafe(cut(oneLine(o.Label), 100)) + "*"
		if d := strings.TrimSpace(o.Description); d != "" {
			line += " — " + codeSafe(cut(oneLine(d), 200))
		}
		if runes(b.String())+runes(line) > MaxText-100 {
			b.WriteString("\n…")
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func allHaveOptions(qs []question) bool {
	for _, q := range qs {
		if len(q.Options) == 0 {
			return false
		}
	}
	return true
}

// oneTap reports whether the question card answers with one button per
// option: a single single-select question with few options.
func oneTap(qs []question) bool {
	return len(qs) == 1 && !qs[0].MultiSelect && len(qs[0].Options) > 0 && len(qs[0].Options) <= maxAnswerButtons
}

func (c *card) questions() {
	qs := questions(c.r)
	if len(qs) == 0 {
		c.add(c.codeSection("", pretty(c.r.Input), codeLines, codeRunes, pretty(c.r.Input), "input.json"))
		return
	}
	pending := c.r.Decision == nil
	for i, q := range qs {
		c.add(section(questionText(q)))
		if pending && !oneTap(qs) && len(q.Options) > 0 {
			c.add(slack.NewActionBlock(questionBlockID(i, c.r.ID), picker(q)))
		}
	}
}

// picker is the menu for one question in a card (or modal): a select for
// single choice, checkboxes or a multi-select for several.
func picker(q question) slack.BlockElement {
	opts := make([]*slack.OptionBlockObject, len(q.Options))
	for i, o := range q.Options {
		var desc *slack.TextBlockObject
		if d := strings.TrimSpace(o.Description); d != "" {
			desc = plain(cut(oneLine(d), MaxOptionText))
		}
		label := cut(oneLine(o.Label), MaxOptionText)
		if strings.TrimSpace(label) == "" {
			label = "Option " + strconv.Itoa(i+1)
		}
		opts[i] = slack.NewOptionBlockObject(strconv.Itoa(i), plain(label), desc)
	}
	const pickAction = string(ActionPick)
	switch {
	case !q.MultiSelect:
		return slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose an answer"), pickAction, opts...)
	case len(opts) <= MaxChoiceOpts:
		return slack.NewCheckboxGroupsBlockElement(pickAction, opts...)
	default:
		return slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose answers"), pickAction, opts...)
	}
}

func button(id, label, val string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(id, val, plain(cut(label, MaxButtonText)))
}

func (c *card) controls() {
	r := c.r
	v := func(q, o int) string { return value(q, o, r.ID) }
	var els []slack.BlockElement
	switch r.Kind {
	case store.KindPlan:
		els = append(els,
			button(string(ActionApprove), "Approve plan", v(0, 0)).WithStyle(slack.StylePrimary),
			button(string(ActionDeny), "Keep planning", v(0, 0)))
	case store.KindQuestion:
		qs := questions(r)
		if oneTap(qs) {
			for o, opt := range qs[0].Options {
				label := oneLine(opt.Label)
				if label == "" {
					label = "Option " + strconv.Itoa(o+1)
				}
				els = append(els, button(actionID(ActionAnswer, o), label, v(0, o)))
			}
		} else if len(qs) > 0 && allHaveOptions(qs) {
			els = append(els, button(string(ActionSubmit), "Submit answers", v(0, 0)).WithStyle(slack.StylePrimary))
		}
		other := "Other…"
		if !allHaveOptions(qs) {
			other = "Answer…" // free-text questions are answered in the modal
		}
		els = append(els,
			button(string(ActionOther), other, v(0, 0)),
			button(string(ActionSkip), "Skip", v(0, 0)))
	default:
		els = append(els, button(string(ActionApprove), "Approve", v(0, 0)).WithStyle(slack.StylePrimary))
		shown := 0
		for i, s := range r.Suggestions {
			label, ok := suggestionLabel(s)
			if !ok || shown == maxButtons {
				continue
			}
			els = append(els, button(actionID(ActionAlways, i), label, v(0, i)))
			shown++
		}
		if Editable(r) {
			els = append(els, button(string(ActionEdit), "Edit & approve", v(0, 0)))
		}
		els = append(els, button(string(ActionDeny), "Deny", v(0, 0)).WithStyle(slack.StyleDanger))
	}
	c.add(slack.NewActionBlock(blockActions, els...))
}

// suggestionLabel words a permission suggestion as an "Always allow" button;
// ok is false for suggestions that do not grant anything.
func suggestionLabel(s store.Suggestion) (string, bool) {
	switch s.Type {
	case "addRules", "replaceRules":
		if s.Behavior != "" && s.Behavior != "allow" {
			return "", false
		}
		var rules []string
		for _, r := range s.Rules {
			rules = append(rules, ruleString(r))
		}
		if len(rules) == 0 {
			return "", false
		}
		return "Always allow " + strings.Join(rules, ", "), true
	case "setMode":
		if s.Mode == "" || s.Mode == "default" || s.Mode == "plan" {
			return "", false
		}
		return "Always allow: " + s.Mode + " mode", true
	case "addDirectories":
		if len(s.Directories) == 0 {
			return "", false
		}
		return "Always allow access to " + strings.Join(s.Directories, ", "), true
	}
	return "", false
}

func ruleString(r store.SuggestionRule) string {
	if r.RuleContent == "" {
		return r.ToolName
	}
	return r.ToolName + "(" + r.RuleContent + ")"
}

// context is the small print: session, directory, who started it, why the
// CLI asked.
func (c *card) context() slack.Block {
	parts := []string{}
	if c.s.ID != "" {
		parts = append(parts, "Session "+inlineCode(short(c.s.ID), 40))
	}
	if c.s.WorkDir != "" {
		parts = append(parts, "in "+inlineCode(c.s.WorkDir, 300))
	}
	if c.s.StartedBy != "" {
		parts = append(parts, "started by <@"+c.s.StartedBy+">")
	}
	if c.r.AgentID != "" {
		parts = append(parts, "subagent "+inlineCode(c.r.AgentID, 60))
	}
	els := []slack.MixedElement{mrkdwn(orDash(strings.Join(parts, " · ")))}
	var why []string
	if c.r.DecisionReason != "" {
		why = append(why, "Reason: "+codeSafe(cut(oneLine(c.r.DecisionReason), 800)))
	} else if t := c.r.DecisionReasonType; t != "" {
		if words, ok := reasonTypes[t]; ok {
			t = words
		}
		why = append(why, "Reason: "+codeSafe(cut(oneLine(t), 200)))
	}
	if c.r.BlockedPath != "" {
		why = append(why, "Blocked path: "+inlineCode(c.r.BlockedPath, 800))
	}
	if len(why) > 0 {
		els = append(els, mrkdwn(strings.Join(why, " · ")))
	}
	return slack.NewContextBlock("", els...)
}

// reasonTypes words the CLI's decision_reason_type for when it sends no
// decision_reason (2.1.330 sends only the type for compound Bash commands).
var reasonTypes = map[string]string{
	"rule":              "a permission rule asks for approval",
	"mode":              "the permission mode asks for approval",
	"subcommandResults": "part of the command needs approval",
	"workingDir":        "the path is outside the allowed directories",
	"hook":              "a hook asked for approval",
	"classifier":        "the safety classifier flagged it",
	"safetyCheck":       "a safety check flagged it",
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// dateToken renders t so each reader sees their own time zone.
func dateToken(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

func byWhom(d *store.Decision) string {
	if d.By != "" {
		return " by <@" + d.By + ">"
	}
	return ""
}

// outcomeWord is the one-word result for the text fallback.
func outcomeWord(r store.Request) string {
	d := r.Decision
	switch d.Outcome {
	case store.OutcomeAllow:
		switch r.Kind {
		case store.KindQuestion:
			return "Answered"
		case store.KindPlan:
			return "Plan approved"
		}
		return "Approved"
	case store.OutcomeDeny:
		switch {
		case r.Kind == store.KindPlan:
			return "Sent back to planning"
		case d.Skipped:
			return "Skipped"
		}
		return "Denied"
	case store.OutcomeExpired:
		return "Expired"
	case store.OutcomeCancelled:
		return "Cancelled"
	case store.OutcomeEnded:
		return "Session ended"
	case store.OutcomeRefused:
		return "Refused"
	}
	return "Settled"
}

// outcome is the final state's line: what happened, who, when and why.
func outcome(r store.Request) string {
	d := r.Decision
	when := dateToken(d.At)
	word := outcomeWord(r)
	var b strings.Builder
	switch d.Outcome {
	case store.OutcomeAllow:
		fmt.Fprintf(&b, "✅ *%s*%s %s", word, byWhom(d), when)
		if len(d.UpdatedInput) > 0 {
			b.WriteString(" with an edited input")
			if cmd := decodeInput(d.UpdatedInput).str("command"); r.ToolName == "Bash" && cmd != "" {
				b.WriteString(": " + inlineCode(cmd, 500))
			}
		}
		for _, p := range d.Permissions {
			if label, ok := suggestionLabel(p); ok {
				b.WriteString("\n🔓 " + codeSafe(label) + " — for this session")
			}
		}
		if len(d.Answers) > 0 {
			for _, q := range answerOrder(r, d.Answers) {
				b.WriteString("\n• *" + codeSafe(cut(oneLine(q), 200)) + "* → " + codeSafe(cut(oneLine(d.Answers[q]), 500)))
			}
		}
	case store.OutcomeDeny:
		icon := "🚫"
		if r.Kind == store.KindPlan {
			icon = "📝"
		} else if d.Skipped {
			icon = "⏭️"
		}
		fmt.Fprintf(&b, "%s *%s*%s %s", icon, word, byWhom(d), when)
		if d.Interrupt {
			b.WriteString(" · Claude's turn was stopped")
		}
		if d.Message != "" && !d.Skipped {
			b.WriteString("\n> " + codeSafe(cut(oneLine(d.Message), 1500)))
		}
	case store.OutcomeExpired:
		fmt.Fprintf(&b, "⌛ *Expired* %s: nobody answered in time, so Claude was told no", when)
	case store.OutcomeCancelled:
		// By is set when a person's Stop made Claude withdraw it.
		fmt.Fprintf(&b, "↩️ *Cancelled*%s %s: Claude withdrew the request", byWhom(d), when)
	case store.OutcomeEnded:
		fmt.Fprintf(&b, "⏹️ *Session ended* %s before anyone answered", when)
	case store.OutcomeRefused:
		fmt.Fprintf(&b, "🚫 *Refused* %s: a decision slackgate could not verify was written to the store; Claude was told no", when)
	default:
		fmt.Fprintf(&b, "*%s*%s %s", codeSafe(string(d.Outcome)), byWhom(d), when)
	}
	if d.Outcome != store.OutcomeAllow && d.Outcome != store.OutcomeDeny && d.Message != "" {
		b.WriteString("\n_" + codeSafe(cut(oneLine(d.Message), 1000)) + "_")
	}
	return b.String()
}

// answerOrder lists the answered questions in the order the request asked
// them, then any others sorted.
func answerOrder(r store.Request, answers map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, q := range questions(r) {
		if _, ok := answers[q.Question]; ok && !seen[q.Question] {
			out = append(out, q.Question)
			seen[q.Question] = true
		}
	}
	var rest []string
	for q := range answers {
		if !seen[q] {
			rest = append(rest, q)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}
