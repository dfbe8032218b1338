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
	maxButtons   = 10   // "Approve and allow" options offered
	// A pending card's preview of a long input stays within what Slack's
	// app shows before "Show more" (about 700 characters), so the note on
	// what is hidden is seen, and Approve stays on a phone's first screen.
	previewLines = 12
	previewRunes = 560
)

// CardOptions are what the bot knows about a card beyond the request.
type CardOptions struct {
	// AttachmentFailed: the bot could not upload Message.FullInput to the
	// thread. The card then says the full input is not there, and the
	// Approve confirmation says so too.
	AttachmentFailed bool
	// Needs, when it asks for several approvals, makes a pending card show
	// how many it has of how many and from whom, show the first
	// approver's edit as the input, and offer only Approve and Deny (and
	// Edit & approve to the first): an "Always allow" would let the next
	// such request through on one person's word.
	Needs Needs
	// AskRule names the team policy's ask rule that is why the card asks
	// (the pending card says so beside the CLI's own reason).
	AskRule string
	// SessionRule, when set, says whether the menu may offer a
	// suggestion as Claude Code's own session rule (the bot withholds one
	// the team policy's deny or ask rules could meet); its grants are
	// offered either way. Nil offers every one.
	SessionRule func(store.Suggestion) bool
	// NoGrants: slackgate's grants would never apply to this request (a
	// policy rule matches it, and a grant stands in only where none
	// does), so "Approve and allow…" does not offer them.
	NoGrants bool
}

// Card renders a request as its Slack card: pending (with buttons) while
// r.Decision is nil, final (outcome, who, when; no buttons) once it is set.
// s is the request's session, for the context line and the mention.
//
// A pending card's first line (also Message.Text, mentioning s.StartedBy)
// says what Claude wants (for a compound command its weightiest step; a
// leading `cd <s.WorkDir>` is implied), the project (s.WorkDir's base
// name) and for whom, and for several approvers what is left (progress);
// then the input once, one context line, Approve and Deny side by side
// with Edit & approve, the menu "Approve and allow…", whose options name
// each suggestion's rules and what they do (its second step, AllowModal,
// lists them whole), and under the buttons when it was reminded or
// escalated. A long input shows its head and tail with how many lines
// are hidden; Message.FullInput holds the whole, to upload as
// Message.FullInputName, and Approve, Approve plan and the scopes of
// "Approve and allow…" confirm first, saying what is hidden. Three or more questions are answered in the
// answer modal (ModalFor). A settled card leads with the outcome, who and
// when and what ran: the applied input, Decision.UpdatedInput when edited
// (outcomeWith has one case per store.Outcome).
func Card(r store.Request, s store.Session) Message { return CardWith(r, s, CardOptions{}) }

// CardWith is Card with options (the bot re-renders with
// AttachmentFailed when the full input could not be uploaded).
func CardWith(r store.Request, s store.Session, o CardOptions) Message {
	r = normalize(r)
	ed, isEdited := editor(r)
	isEdited = isEdited && r.Decision == nil
	asked := r.Input
	if isEdited {
		r.Input = ed.Input // what the approvals are of, and what runs
	}
	shown := r
	shown.Input = maskJSON(r.Input) // a private key spans lines: mask before clipping
	c := &card{req: shown, real: r, sess: s, opts: o}
	if isEdited {
		c.editor, c.asked = &ed, maskJSON(asked)
		// Only the command changed, and the diff holds all of it: the
		// diff stands for the command in the body (bash).
		_, changed, whole := editDiff(c.asked, shown.Input)
		c.diffShown = r.ToolName == "Bash" && whole && slices.Equal(changed, []string{"command"})
	}
	c.render()
	return c.msg
}

type card struct {
	req      store.Request // what the card shows: secrets masked
	real     store.Request // as stored: what decisions are made from
	sess     store.Session
	opts     CardOptions
	msg      Message
	hidden   []string // what the card left out, for the Approve confirmation
	full     string   // what FullInput holds when something is hidden
	fullName string
	flags    []string // warnings under the headline
	short    []string // the same warnings for the notification text
	said     string   // Claude's own words about the request, for the context line
	// editor is the first of several approvers when they edited the
	// input, and asked the input as Claude asked it (masked): the card
	// shows the edit against it.
	editor    *store.Approval
	asked     json.RawMessage
	diffShown bool // the body shows the edit as a diff of the command
}

