package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// consume shows the store's events in Slack until ctx ends. An event is
// acknowledged once Slack has what it shows, or once the write has waited
// handOff in the outbox (see awaitWrite). In the first case a crash or a
// Slack outage leads to a redelivery. In the second a crash loses the
// write: for a card, the reconciler (reconcile.go) posts it after the
// restart or from another replica; outcomes never take that path (they
// wait, see showSettled); a lost result or progress line is a gap in the
// thread, not a stuck request.
func (b *Bot) consume(ctx context.Context) error {
	if err := b.st.Consume(ctx, consumerGroup, b.cfg.ConsumerName, b.handleEvent); err != nil && ctx.Err() == nil {
		return fmt.Errorf("bot: consume events: %w", err)
	}
	return nil
}

// handleEvent is the Consume callback. It returns an error only when a
// retry may help (Slack or the store unreachable, shutting down); an event
// that cannot be shown (its session is gone, Slack refused the payload)
// is logged and acknowledged.
func (b *Bot) handleEvent(ctx context.Context, e store.Event) error {
	log := b.log.With().Str("session_id", e.SessionID).Str("event", string(e.Type)).Logger()
	if e.RequestID != "" {
		log = log.With().Str("request_id", e.RequestID).Logger()
	}
	var err error
	switch e.Type {
	case store.EventRequestCreated:
		err = b.showRequest(ctx, log, e.RequestID)
	case store.EventRequestSettled:
		err = b.showSettled(ctx, log, e.RequestID)
	case store.EventSessionStarted:
		b.refreshStatus(ctx, e.SessionID, blocks.PhaseWorking)
	case store.EventToolUse, store.EventToolResult:
		err = b.foldEvent(ctx, log, e)
	default:
		err = b.showSessionEvent(ctx, log, e)
	}
	if err == nil {
		return nil
	}
	if !retryable(ctx, err) {
		log.Error().Err(err).Msg("event cannot be shown in slack; skipping it")
		return nil
	}
	if errors.Is(err, errOutcomeNotShown) {
		// Routine under Slack's update budget; see showSettled.
		log.Debug().Err(err).Msg("event not shown yet; it will be redelivered")
		return err
	}
	log.Warn().Err(err).Msg("event not shown yet; it will be redelivered")
	return err
}

// retryable reports whether handling an event again may succeed.
func retryable(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil, errors.Is(err, errOutboxClosed):
		return true
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
		return false
	}
	return !permanent(err)
}

// handOff is how long the event consumer waits for Slack to take a write
// before it goes on to the next event and leaves the rest to a task. Events
// are consumed one at a time for every channel, so a write waiting for its
// channel's budget must not hold up a card in another channel. The event
// is then acknowledged before Slack has the write: the outbox still never
// drops it while the bot runs, but a crash in that window loses it; for
// cards the reconciler makes up for that.
const handOff = 200 * time.Millisecond

// startWait is how long the consumer waits for a write to leave the
// outbox: one whose budget allows it starts within microseconds, one that
// has not started by then waits for Slack's budget, and waiting for it here
// would only hold up the events behind it.
const startWait = 20 * time.Millisecond

// awaitWrite waits for w while it is being sent, up to handOff, and runs
// then with the outcome; a write still queued after startWait, or still in
// flight after handOff, finishes in a task and awaitWrite returns nil.
func (b *Bot) awaitWrite(log zerolog.Logger, w pending, then func(opResult) error) error {
	// Wall time on purpose: this bounds how the consumer shares its time,
	// it is no deadline a test would move by hand.
	timer := time.NewTimer(startWait)
	defer timer.Stop()
	select {
	case r := <-w.res:
		return then(r)
	case <-w.started:
		timer.Reset(handOff)
		select {
		case r := <-w.res:
			return then(r)
		case <-timer.C:
		}
	case <-timer.C:
	}
	started := b.work.Go(func(context.Context) {
		if err := then(<-w.res); err != nil {
			log.Error().Err(err).Msg("event shown late in slack failed")
		}
	})
	if !started {
		return then(<-w.res)
	}
	return nil
}

