package blocks

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Reaching people beyond the card: an announcement (a compact copy of the
// card where an approver looks, with the same Approve and Deny), a
// reminder and an escalation line (each with the buttons too), the card's
// note of both, and the App Home's "Waiting for you". Each says what
// Claude wants where and for whom, and how far its approvals are
// (progress); each notification text leads with what a lock screen needs
// (notifyText).

// ReachOptions are what the bot knows about a copy beyond the request.
type ReachOptions struct {
	// CardLink is the card's permalink ("" for none).
	CardLink string
	// Escalated: the copy announces an escalation to its reader.
	Escalated bool
	// Needs is what the card needs of several approvers (see CardOptions).
	Needs Needs
	// Viewer is the one person who sees this copy (a DM's, an App Home
	// row's), "" for a channel's: once they approved, it says so and
	// offers no buttons.
	Viewer string
	// InThread: it goes in the card's own thread, which needs no channel
	// named.
	InThread bool
	// Deciders are who may decide the request (user and user group ids,
	// "*" for anyone who sees the card) before any escalation.
	Deciders []string
}

// longWait is the wait from which a pending card says until when it waits.
const longWait = time.Hour

// blockAnnounce is the block id of the buttons of a copy, a reminder, an
// escalation line and an App Home row: never a card's (OnCopy).
const blockAnnounce = Prefix + "announce"

// OnCopy reports whether the actions block blockID is a copy's (an
// announcement, a reminder, an escalation, an App Home row), whose
// buttons name a request as its card's do: the card is found by its own.
func OnCopy(blockID string) bool { return strings.HasPrefix(blockID, blockAnnounce) }

// Announcement renders a copy of r's card: what Claude wants, where and
// for whom, how far its approvals are, who may decide it, since when it
// waits (Slack keeps "… ago" current), whether it was reminded or
// escalated, and a link to the card; while pending, Approve and Deny for
// a tool call or plan (decided like the card's), a link only for a
// question or form, which are answered on the card. Approve confirms
// first unless the copy shows the whole input. Settled, it shows the
// card's outcome and no buttons. Reminders and escalation lines are
// copies too: edited, they read as this.
func Announcement(r store.Request, s store.Session, o ReachOptions) Message {
	return announce(r, s, o).message("")
}

// announced is a copy's parts, which the App Home lays out its own way.
type announced struct {
	lead, note, text string
	what             string // what Claude wants, where and for whom
	progress         string
	buttons          []slack.BlockElement
	settled          bool
	c                *card
	head             string // the copy's first words: 🔔, or a step taken
}

// message lays a copy out, its head replaced by head when one is given
// (a reminder's, an escalation's).
func (a announced) message(head string) Message {
	if a.settled {
		return Message{Text: a.text, Blocks: []slack.Block{section(a.lead)}}
	}
	lead := a.lead
	if head != "" {
		lead = cutSafe(head+strings.TrimPrefix(a.lead, a.head), MaxText)
	}
	bs := []slack.Block{section(lead), slack.NewContextBlock("", mrkdwn(a.note))}
	if len(a.buttons) > 0 {
		bs = append(bs, slack.NewActionBlock(blockAnnounce, a.buttons...))
	}
	return Message{Text: a.text, Blocks: bs}
}

func announce(r store.Request, s store.Session, o ReachOptions) announced {
	r = normalize(r)
	shown := r
	shown.Input = maskJSON(r.Input)
	c := &card{req: shown, real: r, sess: s, opts: CardOptions{Needs: o.Needs}}
	link := ""
	if o.CardLink != "" {
		link = " · " + linkTo(o.CardLink, "Open the card")
	}
	where := ""
	if isSlackID(s.Thread.Channel) && !isDMChannel(s.Thread.Channel) && !o.InThread {
		where = " in <#" + s.Thread.Channel + ">"
	}
	if r.Decision != nil {
		return announced{lead: cutSafe(outcomeWith(c.req, c.ran())+where+link, MaxText), text: c.fallback(), settled: true, c: c}
	}
	a := announced{what: c.headline() + c.where() + where, progress: progress(r, o.Needs, o.Viewer), c: c, head: "🔔 "}
	switch {
	case o.Escalated:
		a.head = "🚨 *Escalated to you:* "
	case !r.Reach.Escalated.IsZero():
		a.head = "🚨 *Escalated:* "
	case !r.Reach.Reminded.IsZero():
		a.head = "⏰ *Still waiting:* "
	}
	a.lead = a.head + a.what
	if a.progress != "" {
		a.lead += "\n" + a.progress
	}
	a.lead = cutSafe(a.lead, MaxText)
	a.note = cutSafe(whoDecides(r, o.Deciders)+askedWhen(r)+reachTimes(r, false)+link, MaxText)
	a.text = notifyText(c, o.Needs)
	if !approvedBy(r, o.Viewer) {
		a.buttons = announceButtons(c)
	}
	return a
}

// whoDecides says who may decide r: its deciders, and once escalated who
// it went to and that the first still can.
func whoDecides(r store.Request, deciders []string) string {
	first := Mentions(deciders)
	if r.Reach.Escalated.IsZero() {
		if first == "" {
			return ""
		}
		return first + " may decide it · "
	}
	s := "Escalated to " + orDash(Mentions(r.Reach.EscalatedTo)) + ", who may decide it now"
	if first != "" {
		s += "; " + first + " still can"
	}
	return s + " · "
}

// askedWhen says since when r waits; Slack keeps "… ago" current.
func askedWhen(r store.Request) string {
	return "asked <!date^" + fmt.Sprint(r.CreatedAt.Unix()) + "^{ago}|" + r.CreatedAt.UTC().Format("15:04 UTC") + ">"
}

// notifyText is the notification of a copy or reminder: what a lock
// screen shows, so it leads with the decision asked, what, the project,
// for whom and how far its approvals are: "Approve? `kubectl … set
// image` (+3) · payments · for <@U0LEE> · 1 of 2".
func notifyText(c *card, n Needs) string {
	parts := []string{briefWhat(c)}
	if p := project(c.sess); p != "" {
		parts = append(parts, Escape(cutShown(p, 60)))
	}
	if c.sess.StartedBy != "" {
		parts = append(parts, "for "+starter(c.sess.StartedBy))
	}
	if w := countWords(c.req, n); w != "" {
		parts = append(parts, w)
	}
	return cutSafe(strings.Join(parts, " · "), 1000)
}

// briefWhat is what a request asks in a few words: "Approve? `make
// deploy` (+3)", "Approve? edit `main.go`", "Approve the plan?",
// "Answer? …".
func briefWhat(c *card) string {
	switch c.req.Kind {
	case store.KindPlan:
		return "Approve the plan?"
	case store.KindQuestion, store.KindElicitation:
		return "Answer? " + strings.TrimPrefix(headline(c.req), "❓ ")
	}
	if c.req.ToolName != "Bash" {
		a := toolAct(c.req, c.sess.WorkDir)
		return "Approve? " + a.verb + " " + a.object
	}
	step, others := mainStep(decodeInput(c.req.Input).str("command"), c.sess.WorkDir)
	s := "Approve? " + inlineCode(brief(step), 60)
	if others > 0 {
		s += " (+" + strconv.Itoa(others) + ")"
	}
	return s
}

// brief is a command as a lock screen can show it: the program and the
// first words of it that are neither options nor their values
// ("kubectl … set image"); the command cut to 40 runes when it has none.
func brief(step string) string {
	words := strings.Fields(step)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		words = words[1:] // VAR=value prefixes
	}
	if len(words) == 0 {
		return cutWords(step, 40)
	}
	out := []string{words[0]}
	skipped, subs := false, 0
	for i := 1; i < len(words) && subs < 2; i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "-"):
			skipped = true
			if !strings.Contains(w, "=") && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
				i++ // its value
			}
			continue
		case !plainWord(w):
			i = len(words)
			continue
		}
		if skipped && subs == 0 {
			out = append(out, "…")
		}
		out = append(out, w)
		subs++
	}
	if subs == 0 {
		return cutWords(step, 40)
	}
	return strings.Join(out, " ")
}

