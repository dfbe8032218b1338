package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// cards owns every request's card: exactly one card per request, its
// outcome always shown. Nothing else in the bot posts, records, finds or
// edits one; the event consumer, the reconciler and the click handler call
// the transitions below, each documented beside its store calls.
//
// One rule says when a store event is acknowledged: once Slack has its
// write, or once the write's loss would be repaired without the event. A
// write still in the outbox after handOff finishes in a task (awaitWrite).
// A lost card is found again by listing: a pending request without a card
// (the reconciler). A lost outcome is not: nothing tells a settled
// request's card that still shows buttons from one that does not, so a
// settled event stays unacknowledged until Slack has the edit.
//
//	caller           transition  event acknowledged        crash repaired by
//	request_created  post        Slack has it, or handOff  the reconciler
//	  card recorded  refresh     Slack has it, or handOff  nothing: the card is up
//	request_settled  outcome     Slack has it, or the      redelivery, then a click
//	                             click's response has it
//	reconciler pass  post        (no event)                its next pass
//	click decides    clicked     (no event)                the settled event, after
//	                                                       clickGrace
//	click on a card  adopt,      (no event)                the next click
//	                 decided
type cards struct {
	st       cardStore
	out      *outbox.Outbox
	work     *tasks
	status   *statusLines
	reacher  *reacher
	decider  *decide.Decider
	api      repliesReader
	clock    store.Clock
	claimTTL time.Duration // CARD_CLAIM_TIMEOUT
	// botUserID is the bot's own user, from auth.test at the start of
	// Run: a card in a thread is the bot's only when it posted it.
	botUserID string
	// How a request shows, and the records a standing decider reads.
	shown          func(store.Request) store.Request
	renderCard     func(store.Request, store.Session) renderedCard
	renderCardWith func(store.Request, store.Session, blocks.CardOptions) renderedCard
	grantFor       func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool)
	answerFor      func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool)

	mu      sync.Mutex
	posting map[string]bool // requests whose card this bot is posting
}

// cardStore is what showing cards reads and writes in the store.
type cardStore interface {
	GetRequest(ctx context.Context, id string) (store.Request, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	SetCard(ctx context.Context, id string, ref store.MessageRef) (pending bool, err error)
	MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error)
}

// repliesReader reads a thread (conversations.replies), where a card
// Slack took but nobody recorded is found.
type repliesReader interface {
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
}

// How post comes to a card: new from its event, or lost (the reconciler
// found a pending request without one, whose poster may have died after
// Slack took the card).
const (
	newCard  = false
	lostCard = true
)

// post shows request id's card in its session's thread, in the outbox's
// cards lane. Store: GetRequest and GetSession; a card recorded already is
// refreshed instead. A request a standing decider settles (a policy rule,
// a grant, a remembered answer: bot/decide) gets a thread line instead
// of a card, before any claim. claim makes this bot the card's one
// poster. A lost card is looked for in the thread first, and so is a
// card whose post failed before it is sent again (find). Then recorded.
func (c *cards) post(ctx context.Context, log zerolog.Logger, id string, lost bool) error {
	r, err := c.st.GetRequest(ctx, id)
	if err != nil {
		return fmt.Errorf("bot: get request %s: %w", id, err)
	}
	s, err := c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", r.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	r = c.shown(r)
	c.reacher.waitingSince(r) // the reminder and escalation clocks start no sooner
	if !r.Card.IsZero() {
		return c.refresh(ctx, log, r, s)
	}
	if settled, err := c.standing(ctx, log, r, s); settled {
		return err
	}
	if ok, err := c.claim(ctx, log, r.ID); !ok {
		return err
	}
	card := c.renderCard(r, s)
	if lost {
		ts, found, err := c.inThread(ctx, log, s, r.ID)
		if err != nil || found {
			defer c.done(r.ID)
		}
		if err != nil {
			return err
		}
		if found {
			return c.recorded(ctx, log, r, s, card, ts)
		}
	}
	res := c.out.PostOnce(log, outbox.LaneCard, s.Thread.Channel, s.Thread.TS, card.msg, func(ctx context.Context) (string, bool, error) {
		return c.find(ctx, s, r.ID)
	})
	// The card shows the call: take it out of the turn's fold.
	c.status.showProgress(log, s, store.Event{Type: store.EventRequestCreated}, &r)
	return c.work.awaitWrite(log, res, func(pr outbox.Result) error {
		defer c.done(r.ID)
		if pr.Err != nil {
			return c.notPosted(ctx, log, r, s, pr.Err)
		}
		return c.recorded(ctx, log, r, s, card, pr.TS)
	})
}

