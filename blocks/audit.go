package blocks

import (
	"cmp"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// The audit channel (AUDIT_CHANNEL) shows the audit log one compact line
// per settled request and per refused record: the outcome, what it was
// about, who decided or what settled it, how long it waited, a link to its
// card and the entry's sequence number. Everything on a line comes from
// the store, which someone without the signing key may have written, so
// all of it is escaped, and a line names a person as the decider only when
// the bot checked that person's signed decision (AuditLine.Verified);
// otherwise it says whom the record claims. People are named, never
// mentioned: an audit line notifies nobody.

// AuditLinesPerMessage bounds the lines of one audit channel message: a
// backlog goes out several lines to a post, within the channel's budget.
const AuditLinesPerMessage = 10

// auditLineRunes bounds one line, far below a section's MaxText.
const auditLineRunes = 1200

// AuditLine is one audit entry as the audit channel shows it, with what
// the bot found out about it.
type AuditLine struct {
	Entry store.AuditEntry
	// Request is the entry's request as the store holds it now; nil when
	// the entry has none or it is gone (retention).
	Request *store.Request
	// WorkDir is the directory of the entry's session ("": unknown).
	WorkDir string
	// Verified: Request's decision is the one the entry records, and a
	// bot signed it. Only then is a person named as who decided.
	Verified bool
	// TeamURL is the workspace's URL (auth.test's url), which the link to
	// the card is built on; "" for no link.
	TeamURL string
}

// AuditShown reports whether the audit channel shows entries of action a:
// settlements, refusals and an operator's reset of the chain. Created requests, remembered and forgotten
// answers and reported tool runs are in the log, not in the channel.
func AuditShown(a store.AuditAction) bool {
	switch a {
	case store.AuditSettled, store.AuditAnsweredFromMemory, store.AuditRefused,
		store.AuditSessionRefused, store.AuditInputRefused, store.AuditAnswerRefused, store.AuditChainReset:
		return true
	}
	return false
}

// AuditLineMarker is the block_id of an entry's line: it names the entry
// by its place in the chain and its hash (its store id for an entry from
// before the chain), so a bot can find the lines it posted.
func AuditLineMarker(e store.AuditEntry) string {
	if e.Hash != "" {
		return Prefix + "audit." + strconv.FormatUint(e.Seq, 10) + "." + e.Hash[:min(16, len(e.Hash))]
	}
	return Prefix + "audit.id." + cut(e.ID, 200)
}

// ParseAuditLineMarker reads an entry's line's block_id back: the entry's
// seq and the first 16 hex digits of its hash. ok is false for any other
// block_id, a checkpoint's and an entry's from before the chain included.
func ParseAuditLineMarker(id string) (seq uint64, hashPrefix string, ok bool) {
	rest, found := strings.CutPrefix(id, Prefix+"audit.")
	n, h, two := strings.Cut(rest, ".")
	if !found || !two || len(h) != 16 || strings.Trim(h, "0123456789abcdef") != "" {
		return 0, "", false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || seq == 0 || strconv.FormatUint(seq, 10) != n {
		return 0, "", false
	}
	return seq, h, true
}

// AuditMessage renders lines (at most AuditLinesPerMessage are shown) as
// one message: a section per line, block_id its AuditLineMarker.
func AuditMessage(lines []AuditLine) Message {
	lines = lines[:min(len(lines), AuditLinesPerMessage)]
	var bs []slack.Block
	var text []string
	used := map[string]bool{}
	for i, l := range lines {
		line := cutSafe(auditLine(l), auditLineRunes)
		id := AuditLineMarker(l.Entry)
		if used[id] {
			// Two entries claiming one place in the chain (a store
			// written by hand): Slack refuses a message repeating a
			// block_id, and the line must still go out.
			id += "." + strconv.Itoa(i)
		}
		used[id] = true
		bs = append(bs, slack.NewSectionBlock(mrkdwn(line), nil, nil, slack.SectionBlockOptionBlockID(id)))
		text = append(text, line)
	}
	return Message{Text: cutSafe(strings.Join(text, "\n"), MaxUpdateText), Blocks: bs}
}

// auditLine is one line: what happened and who, what it was about, how
// long it waited, where, and the entry's sequence number.
func auditLine(l AuditLine) string {
	parts := []string{auditHead(l)}
	if what := auditWhat(l); what != "" {
		parts = append(parts, what)
	}
	if w := auditWaited(l); w != "" {
		parts = append(parts, w)
	}
	if link := auditLink(l); link != "" {
		parts = append(parts, link)
	}
	if l.Entry.Seq > 0 {
		parts = append(parts, "#"+strconv.FormatUint(l.Entry.Seq, 10))
	}
	return strings.Join(parts, " · ")
}

// auditHead is the outcome and who decided or what settled it.
func auditHead(l AuditLine) string {
	e := l.Entry
	why := auditWhy(e.Message)
	switch e.Action {
	case store.AuditRefused:
		return "🛑 *Refused a decision* in the name of " + auditWho(e.By, e.ByName) + why
	case store.AuditSessionRefused:
		return "🛑 *Refused to run a session* started in the name of " + auditWho(e.By, e.ByName) + why
	case store.AuditInputRefused:
		return "🛑 *Refused a message* sent in the name of " + auditWho(e.By, e.ByName) + why
	case store.AuditAnswerRefused:
		return "🛑 *Refused a remembered answer* (" + inlineCode(e.AnswerID, 80) + ") in the name of " + auditWho(e.By, e.ByName) + why
	case store.AuditChainReset:
		return "♻️ *Audit chain reset* by " + auditWho(e.By, e.ByName) + why
	}
	return auditSettled(l)
}

// auditSettled heads a settlement's line. A person's decision (allow or
// deny) names them only when verified; a system outcome names no one.
func auditSettled(l AuditLine) string {
	e := l.Entry
	person := e.Outcome == store.OutcomeAllow || e.Outcome == store.OutcomeDeny
	if person && !l.Verified {
		word := "approval"
		if e.Outcome == store.OutcomeDeny {
			word = "denial"
		}
		why := "no bot signed it, so no worker acts on it"
		if l.Request == nil {
			why = "the request is no longer in the store to check it"
		}
		return "⚠️ *Unverified " + word + "* in the name of " + auditWho(e.By, e.ByName) + ": " + why
	}
	r := auditRequest(l)
	d := r.Decision
	if e.Action == store.AuditAnsweredFromMemory {
		return "🧠 *Answered from memory* (" + inlineCode(e.AnswerID, 80) + ", remembered by " + auditWho(d.By, d.ByName) + ")"
	}
	switch d.Outcome {
	case store.OutcomeAllow, store.OutcomeDeny:
		if d.Rule != "" {
			return auditByRule(d)
		}
		icon := "✅"
		switch {
		case d.Outcome == store.OutcomeAllow:
		case r.Kind == store.KindPlan:
			icon = "📝"
		case d.Skipped:
			icon = "⏭️"
		default:
			icon = "🚫"
		}
		if d.Grant != "" {
			// A grant's run: the rule decided, not its author's tap.
			return "✅ *Allowed* by a rule " + auditWho(d.By, d.ByName) + " added (" + inlineCode(d.Grant, 80) + ")"
		}
		head := icon + " *" + outcomeWord(r) + "* by " + auditPeople(d.Approvals, d.By, d.ByName)
		if d.Outcome == store.OutcomeDeny && len(r.Approvals) > 0 {
			head += " after " + auditPeople(r.Approvals, "", "") + " approved"
		}
		if d.Outcome == store.OutcomeDeny && d.Message != "" && !d.Skipped {
			head += auditWhy(d.Message)
		}
		return head
	case store.OutcomeExpired:
		return "⌛ *Expired*: nobody answered in time"
	case store.OutcomeCancelled:
		return "↩️ *Cancelled*" + cmpNonEmpty(auditWhy(d.Message), ": Claude withdrew the request")
	case store.OutcomeEnded:
		return "⏹️ *Session ended* before anyone answered"
	case store.OutcomeRefused:
		return "🛑 *Refused*" + cmpNonEmpty(auditWhy(d.Message), ": a decision slackgate could not verify")
	}
	return "*" + codeSafe(cutShown(oneLine(string(d.Outcome)), 40)) + "*"
}

// auditByRule heads the line of a request a policy rule settled: the
// rule and the policy file's digest (its first 12 hex digits).
func auditByRule(d *store.Decision) string {
	digest := ""
	if d.PolicyDigest != "" {
		digest = " (policy " + inlineCode(d.PolicyDigest[:min(12, len(d.PolicyDigest))], 12) + ")"
	}
	if d.Outcome == store.OutcomeAllow {
		return "✅ *Allowed* by rule " + boldText(d.Rule, 100) + digest
	}
	return "⛔ *Denied* by rule " + boldText(d.Rule, 100) + digest + auditWhy(d.Message)
}

// auditRequest is the request as the line shows it: the store's, with the
// entry's settlement (a verified decision is the store's own; a system
// outcome's words are the entry's), or one made of the entry when the
// request is gone.
func auditRequest(l AuditLine) store.Request {
	e := l.Entry
	var r store.Request
	if l.Request != nil {
		r = *l.Request
	} else {
		r = store.Request{ID: e.RequestID, SessionID: e.SessionID, Kind: e.Kind, ToolCall: store.ToolCall{ToolName: e.Tool}}
	}
	if !l.Verified || r.Decision == nil {
		r.Decision = &store.Decision{Outcome: e.Outcome, By: e.By, ByName: e.ByName, At: e.At, Message: e.Message,
			Rule: e.Rule, PolicyDigest: e.PolicyDigest}
	}
	return r
}

// auditWho names a person (or an API token) without mentioning them: the
// name they had then, in bold, and their id.
func auditWho(id, name string) string {
	if client, ok := strings.CutPrefix(id, "api:"); ok {
		return "API token " + boldText(client, 64)
	}
	switch {
	case id == "" && name == "":
		return "*someone*"
	case name == "":
		return "*" + codeSafe(cutShown(oneLine(id), 40)) + "*"
	case id == "":
		return boldText(name, 80)
	}
	return boldText(name, 80) + " (" + codeSafe(cutShown(oneLine(id), 40)) + ")"
}

// auditPeople names everyone of as ("alice (U1) and bob (U2)"), or the
// one person id, name when as has fewer than two.
func auditPeople(as []store.Approval, id, name string) string {
	if len(as) < 2 && id != "" {
		return auditWho(id, name)
	}
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = auditWho(a.By, a.ByName)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// auditWhy is ": " and a short reason, escaped ("" for none).
func auditWhy(msg string) string {
	if strings.TrimSpace(msg) == "" {
		return ""
	}
	return ": _" + strings.ReplaceAll(codeSafe(cutShown(oneLine(msg), 300)), "_", "＿") + "_"
}

// auditWhat says what the request was about: for a tool, what ran (a
// verified approval) or what it asked to do; for the rest, its kind.
func auditWhat(l AuditLine) string {
	e := l.Entry
	if e.RequestID == "" {
		return ""
	}
	r := auditRequest(l)
	if l.Request == nil && e.Input != "" {
		// Gone from the store (retention): the entry says what it was.
		return "about " + inlineCode(e.Input, headRunes) + auditProject(cmp.Or(l.WorkDir, e.WorkDir))
	}
	if l.Request == nil || r.Kind != store.KindTool {
		return auditKind(r)
	}
	d := r.Decision
	applied := r.Input
	edited := l.Verified && d.Outcome == store.OutcomeAllow && len(d.UpdatedInput) > 0
	if edited {
		applied = maskJSON(d.UpdatedInput)
	}
	rr := r
	rr.Input = applied
	a := toolAct(rr, l.WorkDir)
	out := "to " + a.verb + " " + a.object
	if l.Verified && d.Outcome == store.OutcomeAllow && e.Action == store.AuditSettled {
		out = pastTense[a.verb] + " " + a.object
	}
	if edited {
		out += " (input edited in Slack)"
	}
	return out + auditProject(cmp.Or(l.WorkDir, e.WorkDir))
}

// auditProject is " in *project*" for a session's directory ("" for none).
func auditProject(workdir string) string {
	if p := project(store.Session{WorkDir: workdir}); p != "" {
		return " in *" + strings.ReplaceAll(Escape(cutShown(p, 60)), "*", "∗") + "*"
	}
	return ""
}

// auditKind words a request by its kind, for one that is not a tool's or
// whose input is gone.
func auditKind(r store.Request) string {
	switch r.Kind {
	case store.KindQuestion:
		if qs := questions(r); len(qs) == 1 {
			return "question " + boldText(qs[0].Question, 120)
		} else if len(qs) > 1 {
			return plural(len(qs), "question")
		}
		return "a question"
	case store.KindPlan:
		return "a plan"
	case store.KindElicitation:
		if s := elicitationOf(r).MCPServerName; s != "" {
			return "input for MCP server " + inlineCode(s, 60)
		}
		return "input for an MCP server"
	}
	if r.ToolName == "" {
		return ""
	}
	return "tool " + inlineCode(r.ToolName, 80)
}

// auditWaited is how long a settled request waited for its settlement.
func auditWaited(l AuditLine) string {
	if l.Request == nil || l.Request.CreatedAt.IsZero() || l.Entry.RequestID == "" {
		return ""
	}
	switch l.Entry.Action {
	case store.AuditSettled, store.AuditAnsweredFromMemory:
	default:
		return ""
	}
	d := l.Entry.At.Sub(l.Request.CreatedAt)
	if d < 0 {
		return ""
	}
	return "waited " + waitWords(d)
}

// waitWords is d in the two largest units that matter: 4s, 2m 13s,
// 1h 05m, 3d 4h.
func waitWords(d time.Duration) string {
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

// auditLink links the request's card, or the session's thread when there
// is no card (a refused session or message). The URL's & is written as an
// entity, as Slack writes it in message text.
func auditLink(l AuditLine) string {
	e := l.Entry
	if l.Request != nil && !l.Request.Card.IsZero() {
		if u, ok := Permalink(l.TeamURL, l.Request.Card, e.ThreadTS); ok {
			return "<" + strings.ReplaceAll(u, "&", "&amp;") + "|card>"
		}
	}
	if u, ok := Permalink(l.TeamURL, store.MessageRef{Channel: e.Channel, TS: e.ThreadTS}, ""); ok {
		return "<" + u + "|thread>"
	}
	return ""
}

// Permalink is the URL of message m (a reply in thread, when thread is set
// and differs from m's ts) in the workspace at teamURL: Slack's archives
// form, which opens the message in the client. ok is false when a part is
// not what Slack makes (an https URL, a channel id, a ts), so a record
// written to the store cannot smuggle markup or another host into a link.
func Permalink(teamURL string, m store.MessageRef, thread string) (string, bool) {
	u, err := url.Parse(teamURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(teamURL, "<>|\"' ") || !isSlackID(m.Channel) || !isSlackTS(m.TS) {
		return "", false
	}
	out := "https://" + u.Host + "/archives/" + m.Channel + "/p" + strings.Replace(m.TS, ".", "", 1)
	if thread != "" && thread != m.TS {
		if !isSlackTS(thread) {
			return "", false
		}
		out += "?thread_ts=" + thread + "&cid=" + m.Channel
	}
	return out, true
}

func isSlackID(s string) bool {
	if len(s) < 2 || len(s) > 40 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func isSlackTS(s string) bool {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || sec == "" || frac == "" || len(s) > 40 {
		return false
	}
	for _, p := range []string{sec, frac} {
		for i := range len(p) {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
		}
	}
	return true
}

// AuditAlarm is the audit channel's message when a bot stops sealing the
// audit log: why (escaped: it names entries a store writer may have
// written), and what an operator does about it.
func AuditAlarm(why string) Message {
	text := "🚨 *slackgate stopped sealing the audit log*: " + codeSafe(cutShown(oneLine(why), 600)) +
		"\nNothing is sealed until an operator has looked: `slackgate audit verify` says what changed, then " +
		"`slackgate audit reset -reason \"…\"` signs the acknowledgment and sealing goes on."
	return Message{Text: cutSafe(text, MaxUpdateText), Blocks: []slack.Block{slack.NewSectionBlock(mrkdwn(text), nil, nil)}}
}

// auditCheckpointMarker starts the block_id of a checkpoint's line.
const auditCheckpointMarker = Prefix + "audit.cp."

// AuditCheckpointMarker is the block_id of checkpoint cp's line: its seq
// and the start of its digest.
func AuditCheckpointMarker(cp store.AuditCheckpoint) string {
	return auditCheckpointMarker + strconv.FormatUint(cp.Seq, 10) + "." + store.AuditCheckpointDigest(cp)[:16]
}

// AuditCheckpointMessage is the audit channel's line for a checkpoint: in
// words, and the checkpoint itself in its text form
// (store.AuditCheckpointText), which `slackgate audit verify` reads back
// with ParseAuditCheckpointLine. Its parts are digits, hex, base64 and a
// time: nothing Slack would read as markup.
func AuditCheckpointMessage(cp store.AuditCheckpoint) Message {
	what := "🔏 *Sealed* the audit log up to #" + strconv.FormatUint(cp.Seq, 10)
	if cp.Reset {
		what = "♻️ *Reset* the audit log by an operator, sealing up to #" + strconv.FormatUint(cp.Seq, 10) +
			" (it supersedes the checkpoint at #" + strconv.FormatUint(cp.PrevSeq, 10) + ")"
		if cp.Unlinked {
			what += "; the log before it did not hold"
		}
	}
	text := what + " · `" + store.AuditCheckpointText(cp) + "`"
	return Message{Text: text, Blocks: []slack.Block{slack.NewSectionBlock(mrkdwn(text), nil, nil,
		slack.SectionBlockOptionBlockID(AuditCheckpointMarker(cp)))}}
}

// ParseAuditCheckpointLine reads a checkpoint back from its line's block:
// its block_id and its text. ok is false for any other block, and for one
// whose checkpoint does not match its block_id.
func ParseAuditCheckpointLine(blockID, text string) (cp store.AuditCheckpoint, ok bool) {
	if !strings.HasPrefix(blockID, auditCheckpointMarker) {
		return cp, false
	}
	_, rest, found := strings.Cut(text, "`")
	body, _, closed := strings.Cut(rest, "`")
	if !found || !closed {
		return cp, false
	}
	cp, err := store.ParseAuditCheckpointText(body)
	if err != nil || AuditCheckpointMarker(cp) != blockID {
		return store.AuditCheckpoint{}, false
	}
	return cp, true
}
