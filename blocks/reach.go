package blocks

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Reaching people beyond the card: an announcement (a compact copy of the
// card where an approver looks, with the same Approve and Deny), a
// reminder and an escalation line, the card's note of both, and the App
// Home's "Waiting for you".

// ReachOptions are what the bot knows about a copy beyond the request.
type ReachOptions struct {
	// CardLink is the card's permalink ("" for none).
	CardLink string
	// Escalated: the copy announces an escalation to its reader.
	Escalated bool
}

// longWait is the wait from which a pending card says until when it waits.
const longWait = time.Hour

// blockAnnounce is the block id of an announcement's buttons.
const blockAnnounce = Prefix + "announce"

// Announcement renders a copy of r's card: what Claude wants, where and
// for whom, since when it waits (Slack keeps "… ago" current) and a link
// to the card; while pending, Approve and Deny for a tool call or plan
// (decided like the card's), a link only for a question or form, which
// are answered on the card. Approve confirms first unless the copy shows
// the whole input. Settled, it shows the card's outcome and no buttons.
func Announcement(r store.Request, s store.Session, o ReachOptions) Message {
	a := announce(r, s, o)
	if a.settled {
		return Message{Text: a.text, Blocks: []slack.Block{section(a.lead)}}
	}
	bs := []slack.Block{section(a.lead), slack.NewContextBlock("", mrkdwn(a.note))}
	if len(a.buttons) > 0 {
		bs = append(bs, slack.NewActionBlock(blockAnnounce, a.buttons...))
	}
	return Message{Text: a.text, Blocks: bs}
}

// announced is a copy's parts, which the App Home lays out its own way.
type announced struct {
	lead, note, text string
	buttons          []slack.BlockElement
	settled          bool
}

func announce(r store.Request, s store.Session, o ReachOptions) announced {
	r = normalize(r)
	shown := r
	shown.Input = maskJSON(r.Input)
	c := &card{req: shown, real: r, sess: s}
	link := ""
	if o.CardLink != "" {
		link = " · " + linkTo(o.CardLink, "Open the card")
	}
	where := ""
	if isSlackID(s.Thread.Channel) && !isDMChannel(s.Thread.Channel) {
		where = " in <#" + s.Thread.Channel + ">"
	}
	if r.Decision != nil {
		return announced{lead: cutSafe(outcomeWith(c.req, c.ran())+where+link, MaxText), text: c.fallback(), settled: true}
	}
	head := "🔔 "
	if o.Escalated {
		head = "🚨 *Escalated to you:* "
	}
	asked := "asked <!date^" + fmt.Sprint(r.CreatedAt.Unix()) + "^{ago}|" + r.CreatedAt.UTC().Format("15:04 UTC") + ">"
	return announced{
		lead:    cutSafe(head+c.headline()+c.where()+where, MaxText),
		note:    cutSafe(asked+reachNote(r)+link, MaxText),
		text:    cutSafe("Decision needed: "+c.headline(), MaxText),
		buttons: announceButtons(c),
	}
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

// Reminder is the one line a still pending request gets, in its card's
// thread and under each copy, after the reminder time: how long it has
// waited and who may decide it (deciders: user and user group ids, "*"
// for anyone who sees the card).
func Reminder(r store.Request, deciders []string, waited time.Duration, cardLink string) Message {
	text := "⏰ Still waiting " + waitWords(waited) + " for a decision on " + headlineShort(r)
	if m := Mentions(deciders); m != "" {
		text += ": " + m + " may decide it"
	}
	if cardLink != "" {
		text += " · " + linkTo(cardLink, "Open the card")
	}
	return toMessage(cutSafe(text+".", MaxText))
}

// Escalation is the line in the card's thread when r is escalated to
// people (ids) who may now decide it too.
func Escalation(r store.Request, to []string, waited time.Duration) Message {
	text := "🚨 Nobody decided " + headlineShort(r) + " in " + waitWords(waited) + "; escalated to " + orDash(Mentions(to)) + ", who may decide it now."
	return toMessage(cutSafe(text, MaxText))
}

func toMessage(text string) Message {
	return Message{Text: text, Blocks: []slack.Block{section(text)}}
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

// reachNote is what the card and its copies say of a pending request's
// reach: " · reminded 10:42 · escalated to @oncall 11:12", and until when
// a long wait lasts.
func reachNote(r store.Request) string {
	var parts []string
	if !r.Reach.Reminded.IsZero() {
		parts = append(parts, "reminded "+timeToken(r.Reach.Reminded))
	}
	if !r.Reach.Escalated.IsZero() {
		parts = append(parts, "escalated to "+orDash(Mentions(r.Reach.EscalatedTo))+" "+timeToken(r.Reach.Escalated))
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
}

// maxHomeWaiting bounds the requests "Waiting for you" lists (two blocks
// each): 27 blocks at most, beside the answers' 44 and the grants' 23,
// keep the tab inside Slack's 100.
const maxHomeWaiting = 12

// HomeWaiting is the App Home's first section: the pending requests the
// viewer may decide, newest first as given, each with what and where, how
// long it has waited, Approve and Deny as on its copies, and a link to its
// card; past maxHomeWaiting, "N more" linking to the newest card not
// listed.
func HomeWaiting(items []Waiting) []slack.Block {
	bs := []slack.Block{slack.NewHeaderBlock(plain("Waiting for you"))}
	if len(items) == 0 {
		return append(bs, section("_Nothing waits for your decision._"), slack.NewDividerBlock())
	}
	for i, w := range items {
		if i == maxHomeWaiting {
			more := fmt.Sprintf("%d more", len(items)-i)
			if w.CardLink != "" {
				more = linkTo(w.CardLink, more)
			}
			bs = append(bs, slack.NewContextBlock("", mrkdwn(more+" waiting for you.")))
			break
		}
		a := announce(w.Request, w.Session, ReachOptions{CardLink: w.CardLink})
		bs = append(bs, section(cutSafe(a.lead+"\n"+a.note, MaxText)))
		if len(a.buttons) > 0 {
			// One block id per request: Slack wants them unique in a view.
			bs = append(bs, slack.NewActionBlock(blockAnnounce+"."+cut(w.Request.ID, 200), a.buttons...))
		}
	}
	return append(bs, slack.NewDividerBlock())
}