// recorded stores where r's card went (SetCard, even while the bot stops:
// an unrecorded card would be posted again after a restart), attaches the
// input the card had to truncate, and brings the status line up to date.
// SetCard reports whether r was still pending; when it was not (another
// replica showed the settlement before the card existed), GetRequest reads
// the outcome and the card shows it. A settlement after SetCard finds the
// card, and its own event shows it.
func (c *cards) recorded(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard, ts string) error {
	ref := store.MessageRef{Channel: s.Thread.Channel, TS: ts}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outbox.CallTimeout)
	pending, err := c.st.SetCard(sctx, r.ID, ref)
	cancel()
	if err != nil {
		return fmt.Errorf("bot: set card %s: %w", r.ID, err)
	}
	opts := c.attachFullInput(ctx, log, r, s, card)
	now, settled := r, false
	if !pending && r.Pending() {
		if got, err := c.st.GetRequest(ctx, r.ID); err == nil && !got.Pending() {
			now, settled = c.shown(got), true
		}
	}
	// A card that promised the full input in the thread says it is not
	// there, so nobody approves what they think they can read.
	if settled || opts.AttachmentFailed {
		if _, err := c.out.Edit(log, outbox.LaneCard, ref, c.renderCardWith(now, s, opts).msg).Wait(ctx); err != nil {
			return err
		}
		if err := c.settledMeanwhile(ctx, log, now, s, ref); err != nil {
			return err
		}
	}
	c.status.refreshOf(ctx, s, statusKeep)
	if pending && !settled {
		r.Card = ref
		c.work.Go(func(ctx context.Context) { c.reacher.reached(ctx, log, r, s) })
	}
	return nil
}

// notPosted returns err, the failed post of r's card. When Slack refused
// the card itself, the thread says so rather than leave people unaware
// that Claude is waiting.
func (c *cards) notPosted(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, err error) error {
	if retryable(ctx, err) {
		return err
	}
	notice := fmt.Sprintf("⚠️ Claude is waiting for a decision on %s, but its card could not be shown in Slack (%s). "+
		"The request will expire unless it is decided another way; the bot's log has the details.",
		"`"+blocks.Escape(r.ToolName)+"`", blocks.Escape(slackErrCode(err)))
	if _, perr := c.out.Post(log, outbox.LaneCard, s.Thread.Channel, s.Thread.TS, outbox.Msg{Text: notice}).Outcome(); perr != nil {
		log.Error().Err(perr).Msg("post card failure notice")
	}
	return err
}

// attachFullInput uploads the input a card had to truncate, and returns
// the options the card must be rendered with from now on.
func (c *cards) attachFullInput(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard) blocks.CardOptions {
	opts := card.opts
	if card.fullInput == "" {
		return opts
	}
	name := cmp.Or(card.fullInputName, "request-"+r.ID+".txt")
	if err := c.out.Upload(ctx, log, s.Thread.Channel, s.Thread.TS, name, "Full input of "+r.ToolName, card.fullInput); err != nil {
		// The card is up; a missing attachment is not worth posting it
		// twice, only worth saying on the card.
		log.Error().Err(err).Msg("upload full input")
		opts.AttachmentFailed = true
	}
	return opts
}