// showRequest posts a request's card in its session's thread, records
// where (SetCard), and attaches the full input when the card had to
// truncate it. Cards take the outbox's first lane.
func (b *Bot) showRequest(ctx context.Context, log zerolog.Logger, id string) error {
	return b.postCard(ctx, log, id, cardPosting{refresh: true})
}

// cardPosting says how postCard posts a card: the event path as the
// request comes; the reconciler looks first and refreshes status lines
// itself, once per session for all the cards it posts.
type cardPosting struct {
	lookFirst bool // look for the card in the thread first: its poster may have died after Slack took it
	refresh   bool // bring the session's status line up to date once the card is posted
}

// postCard is showRequest, posting as how says.
func (b *Bot) postCard(ctx context.Context, log zerolog.Logger, id string, how cardPosting) error {
	r, err := b.st.GetRequest(ctx, id)
	if err != nil {
		return fmt.Errorf("bot: get request %s: %w", id, err)
	}
	s, err := b.st.GetSession(ctx, r.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", r.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	r = b.shown(r)
	card := renderCard(r, s)
	if !r.Card.IsZero() {
		// A redelivery after the card was posted (or a click adopted it):
		// bring it up to date rather than posting a second one, without
		// holding the consumer while Slack's budget makes the edit wait.
		return b.awaitWrite(log, b.out.updatePending(log, laneCard, r.Card, card.msg), func(pr opResult) error { return pr.err })
	}
	// One poster per card across the event path, the reconciler and every
	// replica (see reconcile.go). Not ours: acknowledge, the holder posts.
	claimed, err := b.claimCard(ctx, log, r.ID)
	if err != nil {
		return fmt.Errorf("bot: claim card %s: %w", r.ID, err)
	}
	if !claimed {
		return nil
	}
	if a, ok := b.fromMemory(ctx, log, r, s); ok {
		// Answered without a person: one line in the thread, no card.
		b.posting.done(r.ID)
		return b.showFromMemory(log, s, a)
	}
	if how.lookFirst {
		ts, found, err := b.postedBefore(ctx, log, s, r)
		if err != nil || found {
			defer b.posting.done(r.ID)
		}
		if err != nil {
			return err
		}
		if found {
			return b.cardPosted(ctx, log, r, s, card, opResult{ts: ts}, how.refresh)
		}
	}
	res := b.out.postCardPending(log, s.Thread.Channel, s.Thread.TS, card.msg, b.cardFinder(s, r.ID))
	// The card shows the call: take it out of the turn's fold.
	b.showProgress(log, s, store.Event{Type: store.EventRequestCreated}, &r)
	return b.awaitWrite(log, res, func(pr opResult) error {
		defer b.posting.done(r.ID)
		return b.cardPosted(ctx, log, r, s, card, pr, how.refresh)
	})
}

// cardPosted records where a card went, or says in the thread that it
// could not be shown.
func (b *Bot) cardPosted(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard, pr opResult, refresh bool) error {
	if err := pr.err; err != nil {
		if !retryable(ctx, err) {
			// Slack refused the card itself: say so in the thread rather
			// than leave people unaware that Claude is waiting.
			notice := fmt.Sprintf("⚠️ Claude is waiting for a decision on %s, but its card could not be shown in Slack (%s). "+
				"The request will expire unless it is decided another way; the bot's log has the details.",
				"`"+blocks.Escape(r.ToolName)+"`", blocks.Escape(slackErrCode(err)))
			if perr := (<-b.out.post(log, laneCard, s.Thread.Channel, s.Thread.TS, outMsg{Text: notice})).err; perr != nil {
				log.Error().Err(perr).Msg("post card failure notice")
			}
		}
		return err
	}
	ref := store.MessageRef{Channel: s.Thread.Channel, TS: pr.ts}
	// Record the card even when the bot is stopping: an unrecorded card
	// would be posted a second time after a restart.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	pending, err := b.st.SetCard(sctx, r.ID, ref)
	cancel()
	if err != nil {
		return fmt.Errorf("bot: set card %s: %w", r.ID, err)
	}
	opts := b.attachFullInput(ctx, log, r, s, card)
	// Settled while it was being posted (another replica showed the
	// settlement before the card existed): show the final state now. A
	// settlement after SetCard finds the card, and its event shows it.
	if now, settled := b.settledMeanwhile(ctx, r, pending); settled {
		if err := b.out.Update(ctx, log, ref, renderCardWith(b.shown(now), s, opts).msg); err != nil {
			return err
		}
	} else if opts.AttachmentFailed {
		// The card promised the full input in the thread; say it is not
		// there, so nobody approves what they think they can read.
		if err := b.out.Update(ctx, log, ref, renderCardWith(r, s, opts).msg); err != nil {
			return err
		}
	}
	if refresh {
		b.refreshStatusOf(ctx, s, statusKeep)
	}
	return nil
}

// settledMeanwhile returns r as settled when it was pending as posted but
// not when its card was recorded (SetCard's pending).
func (b *Bot) settledMeanwhile(ctx context.Context, r store.Request, pending bool) (store.Request, bool) {
	if pending || !r.Pending() {
		return r, false
	}
	now, err := b.st.GetRequest(ctx, r.ID)
	return now, err == nil && !now.Pending()
}

// attachFullInput uploads the input a card had to truncate, and returns
// the options the card must be rendered with from now on.
func (b *Bot) attachFullInput(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard) blocks.CardOptions {
	if card.fullInput == "" {
		return blocks.CardOptions{}
	}
	name := cmp.Or(card.fullInputName, "request-"+r.ID+".txt")
	if err := b.out.Upload(ctx, log, s.Thread.Channel, s.Thread.TS, name, "Full input of "+r.ToolName, card.fullInput); err != nil {
		// The card is up; a missing attachment is not worth posting it
		// twice, only worth saying on the card.
		log.Error().Err(err).Msg("upload full input")
		return blocks.CardOptions{AttachmentFailed: true}
	}
	return blocks.CardOptions{}
}

// slackErrCode is Slack's short error code when there is one.
func slackErrCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return "error"
}