func (c *card) render() {
	c.add(section(c.lead()))
	top := len(c.msg.Blocks)
	c.body()
	if c.editor != nil && !c.diffShown {
		d, _, _ := editDiff(c.asked, c.req.Input)
		c.add(c.codeSection(editedLabel(*c.editor), d, previewLines, previewRunes, pretty(c.req.Input), "input.json", "the change"))
	}
	if c.req.Decision != nil {
		// A settled card keeps only its lead: what the body would have
		// hidden still decides whether the thread holds the full input.
		c.msg.Blocks = c.msg.Blocks[:top]
		c.settledNote()
	} else if len(c.hidden) > 0 && c.opts.AttachmentFailed {
		c.add(slack.NewContextBlock("", mrkdwn(c.attachNote())))
	}
	c.add(c.context())
	if c.req.Decision == nil {
		c.controls()
		if n := reachNote(c.req); n != "" {
			// Notes of reminders and escalations go under the
			// buttons: however many, Approve and Deny stay put.
			c.add(slack.NewContextBlock("", mrkdwn(cutSafe(strings.TrimPrefix(n, " · "), MaxText))))
		}
		if len(c.hidden) > 0 {
			c.msg.FullInput = c.full
			c.msg.FullInputName = c.fullName
		}
	}
	c.warnings()
	if len(c.flags) > 0 {
		c.msg.Blocks = slices.Insert(c.msg.Blocks, top, slack.Block(section(strings.Join(c.flags, "\n"))))
	}
	c.msg.Text = c.fallback()
}

// lead is the card's first block: pending, what Claude wants (where, for
// whom); settled, the outcome and what ran.
func (c *card) lead() string {
	if c.req.Decision != nil {
		return cutSafe(outcomeWith(c.req, c.ran()), MaxText)
	}
	lead := c.headline() + c.where()
	if p := progress(c.req, c.opts.Needs, ""); p != "" {
		lead += "\n" + p
	}
	if c.diffShown {
		lead += "\n" + editedLabel(*c.editor)
	}
	return cutSafe(lead, MaxText)
}

// headline is what Claude wants in the session's terms.
func (c *card) headline() string {
	if c.req.Kind != store.KindTool {
		return headline(c.req)
	}
	a := toolAct(c.req, c.sess.WorkDir)
	return "Claude wants to " + a.verb + " " + a.object
}

// ran words, for a settled tool card, what was done (the input actually
// applied, edited or not) or what was not.
func (c *card) ran() string {
	d := c.req.Decision
	if c.req.Kind != store.KindTool {
		return ""
	}
	applied := c.req
	edited := d.Outcome == store.OutcomeAllow && len(d.UpdatedInput) > 0
	if edited {
		applied.Input = maskJSON(d.UpdatedInput)
	}
	a := toolAct(applied, c.sess.WorkDir)
	if withdrawnFor(d) {
		return a.object
	}
	if d.Outcome != store.OutcomeAllow {
		return "did not " + a.verb + " " + a.object
	}
	out := pastTense[a.verb] + " " + a.object
	if edited {
		out += " (input edited in Slack)"
	}
	return out
}

// ranWhole reports whether the settled lead shows an applied input whole:
// a one-line command of one step.
func (c *card) ranWhole(input json.RawMessage) bool {
	cmd := decodeInput(input).str("command")
	_, others := mainStep(cmd, c.sess.WorkDir)
	return c.req.ToolName == "Bash" && others == 0 && runes(cmd) <= headRunes && !strings.Contains(strings.TrimSpace(cmd), "\n")
}

// settledNote says where the whole input is once the card shows only its
// summary: in the thread when the pending card attached it.
func (c *card) settledNote() {
	if c.req.Kind == store.KindQuestion {
		return
	}
	note := ""
	switch {
	case len(c.hidden) > 0 && !c.opts.AttachmentFailed:
		note = "Full input in the thread."
	case len(c.hidden) > 0:
		note = "⚠️ The full input could not be attached to the thread."
	}
	if d := c.req.Decision; d.Outcome == store.OutcomeAllow && len(d.UpdatedInput) > 0 && !c.ranWhole(d.UpdatedInput) {
		// What ran is the edited input, and the lead shows only part of
		// it: it is the card's full input now. The thread's attachment,
		// if any, is the input as Claude asked.
		c.msg.FullInput, c.msg.FullInputName = pretty(maskJSON(d.UpdatedInput)), "edited-input.json"
		if note != "" {
			note = "The input as Claude asked it is in the thread."
		}
	}
	if note != "" {
		c.add(slack.NewContextBlock("", mrkdwn(note)))
	}
}