// standing settles r, a request of session s, with a standing decider
// (bot/decide: a deny rule, an allow rule, a grant, a remembered answer,
// in that order) before its card is claimed, and puts the one thread line
// that stands for the card. It reports whether r needs no card; the error
// is the line's.
func (c *cards) standing(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (bool, error) {
	out, ok := c.decider.Standing(ctx, log, r, s, decide.Records{Grant: c.grantFor, Answer: c.answerFor})
	if !ok {
		return false, nil
	}
	var line blocks.Message
	switch out.By {
	case decide.ByRule:
		line = blocks.DecidedByRule(out.Request, out.Decision)
	case decide.ByGrant:
		line = blocks.AllowedByGrant(r, out.Kept)
	case decide.ByAnswer:
		line = blocks.AnsweredFromMemory(out.Kept)
	default:
		return true, nil // settled first elsewhere: its own event shows it
	}
	res := c.out.Post(log, outbox.LaneCard, s.Thread.Channel, s.Thread.TS, toMsg(line))
	return true, c.work.awaitWrite(log, res, func(pr outbox.Result) error { return pr.Err })
}

// claim reports whether this bot may post request id's card. Store:
// MoveCard(store.CardClaimed for CardClaimTTL), so the event path, the
// reconciler and every replica post one card between them; a claim held
// elsewhere is left to its holder. When the store cannot tell, nobody
// posts now (the event comes again, or the next pass tries): a second
// card is what the claim prevents. A holder that died lets its claim
// lapse, and the reconciler posts the card; a card waiting in its outbox
// longer than the claim could race another replica's pass, while within
// one bot a card being posted (busy) is never claimed twice. done gives
// that hold back.
func (c *cards) claim(ctx context.Context, log zerolog.Logger, id string) (bool, error) {
	if c.busy(id) {
		return false, nil
	}
	first, err := c.st.MoveCard(ctx, id, store.CardMove{Step: store.CardClaimed, TTL: c.claimTTL})
	if err != nil {
		return false, fmt.Errorf("bot: claim card %s: %w", id, err)
	}
	if !first {
		log.Debug().Msg("card claimed by another poster; the reconciler posts it if that claim lapses")
		return false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.posting[id] {
		return false, nil
	}
	if c.posting == nil {
		c.posting = map[string]bool{}
	}
	c.posting[id] = true
	return true, nil
}

// busy reports whether this bot is posting request id's card.
func (c *cards) busy(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.posting[id]
}

func (c *cards) done(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.posting, id)
}

// refresh brings a recorded card up to date for a request_created event
// delivered again (or whose card a click adopted), without holding the
// consumer while Slack's budget makes the edit wait.
func (c *cards) refresh(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) error {
	res := c.out.Edit(log, outbox.LaneCard, r.Card, c.renderCard(r, s).msg)
	return c.work.awaitWrite(log, res, func(pr outbox.Result) error {
		if pr.Err != nil {
			return pr.Err
		}
		return c.settledMeanwhile(ctx, log, r, s, r.Card)
	})
}

// settledMeanwhile follows a write that showed r pending (buttons) at ref.
// A click may have settled r and replaced the card through its
// response_url while the write was on its way, to land after it and put
// the buttons back; so once Slack has the write, r is read again and a
// settled one gets its outcome shown again. Store: GetRequest.
func (c *cards) settledMeanwhile(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, ref store.MessageRef) error {
	if !r.Pending() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outbox.CallTimeout)
	defer cancel()
	now, err := c.st.GetRequest(ctx, r.ID)
	if err != nil || now.Pending() {
		if err != nil {
			log.Warn().Err(err).Msg("read the request again after showing it pending")
		}
		return nil
	}
	_, err = c.out.Edit(log, outbox.LaneCard, ref, c.renderCard(c.shown(now), s).msg).Wait(ctx)
	return err
}

// reach shows on r's card a step taken to reach people ("reminded
// 10:42"), or its outcome when it was settled meanwhile (showReach in
// reach.go reads r). The edit is queued; a failure is logged, and the
// next edit of the card carries the step too.
func (c *cards) reach(log zerolog.Logger, r store.Request, s store.Session) {
	if r.Card.IsZero() {
		return
	}
	m := c.renderCard(c.shown(r), s).msg
	c.out.EditLater(log, outbox.LaneCard, r.Card, m)
}

