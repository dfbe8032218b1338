package blocks

import (
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
// settlements and refusals. Created requests, remembered and forgotten
// answers and reported tool runs are in the log, not in the channel.
func AuditShown(a store.AuditAction) bool {
	switch a {
	case store.AuditSettled, store.AuditAnsweredFromMemory, store.AuditRefused,
		store.AuditSessionRefused, store.AuditInputRefused, store.AuditAnswerRefused:
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
		head := icon + " *" + outcomeWord(r) + "* by " + auditWho(d.By, d.ByName)
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
	return "*" + codeSafe(cut(oneLine(string(d.Outcome)), 40)) + "*"
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
		r = store.Request{ID: e.RequestID, SessionID: e.SessionID, Kind: e.Kind, ToolName: e.Tool}
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
		return "*" + codeSafe(cut(oneLine(id), 40)) + "*"
	case id == "":
		return boldText(name, 80)
	}
	return boldText(name, 80) + " (" + codeSafe(cut(oneLine(id), 40)) + ")"
}

// auditWhy is ": " and a short reason, escaped ("" for none).
func auditWhy(msg string) string {
	if strings.TrimSpace(msg) == "" {
		return ""
	}
	return ": _" + strings.ReplaceAll(codeSafe(cut(oneLine(msg), 300)), "_", "＿") + "_"
}

// auditWhat says what the request was about: for a tool, what ran (a
// verified approval) or what it asked to do; for the rest, its kind.
func auditWhat(l AuditLine) string {
	e := l.Entry
	if e.RequestID == "" {
		return ""
	}
	r := auditRequest(l)
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
	if p := project(store.Session{WorkDir: l.WorkDir}); p != "" {
		out += " in *" + strings.ReplaceAll(Escape(cut(p, 60)), "*", "∗") + "*"
	}
	return out
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
		if s := elicitationOf(r).Server; s != "" {
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