func (c *card) add(bs ...slack.Block) { c.msg.Blocks = append(c.msg.Blocks, bs...) }

func (c *card) flag(long, short string) {
	c.flags = append(c.flags, long)
	c.short = append(c.short, "⚠️ "+short)
}

// warnings adds the flags that depend on the whole rendered card: any
// invisible character the escaping path made visible, masked secrets.
func (c *card) warnings() {
	raw, _ := json.Marshal(c.msg.Blocks)
	shown := string(raw)
	if strings.Contains(shown, invisibleMark) || hasInvisible(c.real.ToolName) {
		c.flag("⚠️ *Contains invisible or bidirectional characters*: shown as "+invisibleMark+"…⟧ escapes; "+
			"they can make text read differently from what runs", "contains invisible or bidirectional characters")
	}
	if string(c.req.Input) != string(c.real.Input) ||
		(strings.Contains(shown, mask) && !strings.Contains(string(c.real.Input), mask)) {
		c.flags = append(c.flags, "🔒 Secrets in the input are masked on this card; Claude gets the input unchanged")
	}
}

// whereFull says, next to what a preview hides, where the rest is.
func (c *card) whereFull() string {
	if c.opts.AttachmentFailed {
		return "the full input could not be attached"
	}
	return "full input in the thread"
}

// attachNote says where the full input is.
func (c *card) attachNote() string {
	if c.opts.AttachmentFailed {
		return "⚠️ *Part of the input is not shown, and the full input could not be attached to the thread.*"
	}
	return "Part of the input is not shown here: the full input is attached in the thread."
}

func (c *card) fallback() string {
	t := c.headline()
	if c.req.Decision != nil {
		t = outcomeWord(c.req)
		if ran := c.ran(); ran != "" {
			t += ": " + ran
		}
	}
	if p := project(c.sess); p != "" {
		t += " in " + Escape(cutShown(p, 60))
	}
	if len(c.short) > 0 {
		t += " (" + strings.Join(c.short, ", ") + ")"
	}
	if c.sess.StartedBy != "" {
		t = starter(c.sess.StartedBy) + " " + t
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
	switch r.Kind {
	case store.KindPlan:
		return "📋 Claude has a plan for your approval"
	case store.KindElicitation:
		return elicitHeadline(elicitationOf(r))
	case store.KindQuestion:
		qs := questions(r)
		switch len(qs) {
		case 0:
			return "❓ Claude has a question"
		case 1:
			return "❓ Claude asks: *" + codeSafe(cutShown(oneLine(qs[0].Question), 200)) + "*"
		default:
			return fmt.Sprintf("❓ Claude has %d questions", len(qs))
		}
	}
	a := toolAct(r, "")
	return "Claude wants to " + a.verb + " " + a.object
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func mrkdwn(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.MarkdownType, s, false, false)
}

// plain is a plain_text object for slackgate's own words.
func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, true, false)
}

// plainInput is the one path input text takes into plain_text (button
// labels, menu options, confirmations): secrets masked, invisible
// characters made visible, then cut to max.
func plainInput(s string, max int) *slack.TextBlockObject {
	return plain(cut(visible(maskSecrets(s)), max))
}

func section(s string) *slack.SectionBlock {
	return slack.NewSectionBlock(mrkdwn(s), nil, nil)
}

// hide records that the card left something out; full is the text to
// attach. When two different parts are cut, the whole input is attached.
func (c *card) hide(what, full, name string) {
	c.hidden = append(c.hidden, what)
	switch {
	case c.full == "":
		c.full, c.fullName = full, name
	case c.full != full:
		c.full, c.fullName = pretty(c.req.Input), "input.json"
	}
}