// approved brings request id's card up to date after an approval of
// several (its count and who approved), without holding the click while
// Slack's budget makes the edit wait. Store: GetRequest, GetSession. A
// lost edit is repaired by the next approval, or the outcome.
func (c *cards) approved(ctx context.Context, log zerolog.Logger, id string) {
	r, err := c.st.GetRequest(ctx, id)
	if err == nil && (r.Card.IsZero() || !r.Pending()) {
		return // no card yet (post renders the approvals), or the outcome's event shows it
	}
	var s store.Session
	if err == nil {
		s, err = c.st.GetSession(ctx, r.SessionID)
	}
	if err != nil {
		log.Warn().Err(err).Msg("show the approvals on the card")
		return
	}
	c.out.Edit(log, outbox.LaneCard, r.Card, c.renderCard(r, s).msg)
}

// errOutcomeNotShown leaves a settled event unacknowledged while its edit
// finishes in a task, so it is delivered again: to this bot, which finds
// the edit done (or coalesces with it), or after a crash to the restarted
// bot or another replica, which makes it.
var errOutcomeNotShown = errors.New("bot: the card's outcome is not in slack yet")

// outcome replaces request id's buttons with its outcome, unless the click
// that decided it does (byClick, from the card's state; responseurl.go).
// Store: GetRequest (no card recorded yet: recorded shows the outcome when
// it is posted), GetSession, and for an edited input MoveCard in
// attachRan.
// The edit spends the workspace's update budget, so like a card it gets
// handOff and then finishes in a task (the consumer must not hold up a card
// in another channel behind it), but its event stays unacknowledged
// (errOutcomeNotShown) until Slack has the edit. Only an edit that waits
// out every delivery (store.MaxDeliveries) and then dies with its bot is
// lost; the card then keeps its buttons until the next click (decided).
func (c *cards) outcome(ctx context.Context, log zerolog.Logger, id string) error {
	r, err := c.st.GetRequest(ctx, id)
	if err != nil {
		return fmt.Errorf("bot: get request %s: %w", id, err)
	}
	if r.Card.IsZero() && !mayHaveLostCard(r) {
		return nil
	}
	s, err := c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", r.SessionID, err)
	}
	if r.Card.IsZero() {
		if r.Card, err = c.lostCard(ctx, log, r, s); err != nil || r.Card.IsZero() {
			return err
		}
	}
	log = log.With().Str("channel", r.Card.Channel).Logger()
	raw := r
	r = c.shown(r)
	card := c.renderCard(r, s)
	switch c.byClick(log, raw, r) {
	case clickShowing:
		return errOutcomeNotShown
	case clickShowed:
		c.attachRan(ctx, log, r, s, card)
		c.status.refreshOf(ctx, s, statusKeep)
		// The card shows the outcome already; its copies and the App
		// Homes listing it do not.
		c.work.Go(func(ctx context.Context) {
			c.reacher.showCopies(ctx, log, r, s)
			c.reacher.touchHomes(ctx, log, r, s)
		})
		return nil
	}
	var shown atomic.Bool
	err = c.work.awaitWrite(log, c.out.Edit(log, outbox.LaneCard, r.Card, card.msg), func(pr outbox.Result) error {
		if pr.Err != nil {
			return pr.Err
		}
		shown.Store(true)
		c.attachRan(ctx, log, r, s, card)
		c.status.refreshOf(ctx, s, statusKeep)
		c.work.Go(func(ctx context.Context) { c.reacher.settled(ctx, log, r, s) })
		return nil
	})
	if err == nil && !shown.Load() {
		return errOutcomeNotShown
	}
	return err
}

// mayHaveLostCard reports whether settled r may have a card in its
// thread that no store record points to: one Slack took from a bot that
// died before SetCard. A request a rule, a grant or a remembered answer
// decided never had one; one a person, the API or the system (ended,
// expired, cancelled) settled may.
func mayHaveLostCard(r store.Request) bool {
	d := r.Decision
	return d != nil && d.Rule == "" && d.Grant == "" && d.Remembered == ""
}