// plainWord reports whether w reads as a subcommand: lower-case letters,
// digits, dots and dashes.
func plainWord(w string) bool {
	for i, r := range w {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_')) {
			return false
		}
	}
	return w != ""
}

// announceButtons are a pending copy's Approve and Deny: the card's own
// actions, so a click decides through the same pipeline. A question or
// form has none: its answer needs the card.
func announceButtons(c *card) []slack.BlockElement {
	v := value(0, 0, c.req.ID)
	approve, deny := "Approve", "Deny"
	switch c.req.Kind {
	case store.KindTool:
	case store.KindPlan:
		approve, deny = "Approve plan", "Keep planning"
	default:
		return nil
	}
	ok := button(string(ActionApprove), approve, v).WithStyle(slack.StylePrimary)
	if c.req.Kind != store.KindTool || !c.ranWhole(c.real.Input) {
		ok = ok.WithConfirm(confirm(approve+" without the card?", "This message shows only a summary. Open the card to read the whole request before approving it.", approve+" anyway", "Go back"))
	}
	no := button(string(ActionDeny), deny, v)
	if c.req.Kind == store.KindTool {
		no = no.WithStyle(slack.StyleDanger)
	}
	return []slack.BlockElement{ok, no}
}

// Reminder is what a still pending request sends, after the reminder
// time, to its card's thread and to each copy's reader: a copy (see
// Announcement) that leads with how long it has waited.
func Reminder(r store.Request, s store.Session, o ReachOptions, waited time.Duration) Message {
	a := announce(r, s, o)
	m := a.message("⏰ *Still waiting " + waitWords(waited) + ":* ")
	if !a.settled {
		m.Text = cutSafe("⏰ "+a.text+" · waiting "+waitWords(waited), 1000)
	}
	return m
}