// errOutcomeNotShown leaves a settled event unacknowledged while its edit
// finishes in a task, so it is delivered again: to this bot, which finds
// the edit done (or coalesces with it), or after a crash to the restarted
// bot or another replica, which makes it.
var errOutcomeNotShown = errors.New("bot: the card's outcome is not in slack yet")

// showSettled replaces a card's buttons with its outcome. Outcome edits
// spend the workspace's update budget (50 a minute), so under load one can
// wait seconds for it: like a card, it gets handOff and then finishes in a
// task, because events are consumed one at a time and a card due in another
// channel must not wait behind it (measured: with the wait, 50 sessions'
// cards queued behind 100 outcome edits for up to 50 s). Unlike a card's,
// its event is then not acknowledged (errOutcomeNotShown) but delivered
// again after store.RedeliveryDelay, so a bot killed with the edit in its
// outbox does not lose it. Only an edit that waits out every delivery
// (store.MaxDeliveries, about 15 s of Slack's budget) and then dies with
// its bot is lost; the card then keeps its buttons until the next click on
// it, which tells who decided and refreshes the card.
func (b *Bot) showSettled(ctx context.Context, log zerolog.Logger, id string) error {
	r, err := b.st.GetRequest(ctx, id)
	if err != nil {
		return fmt.Errorf("bot: get request %s: %w", id, err)
	}
	if r.Card.IsZero() {
		// Not posted yet: showRequest renders the final state when it does.
		return nil
	}
	s, err := b.st.GetSession(ctx, r.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", r.SessionID, err)
	}
	log = log.With().Str("channel", r.Card.Channel).Logger()
	card := renderCard(b.shown(r), s)
	res := b.out.updatePending(log, laneCard, r.Card, card.msg)
	var shown atomic.Bool
	err = b.awaitWrite(log, res, func(pr opResult) error {
		if pr.err != nil {
			return pr.err
		}
		shown.Store(true)
		if card.fullInput != "" {
			b.attachRan(ctx, log, r, s, card)
		}
		b.refreshStatusOf(ctx, s, statusKeep)
		return nil
	})
	if err == nil && !shown.Load() {
		return errOutcomeNotShown
	}
	return err
}