// lostCard looks in s's thread for settled r's card, as the reconciler
// does for a pending request's, and records it; zero when the thread has
// none. A thread that cannot be read now is an error (the event is
// redelivered); one Slack refuses to show is no card.
func (c *cards) lostCard(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.MessageRef, error) {
	ts, found, err := c.find(ctx, s, r.ID)
	switch {
	case err != nil && outbox.Permanent(err):
		log.Warn().Err(err).Msg("cannot read the thread for a card of a settled request")
		return store.MessageRef{}, nil
	case err != nil:
		return store.MessageRef{}, err
	case !found:
		return store.MessageRef{}, nil
	}
	ref := store.MessageRef{Channel: s.Thread.Channel, TS: ts}
	if _, err := c.st.SetCard(ctx, r.ID, ref); err != nil {
		return store.MessageRef{}, fmt.Errorf("bot: record the card of settled request %s: %w", r.ID, err)
	}
	log.Info().Str("card_ts", ts).Msg("settled request's card found in its thread, never recorded; showing the outcome on it")
	return ref, nil
}

// clicked replaces the card at ref with settled r through the click's
// response_url and waits for Slack. When the click claimed the outcome, it
// records whether Slack shows it (store.CardShownByClick, or
// store.CardClickFailed): a failed one is the settled event's to edit,
// which survives a crash; without a claim a failure becomes a chat.update
// here. Store: GetSession, MoveCard.
func (c *cards) clicked(ctx context.Context, log zerolog.Logger, r store.Request, ref store.MessageRef, responseURL string, claimed bool) {
	s, err := c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		log.Warn().Err(err).Msg("show the outcome: get session; the settled event shows it")
		return
	}
	claimed = claimed && r.Decision != nil
	msg := c.renderCard(c.shown(r), s).msg
	_, err = c.out.Respond(log, ref, responseURL, msg, !claimed).Wait(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("show the outcome of the click")
	}
	if !claimed {
		return
	}
	m := store.CardMove{Step: store.CardShownByClick, Decision: store.DecisionDigest(*r.Decision)}
	if err != nil {
		m.Step = store.CardClickFailed
	}
	if _, err := c.st.MoveCard(context.WithoutCancel(ctx), r.ID, m); err != nil {
		log.Warn().Err(err).Msg("record how the click's outcome went; the settled event edits the card")
	}
}

// attachRan puts in the thread what a settled card could only summarise:
// the input a person edited before approving (what ran). Claimed through
// the store (store.CardInputAttached), so a redelivery or another replica
// does not attach it twice.
func (c *cards) attachRan(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard) {
	if card.fullInput == "" {
		return
	}
	first, err := c.st.MoveCard(ctx, r.ID, store.CardMove{Step: store.CardInputAttached})
	if err != nil || !first {
		if err != nil {
			log.Warn().Err(err).Msg("claim the edited input's attachment")
		}
		return
	}
	name := cmp.Or(card.fullInputName, "edited-input-"+r.ID+".json")
	if err := c.out.Upload(ctx, log, s.Thread.Channel, s.Thread.TS, name, "What ran: the edited input of "+r.ToolName, card.fullInput); err != nil {
		log.Error().Err(err).Msg("upload the edited input")
	}
}

// adopt records ref, the message a person clicked, as request id's card
// when the store has none (SetCard): its poster died between Slack taking
// it and SetCard, or the store was down then. Only the bot's own card
// carries a request's buttons, so the message clicked is the card. Without
// the record the outcome would never reach it, and the reconciler would
// post a second card. It returns the card as recorded (zero when the store
// refused).
func (c *cards) adopt(ctx context.Context, log zerolog.Logger, id string, ref store.MessageRef) store.MessageRef {
	if _, err := c.st.SetCard(ctx, id, ref); err != nil {
		log.Warn().Err(err).Msg("adopt the clicked card as the request's")
		return store.MessageRef{}
	}
	log.Info().Str("card_ts", ref.TS).Msg("card posted by a bot that did not record it; adopted at the click")
	return ref
}