// Escalation is the line in the card's thread when r is escalated (to
// r.Reach.EscalatedTo, who may now decide it too): a copy (see
// Announcement) that leads with how long nobody decided and says who it
// went to and that the first deciders still can.
func Escalation(r store.Request, s store.Session, o ReachOptions, waited time.Duration) Message {
	a := announce(r, s, o)
	m := a.message("🚨 *Nobody decided in " + waitWords(waited) + ":* ")
	if !a.settled {
		m.Text = cutSafe("🚨 "+a.text+" · escalated to "+orDash(Mentions(r.Reach.EscalatedTo)), 1000)
	}
	return m
}

// headlineShort names the request in a line: what Claude wants, its
// secrets masked like the card's.
func headlineShort(r store.Request) string {
	r = normalize(r)
	shown := r
	shown.Input = maskJSON(r.Input)
	c := &card{req: shown, real: r}
	return strings.TrimPrefix(c.headline(), "Claude wants to ")
}

// Mentions names people and user groups by their ids: <@U…>, <!subteam^S…>,
// "anyone" for "*". Ids that are not Slack ids are left out.
func Mentions(ids []string) string {
	var parts []string
	for _, id := range ids {
		switch {
		case id == "*":
			parts = append(parts, "anyone")
		case !isSlackID(id):
		case strings.HasPrefix(id, "S"):
			parts = append(parts, "<!subteam^"+id+">")
		default:
			parts = append(parts, "<@"+id+">")
		}
	}
	return strings.Join(parts, ", ")
}

// reachNote is what the card says of a request's reach: " · reminded
// 10:42 · escalated to @oncall 11:12", and until when a long wait lasts.
func reachNote(r store.Request) string { return reachTimes(r, true) }

// reachTimes is reachNote, naming whom it was escalated to when to.
func reachTimes(r store.Request, to bool) string {
	var parts []string
	if !r.Reach.Reminded.IsZero() {
		parts = append(parts, "reminded "+timeToken(r.Reach.Reminded))
	}
	switch {
	case r.Reach.Escalated.IsZero():
	case to:
		parts = append(parts, "escalated to "+orDash(Mentions(r.Reach.EscalatedTo))+" "+timeToken(r.Reach.Escalated))
	default:
		parts = append(parts, "escalated "+timeToken(r.Reach.Escalated))
	}
	if r.Decision == nil && !r.Deadline.IsZero() && r.Deadline.Sub(r.CreatedAt) > longWait {
		parts = append(parts, "waits until "+dateToken(r.Deadline))
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + strings.Join(parts, " · ")
}

// timeToken is t as the reader's local time of day.
func timeToken(t time.Time) string {
	return fmt.Sprintf("<!date^%d^{time}|%s>", t.Unix(), t.UTC().Format("15:04 UTC"))
}

// linkTo is a mrkdwn link to url (one Permalink made) labelled label,
// its & escaped as Slack's text wants.
func linkTo(url, label string) string {
	return "<" + strings.ReplaceAll(url, "&", "&amp;") + "|" + label + ">"
}

func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

// Waiting is one pending request in the App Home's "Waiting for you".
type Waiting struct {
	Request  store.Request
	Session  store.Session
	CardLink string
	Needs    Needs
}

// maxHomeWaiting bounds the requests "Waiting for you" lists (two blocks
// each): 27 blocks at most, beside the answers' 44 and the grants' 23,
// keep the tab inside Slack's 100.
const maxHomeWaiting = 12

// HomeWaiting is the App Home's first section for viewer: the pending
// requests they may decide, with how many in its header, in the order
// that triages them (homeOrder: escalated first, then by deadline; those
// they approved already last), one compact row each: what, where, for
// whom, how long it has waited, the progress phrase, a link to its card
// and Approve and Deny as on its copies. Past maxHomeWaiting, "N more"
// links to the oldest card not listed.
func HomeWaiting(viewer string, items []Waiting) []slack.Block {
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b Waiting) int { return homeOrder(viewer, a, b) })
	open := 0
	for _, w := range items {
		if !approvedBy(w.Request, viewer) {
			open++
		}
	}
	header := "Waiting for you"
	if open > 0 {
		header += " (" + strconv.Itoa(open) + ")"
	}
	bs := []slack.Block{slack.NewHeaderBlock(plain(header))}
	if len(items) == 0 {
		return append(bs, section("_Nothing waits for your decision._"), slack.NewDividerBlock())
	}
	for i, w := range items {
		if i == maxHomeWaiting {
			rest := items[i:]
			oldest := slices.MinFunc(rest, func(a, b Waiting) int { return a.Request.CreatedAt.Compare(b.Request.CreatedAt) })
			more := fmt.Sprintf("%d more", len(rest))
			if oldest.CardLink != "" {
				more = linkTo(oldest.CardLink, more)
			}
			bs = append(bs, slack.NewContextBlock("", mrkdwn(more+" waiting for you; the link opens the oldest.")))
			break
		}
		bs = append(bs, homeRow(viewer, w)...)
	}
	return append(bs, slack.NewDividerBlock())
}