// codeSection renders raw text as a code block within the budgets. When it
// does not fit, it shows the head and the tail with what is hidden between
// them. label (mrkdwn) goes above the fence; what names the part for the
// Approve confirmation.
func (c *card) codeSection(label, raw string, lines, runesMax int, full, name, what string) *slack.SectionBlock {
	budget := min(runesMax, MaxText-120-runes(label))
	cl := clip(raw, lines, budget)
	text := codeBlock(cl.head)
	if cl.hidden != "" {
		text += "\n_… " + cl.hidden + " … (" + c.whereFull() + ")_\n" + codeBlock(cl.tail)
		c.hide(what+": "+cl.hidden, full, name)
	}
	if label != "" {
		text = label + "\n" + text
	}
	return section(cutSafe(text, MaxText))
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

// sameEnds counts the elements a and b share at their start and, of the
// rest, at their end.
func sameEnds(a, b []string) (pre, suf int) {
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return pre, suf
}

// diff shows old → new as unified-style lines: the unchanged lines at both
// ends as context (at most 3), the rest as - and +.
func diff(old, new string) string { return diffContext(old, new, 3) }

// diffContext is diff with at most n unchanged lines at each end.
func diffContext(old, new string, n int) string {
	a, b := strings.Split(old, "\n"), strings.Split(new, "\n")
	pre, suf := sameEnds(a, b)
	var out []string
	for _, l := range a[max(0, pre-n):pre] {
		out = append(out, "  "+l)
	}
	for _, l := range a[pre : len(a)-suf] {
		out = append(out, "- "+l)
	}
	for _, l := range b[pre : len(b)-suf] {
		out = append(out, "+ "+l)
	}
	for _, l := range a[len(a)-suf : min(len(a), len(a)-suf+n)] {
		out = append(out, "  "+l)
	}
	return strings.Join(out, "\n")
}

func approxLines(chunks []string) int {
	n := 0
	for _, ch := range chunks {
		n += strings.Count(ch, "\n") + 1
	}
	return n
}

// questionText renders one question (header, text) for the card or the
// modal; its options are shown by the control that picks them.
func questionText(q question) string {
	var b strings.Builder
	if q.Header != "" {
		b.WriteString("*" + codeSafe(cutShown(oneLine(q.Header), 100)) + "*\n")
	}
	b.WriteString(codeSafe(cutShown(q.Question, 1000)))
	if q.MultiSelect {
		b.WriteString(" _(pick any)_")
	}
	if strings.TrimSpace(b.String()) == "" {
		return "_(Claude asked this without any question text.)_" // Slack refuses an empty section
	}
	return b.String()
}

// maxButtonLabel is the longest option label a one-tap button shows whole
// on a phone; longer ones are numbered, with the text above the buttons.
const maxButtonLabel = 24

// numbered reports whether a one-tap question's buttons are numbers.
func numbered(q question) bool {
	for _, o := range q.Options {
		if runes(oneLine(o.Label)) > maxButtonLabel {
			return true
		}
	}
	return false
}

// optionList is the text over a one-tap question's buttons: numbered
// options (label and description) when the buttons are numbers, else
// only the descriptions the buttons cannot carry.
func optionList(q question) string {
	var b strings.Builder
	num := numbered(q)
	for i, o := range q.Options {
		d := strings.TrimSpace(o.Description)
		var line string
		switch {
		case num:
			line = "*" + strconv.Itoa(i+1) + ".* " + codeSafe(cutShown(oneLine(o.Label), 200))
			if d != "" {
				line += " — _" + codeSafe(cutShown(oneLine(d), 200)) + "_"
			}
		case d != "":
			line = "*" + codeSafe(cutShown(oneLine(o.Label), 100)) + "*: " + codeSafe(cutShown(oneLine(d), 200))
		default:
			continue
		}
		if runes(b.String())+runes(line) > MaxText-100 {
			b.WriteString("\n…")
			break
		}
		if b.Len() > 0 {
			b.WriteString("\n")
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

// formOnly reports whether a question card is too long for pickers on a
// phone's first screen: it lists the questions and answers in the modal.
func formOnly(qs []question) bool { return len(qs) > 2 }

// oneTap reports whether the question card answers with one button per
// option: a single single-select question with few options.
func oneTap(qs []question) bool {
	return len(qs) == 1 && !qs[0].MultiSelect && len(qs[0].Options) > 0 && len(qs[0].Options) <= maxAnswerButtons
}

// picker is the menu for one question in a card (or modal): a select for
// single choice, checkboxes or a multi-select for several. picked (option
// indexes) start selected.
func picker(q question, picked ...int) slack.BlockElement {
	opts := make([]*slack.OptionBlockObject, len(q.Options))
	for i, o := range q.Options {
		var desc *slack.TextBlockObject
		if d := strings.TrimSpace(o.Description); d != "" {
			desc = plainInput(oneLine(d), MaxOptionText)
		}
		label := oneLine(o.Label)
		if strings.TrimSpace(label) == "" {
			label = "Option " + strconv.Itoa(i+1)
		}
		opts[i] = slack.NewOptionBlockObject(strconv.Itoa(i), plainInput(label, MaxOptionText), desc)
	}
	var initial []*slack.OptionBlockObject
	for _, i := range picked {
		if i >= 0 && i < len(opts) {
			initial = append(initial, opts[i])
		}
	}
	const pickAction = string(ActionPick)
	switch {
	case !q.MultiSelect:
		el := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Choose an answer"), pickAction, opts...)
		if len(initial) > 0 {
			el.InitialOption = initial[0]
		}
		return el
	case len(opts) <= MaxChoiceOpts:
		el := slack.NewCheckboxGroupsBlockElement(pickAction, opts...)
		el.InitialOptions = initial
		return el
	default:
		el := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, plain("Choose answers"), pickAction, opts...)
		el.InitialOptions = initial
		return el
	}
}

// suggestionLabel lists what a permission suggestion grants (its rules,
// mode or directories) in plain words; ok is false for suggestions that do
// not grant anything.
func suggestionLabel(s store.Suggestion) (string, bool) {
	names, _, ok := suggestionWords(s)
	return strings.Join(names, ", "), ok
}

// suggestionRules is suggestionLabel with each rule as code, for mrkdwn.
func suggestionRules(s store.Suggestion) (string, bool) {
	names, _, ok := suggestionWords(s)
	// A new slice: names may be the request's own (its directories), and
	// rendering must leave the request as it was.
	code := make([]string, len(names))
	for i, n := range names {
		code[i] = inlineCode(n, 1000)
	}
	return strings.Join(code, ", "), ok
}

// suggestionWords names what a suggestion grants and says what that does
// for the rest of the session.
func suggestionWords(s store.Suggestion) (names []string, does string, ok bool) {
	switch s.Type {
	case "addRules", "replaceRules":
		if s.Behavior != "" && s.Behavior != "allow" {
			return nil, "", false
		}
		for _, r := range s.Rules {
			names = append(names, r.String())
		}
		if len(names) == 0 {
			return nil, "", false
		}
		return names, rulesDo(s.Rules), true
	case "setMode":
		if s.Mode == "" || s.Mode == "default" || s.Mode == "plan" {
			return nil, "", false
		}
		does = "switches to " + s.Mode + " mode"
		switch s.Mode {
		case "acceptEdits":
			does = "file edits run without asking"
		case "bypassPermissions":
			does = "everything runs without asking"
		}
		return []string{s.Mode + " mode"}, does, true
	case "addDirectories":
		if len(s.Directories) == 0 {
			return nil, "", false
		}
		return s.Directories, "Claude may work in these directories too", true
	}
	return nil, "", false
}

// rulesDo says what allow rules do: a prefix rule's commands, a tool's use.
func rulesDo(rules []store.SuggestionRule) string {
	if len(rules) == 1 {
		r := rules[0]
		if p, ok := strings.CutSuffix(r.RuleContent, ":*"); ok && r.ToolName == "Bash" {
			return "commands starting “" + p + "” run without asking"
		}
		if r.RuleContent == "" {
			return r.ToolName + " runs without asking"
		}
	}
	return "what these rules match runs without asking"
}

// context is the small print, on one line: Claude's description, the
// session's directory, the subagent, why the CLI asked when that says more
// than "it needs approval", and what newer CLIs add.
func (c *card) context() slack.Block {
	var parts []string
	if c.said != "" && c.req.Decision == nil {
		parts = append(parts, c.said)
	}
	if c.sess.WorkDir != "" {
		parts = append(parts, inlineCode(c.sess.WorkDir, 300))
	}
	if c.req.AgentID != "" {
		parts = append(parts, "subagent "+inlineCode(c.req.AgentID, 60))
	}
	if why := c.why(); why != "" && c.req.Decision == nil {
		parts = append(parts, why)
	}
	if c.sess.StartedBy == "" && c.sess.ID != "" {
		parts = append(parts, "session "+inlineCode(short(c.sess.ID), 40)) // nobody to name: the id tells sessions apart
	}
	if about := c.about(); len(about) > 0 && c.req.Decision == nil {
		parts = append(parts, about...)
	}
	if n := reachNote(c.req); n != "" && c.req.Decision != nil {
		parts = append(parts, strings.TrimPrefix(n, " · ")) // pending: under the buttons (render)
	}
	return slack.NewContextBlock("", mrkdwn(cutSafe(orDash(strings.Join(parts, " · ")), MaxText)))
}

// generic are reasons that only say the request needs approval.
var generic = map[string]bool{"other": true, "mode": true, "subcommandResults": true}

// why is the CLI's reason for asking, when it says something.
func (c *card) why() string {
	var why []string
	switch r := c.req.DecisionReason; {
	case r != "" && !strings.HasPrefix(strings.ToLower(r), "this command requires approval"):
		why = append(why, "Reason: "+codeSafe(cutShown(oneLine(r), 800)))
	case r == "" && c.req.DecisionReasonType != "" && !generic[c.req.DecisionReasonType]:
		t := c.req.DecisionReasonType
		if words, ok := reasonTypes[t]; ok {
			t = words
		}
		why = append(why, "Reason: "+codeSafe(cutShown(oneLine(t), 200)))
	}
	if c.req.BlockedPath != "" {
		why = append(why, "Blocked path: "+inlineCode(c.req.BlockedPath, 800))
	}
	if c.opts.AskRule != "" {
		why = append(why, "The team policy "+AsksByRule(c.opts.AskRule))
	}
	return strings.Join(why, " · ")
}

// about is what the CLI says about the request beyond its input: the
// title and display name newer CLIs send, and a description the card does
// not already show.
func (c *card) about() []string {
	var out []string
	if t := strings.TrimSpace(c.req.Title); t != "" {
		out = append(out, "Title: "+codeSafe(cutShown(oneLine(t), 300)))
	}
	if n := c.req.DisplayName; n != "" && n != c.req.ToolName {
		out = append(out, "Display name "+inlineCode(n, 200)+" (tool "+inlineCode(c.req.ToolName, 200)+")")
	}
	if d := strings.TrimSpace(c.req.Description); d != "" && c.req.ToolName != "Bash" && !c.inInput(d) {
		out = append(out, "Description: "+codeSafe(cutShown(oneLine(d), 500)))
	}
	if m := c.req.MCPServer; m != "" {
		out = append(out, "MCP server "+inlineCode(m, 200))
	}
	return out
}

// inInput reports whether the card already shows s: it is one of the
// input's string fields or the base name of one.
func (c *card) inInput(s string) bool {
	f := decodeInput(c.req.Input)
	for key := range f {
		v := f.str(key)
		if v != "" && (v == s || baseName(v) == s) {
			return true
		}
	}
	return false
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

// spanWords says a wait in people's words: "8 hours", "1 hour 30
// minutes", "45 minutes", "30 seconds".
func spanWords(d time.Duration) string {
	if d < time.Minute-time.Second/2 {
		return plural(max(1, int(d.Round(time.Second)/time.Second)), "second")
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case h == 0:
		return plural(m, "minute")
	case m == 0:
		return plural(h, "hour")
	}
	return plural(h, "hour") + " " + plural(m, "minute")
}

// dateToken renders t so each reader sees their own time zone.
func dateToken(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04 UTC"))
}

func byWhom(d *store.Decision) string {
	switch {
	case len(d.Approvals) > 1:
		return " by " + mentions(d.Approvals)
	case d.Remembered != "":
		// Not the person's tap: their answer, remembered.
		return " from memory, remembered by <@" + d.By + ">"
	case d.By != "":
		return " by <@" + d.By + ">"
	}
	return ""
}

// outcomeWord is the one-word result for the text fallback.
func outcomeWord(r store.Request) string {
	d := r.Decision
	if w := elicitOutcomeWord(r); w != "" && r.Kind == store.KindElicitation {
		return w
	}
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

// withdrawnFor reports whether d withdrew a request for a reason it names,
// rather than by a person's Stop.
func withdrawnFor(d *store.Decision) bool {
	return d.Outcome == store.OutcomeCancelled && d.By == "" && d.Message != ""
}

// outcome is the settled card's lead without the summary of what ran.
func outcome(r store.Request) string { return outcomeWith(r, "") }

// outcomeWith is the settled card's lead: what happened, who, when, and (ran)
// what was done or not; then the details (rules added, answers, the
// reason given). One case per outcome.
func outcomeWith(r store.Request, ran string) string {
	d := r.Decision
	when := dateToken(d.At)
	word := outcomeWord(r)
	if withdrawnFor(d) {
		// Withdrawn for a reason (answered in the terminal, the hook
		// stopped waiting, Claude moved on): the reason is the news, and
		// whether the tool then ran is not slackgate's to know.
		lead := "↩️ *Cancelled* " + when + ": " + codeSafe(cutShown(oneLine(d.Message), 1000))
		if ran != "" {
			lead += " · " + ran
		}
		return lead
	}
	var b strings.Builder
	switch d.Outcome {
	case store.OutcomeAllow:
		fmt.Fprintf(&b, "✅ *%s*%s %s", word, byWhom(d), when)
	case store.OutcomeDeny:
		icon := "🚫"
		if r.Kind == store.KindPlan {
			icon = "📝"
		} else if d.Skipped {
			icon = "⏭️"
		}
		fmt.Fprintf(&b, "%s *%s*%s %s", icon, word, byWhom(d), when)
		if len(r.Approvals) > 0 {
			b.WriteString(" after " + mentions(r.Approvals) + " approved")
		}
	case store.OutcomeExpired:
		// People read how long it waited; d.Message is Claude's.
		in := "in time"
		if !r.CreatedAt.IsZero() && d.At.After(r.CreatedAt) {
			in = "within " + spanWords(d.At.Sub(r.CreatedAt))
		}
		fmt.Fprintf(&b, "⌛ *Expired* %s: nobody answered %s, so Claude was told no", when, in)
	case store.OutcomeCancelled:
		if d.By != "" { // a person's Stop made Claude withdraw it
			fmt.Fprintf(&b, "↩️ *Cancelled* %s: <@%s> stopped Claude's turn before anyone decided", when, d.By)
			break
		}
		fmt.Fprintf(&b, "↩️ *Cancelled* %s: Claude withdrew the request", when)
	case store.OutcomeEnded:
		fmt.Fprintf(&b, "⏹️ *Session ended* %s before anyone answered", when)
	case store.OutcomeRefused:
		fmt.Fprintf(&b, "🚫 *Refused* %s: a decision slackgate could not verify was written to the store; Claude was told no", when)
	default:
		fmt.Fprintf(&b, "*%s*%s %s", codeSafe(string(d.Outcome)), byWhom(d), when)
	}
	if ran != "" {
		b.WriteString(" · " + ran)
	}
	b.WriteString(outcomeDetails(r))
	return b.String()
}

// outcomeDetails are the lines under the outcome: the rules an approval
// added (as code), the answers, the reason or message given.
func outcomeDetails(r store.Request) string {
	d := r.Decision
	var b strings.Builder
	switch d.Outcome {
	case store.OutcomeAllow:
		b.WriteString(elicitDetails(r))
		for _, p := range d.Permissions {
			if rules, ok := suggestionRules(p); ok {
				b.WriteString("\n🔓 Allowed for the rest of this session: " + rules)
			}
		}
		for _, q := range answerOrder(r, d.Answers) {
			b.WriteString("\n• *" + codeSafe(cutShown(oneLine(q), 200)) + "* → " + codeSafe(cutShown(oneLine(d.Answers[q]), 500)))
		}
	case store.OutcomeDeny:
		if d.Interrupt {
			b.WriteString(" · Claude's turn was stopped")
		}
		if d.Message != "" && !d.Skipped {
			b.WriteString("\n> " + codeSafe(cutShown(oneLine(d.Message), 1500)))
		}
	default:
		// An expiry's message and a Stop's are Claude's words; the lead
		// says it for people.
		if d.Message != "" && d.Outcome != store.OutcomeExpired && !(d.Outcome == store.OutcomeCancelled && d.By != "") {
			b.WriteString("\n_" + codeSafe(cutShown(oneLine(d.Message), 1000)) + "_")
		}
		if d.Outcome == store.OutcomeEnded {
			// A request never outlives its process: say what is left to do.
			b.WriteString("\nNo answer reached Claude. A reply in this thread resumes the session.")
		}
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