// decided brings the card at ref up to date once r is settled, for a
// person who clicked an old version of it (or whose outcome edit was
// lost), and waits for Slack: through the click's response_url when it
// has one for this card, else chat.update. Store: GetSession. Failures are
// logged: the person has been told who decided.
func (c *cards) decided(ctx context.Context, log zerolog.Logger, r store.Request, ref store.MessageRef, responseURL string) {
	if r.Decision == nil || ref.IsZero() {
		return
	}
	s, err := c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		log.Warn().Err(err).Msg("refresh card: get session")
		return
	}
	msg := c.renderCard(c.shown(r), s).msg
	var w outbox.Pending
	if responseURL != "" {
		w = c.out.Respond(log, ref, responseURL, msg, true)
	} else {
		w = c.out.Edit(log, outbox.LaneCard, ref, msg)
	}
	if _, err := w.Wait(ctx); err != nil {
		log.Warn().Err(err).Msg("refresh card")
	}
}

// Slack has no idempotent chat.postMessage: a post whose answer was lost
// (a timeout, a dropped connection, a 5xx after Slack acted) may be in the
// thread, and so may a card whose bot died between Slack taking it and
// SetCard. Where a card may be there without the store knowing (a retried
// post, a lost card), find reads the thread (conversations.replies, which
// the *:history scopes allow) for a message of the bot's own carrying the
// request's buttons; never on the usual path.

// maxFindPages bounds the thread pages one look reads (200 messages each).
const maxFindPages = 5

// find returns the ts of the bot's card for request id in s's thread, if
// the thread holds one.
func (c *cards) find(ctx context.Context, s store.Session, id string) (string, bool, error) {
	params := &slack.GetConversationRepliesParameters{ChannelID: s.Thread.Channel, Timestamp: s.Thread.TS, Limit: 200}
	for range maxFindPages {
		msgs, more, next, err := c.api.GetConversationRepliesContext(ctx, params)
		if slackErrCode(err) == "thread_not_found" {
			return "", false, nil // nothing there, so no card either
		}
		if err != nil {
			return "", false, fmt.Errorf("bot: read thread %s/%s: %w", s.Thread.Channel, s.Thread.TS, err)
		}
		for _, m := range msgs {
			if m.User == c.botUserID && cardOf(m.Blocks) == id {
				return m.Timestamp, true, nil
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return "", false, nil
}

// inThread is find for a lost card. A thread that cannot be read now
// (Slack unreachable) is an error: the next pass tries again rather than
// risk a second card. One Slack refuses to show (a permanent error) is
// logged and reported as no card, so the card is posted.
func (c *cards) inThread(ctx context.Context, log zerolog.Logger, s store.Session, id string) (string, bool, error) {
	ts, found, err := c.find(ctx, s, id)
	switch {
	case err != nil && outbox.Permanent(err):
		log.Warn().Err(err).Msg("reconcile: cannot read the thread for a card posted before; posting one")
		return "", false, nil
	case err != nil:
		return "", false, err
	case found:
		log.Info().Str("card_ts", ts).Msg("reconcile: the card is in the thread already; recording it")
	}
	return ts, found, nil
}

// cardOf is the request whose buttons the blocks carry ("" when none).
func cardOf(bs slack.Blocks) string {
	for _, bl := range bs.BlockSet {
		var els []slack.BlockElement
		switch bl := bl.(type) {
		case *slack.ActionBlock:
			if bl.Elements != nil && !blocks.OnCopy(bl.BlockID) {
				els = bl.Elements.ElementSet // a reminder in the thread is no card
			}
		case *slack.SectionBlock:
			if bl.Accessory != nil && bl.Accessory.ButtonElement != nil {
				els = []slack.BlockElement{bl.Accessory.ButtonElement}
			}
		}
		for _, el := range els {
			btn, ok := el.(*slack.ButtonBlockElement)
			if !ok {
				continue
			}
			if a, ok := blocks.ParseAction(&slack.BlockAction{ActionID: btn.ActionID, Value: btn.Value}); ok && a.RequestID != "" {
				return a.RequestID
			}
		}
	}
	return ""
}

// slackErrCode is Slack's short error code when there is one.
func slackErrCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return "error"
}