// editedClaimTTL outlasts every redelivery of a settled event, so the
// input a person edited is attached to the thread once.
const editedClaimTTL = 24 * time.Hour

// attachRan puts in the thread what a settled card could only summarise:
// the input a person edited before approving (what ran). Claimed through
// the store, so a redelivery or another replica does not attach it twice.
func (b *Bot) attachRan(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, card renderedCard) {
	first, err := b.st.FirstSeen(ctx, "edited:"+r.ID, editedClaimTTL)
	if err != nil || !first {
		if err != nil {
			log.Warn().Err(err).Msg("claim the edited input's attachment")
		}
		return
	}
	name := cmp.Or(card.fullInputName, "edited-input-"+r.ID+".json")
	if err := b.out.Upload(ctx, log, s.Thread.Channel, s.Thread.TS, name, "What ran: the edited input of "+r.ToolName, card.fullInput); err != nil {
		log.Error().Err(err).Msg("upload the edited input")
	}
}

// foldEvent shows a tool use or a tool's result in the turn's fold. The
// fold needs only the session's thread, which this bot may know already
// (statusEntry.thread): a turn's many tool events then read no session.
func (b *Bot) foldEvent(ctx context.Context, log zerolog.Logger, e store.Event) error {
	s := store.Session{ID: e.SessionID}
	if thread, ok := b.status.threadOf(e.SessionID); ok {
		s.Thread = thread
	} else {
		var err error
		if s, err = b.st.GetSession(ctx, e.SessionID); err != nil {
			return fmt.Errorf("bot: get session %s: %w", e.SessionID, err)
		}
	}
	b.showProgress(log.With().Str("channel", s.Thread.Channel).Logger(), s, e, nil)
	return nil
}

// showSessionEvent posts what Claude said and how the turn ended in the
// results lane, and moves the status line.
func (b *Bot) showSessionEvent(ctx context.Context, log zerolog.Logger, e store.Event) error {
	s, err := b.st.GetSession(ctx, e.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", e.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	// The fold goes first, so the thread reads in the order things happened.
	b.showProgress(log, s, e, nil)
	var results []pending
	for _, m := range renderEvent(e) {
		results = append(results, b.out.postPending(log, laneResult, s.Thread.Channel, s.Thread.TS, m))
	}
	err = b.awaitResults(log, results)
	switch e.Type {
	case store.EventResult:
		if e.Result != nil && e.Result.IsError {
			b.refreshStatusOf(ctx, s, blocks.PhaseFailed, e.Result.Subtype)
		} else {
			b.refreshStatusOf(ctx, s, blocks.PhaseDone)
		}
	case store.EventExit:
		if e.Exit != nil && e.Exit.Failed() {
			b.refreshStatusOf(ctx, s, blocks.PhaseFailed, e.Exit.Reason)
		}
	case store.EventError:
		b.refreshStatusOf(ctx, s, blocks.PhaseFailed, e.Text)
	case store.EventInterrupted:
		b.refreshStatusOf(ctx, s, blocks.PhaseStopped)
	case store.EventRefused:
		// A refused session is failed (the worker stores that before it
		// tells); a refused input leaves the session as it was.
		if s.State == store.SessionFailed {
			b.refreshStatusOf(ctx, s, blocks.PhaseFailed, "slackgate refused to run it")
		}
	case store.EventAssistantText:
		b.refreshStatusOf(ctx, s, blocks.PhaseWorking)
	}
	return err
}

// awaitResults waits (see awaitWrite) for posts queued in one lane of one
// thread. They go out in order, so once the last is done all are.
func (b *Bot) awaitResults(log zerolog.Logger, results []pending) error {
	if len(results) == 0 {
		return nil
	}
	return b.awaitWrite(log, results[len(results)-1], func(last opResult) error {
		for _, w := range results[:len(results)-1] {
			if r := <-w.res; r.err != nil {
				return r.err
			}
		}
		return last.err
	})
}