// homeOrder sorts the Home's rows: what the viewer approved already
// last; escalated first; then by deadline, the nearest first; then the
// oldest first.
func homeOrder(viewer string, a, b Waiting) int {
	ra, rb := a.Request, b.Request
	flag := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	return cmp.Or(
		cmp.Compare(flag(approvedBy(ra, viewer)), flag(approvedBy(rb, viewer))),
		cmp.Compare(flag(ra.Reach.Escalated.IsZero()), flag(rb.Reach.Escalated.IsZero())),
		cmp.Compare(flag(ra.Deadline.IsZero()), flag(rb.Deadline.IsZero())),
		ra.Deadline.Compare(rb.Deadline),
		ra.CreatedAt.Compare(rb.CreatedAt),
		cmp.Compare(ra.ID, rb.ID))
}

// homeRow is one request in "Waiting for you": one line of what and
// where (🚨 when escalated), one of how long it has waited, for whom and
// how far its approvals are, then its buttons.
func homeRow(viewer string, w Waiting) []slack.Block {
	a := announce(w.Request, w.Session, ReachOptions{CardLink: w.CardLink, Needs: w.Needs, Viewer: viewer})
	r := normalize(w.Request)
	mark := "🔔 "
	if !r.Reach.Escalated.IsZero() {
		mark = "🚨 "
	}
	brief := strings.TrimSuffix(strings.TrimPrefix(briefWhat(a.c), "Approve? "), "?")
	switch r.ToolName {
	case "Write", "Edit", "MultiEdit", "NotebookEdit", "Read":
		// A file by its name: the card has its path.
		h := toolHeadlines[r.ToolName]
		brief = h.verb + " " + inlineCode(baseName(decodeInput(a.c.req.Input).str(h.field)), headRunes)
	}
	what := mark + brief
	if p := project(w.Session); p != "" {
		what += " · *" + strings.ReplaceAll(Escape(cutShown(p, 60)), "*", "∗") + "*"
	}
	status := []string{"⏳ " + strings.TrimPrefix(askedWhen(r), "asked ")}
	if w.Session.StartedBy != "" {
		status = append(status, "for "+starter(w.Session.StartedBy))
	}
	if a.progress != "" {
		status = append(status, a.progress)
	}
	if w.CardLink != "" {
		status = append(status, linkTo(w.CardLink, "Open"))
	}
	bs := []slack.Block{section(cutSafe(what+"\n"+strings.Join(status, " · "), MaxText))}
	if len(a.buttons) > 0 {
		// One block id per request: Slack wants them unique in a view.
		bs = append(bs, slack.NewActionBlock(blockAnnounce+"."+cut(w.Request.ID, 200), a.buttons...))
	}
	return bs
}

// DecidedHere is what an App Home tap that settled r says at the top of
// the tab: the outcome and what it was of.
func DecidedHere(r store.Request) string {
	if r.Decision == nil {
		return ""
	}
	return firstLine(outcome(r)) + ": " + headlineShort(r)
}
