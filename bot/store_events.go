package bot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// consumer shows the store's events in Slack: cards through the cards'
// post and outcome (as funcs), what Claude said and did in the thread,
// the status line and the fold through statusLines.
type consumer struct {
	st      consumerStore
	group   string // consumerGroup
	name    string // Config.ConsumerName
	log     zerolog.Logger
	out     *outbox.Outbox
	work    *tasks
	status  *statusLines
	post    func(ctx context.Context, log zerolog.Logger, id string, lost bool) error
	outcome func(ctx context.Context, log zerolog.Logger, id string) error
}

// consumerStore is what the consumer reads in the store.
type consumerStore interface {
	Consume(ctx context.Context, group, consumer string, fn func(context.Context, store.Event) error) error
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// run shows the store's events in Slack until ctx ends. An event is
// acknowledged once Slack has what it shows, or once the write has waited
// handOff in the outbox (see awaitWrite) and a crash losing it does no
// harm that lasts: cards says why for a request's card and outcome; a lost
// result or progress line is a gap in the thread, not a stuck request.
func (c *consumer) run(ctx context.Context) error {
	if err := c.st.Consume(ctx, c.group, c.name, c.handle); err != nil && ctx.Err() == nil {
		return fmt.Errorf("bot: consume events: %w", err)
	}
	return nil
}

// handle is the Consume callback. It returns an error only when a
// retry may help (Slack or the store unreachable, shutting down); an event
// that cannot be shown (its session is gone, Slack refused the payload)
// is logged and acknowledged.
func (c *consumer) handle(ctx context.Context, e store.Event) error {
	log := c.log.With().Str("session_id", e.SessionID).Str("event", string(e.Type)).Logger()
	if e.RequestID != "" {
		log = log.With().Str("request_id", e.RequestID).Logger()
	}
	var err error
	switch e.Type {
	case store.EventRequestCreated:
		err = c.post(ctx, log, e.RequestID, newCard)
	case store.EventRequestSettled:
		err = c.outcome(ctx, log, e.RequestID)
	case store.EventSessionStarted:
		c.status.refresh(ctx, e.SessionID, blocks.PhaseWorking)
	case store.EventToolUse, store.EventToolResult:
		err = c.fold(ctx, log, e)
	default:
		err = c.showSessionEvent(ctx, log, e)
	}
	if err == nil {
		return nil
	}
	if !retryable(ctx, err) {
		log.Error().Err(err).Msg("event cannot be shown in slack; skipping it")
		return nil
	}
	if errors.Is(err, errOutcomeNotShown) {
		// Routine under Slack's update budget; see cards.outcome.
		log.Debug().Err(err).Msg("event not shown yet; it will be redelivered")
		return err
	}
	log.Warn().Err(err).Msg("event not shown yet; it will be redelivered")
	return err
}

// retryable reports whether handling an event again may succeed.
func retryable(ctx context.Context, err error) bool {
	switch {
	case ctx.Err() != nil, errors.Is(err, outbox.ErrClosed):
		return true
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
		return false
	}
	return !outbox.Permanent(err)
}

// handOff is how long the event consumer waits for Slack to take a write
// before it goes on to the next event and leaves the rest to a task. Events
// are consumed one at a time for every channel, so a write waiting for its
// channel's budget must not hold up a card in another channel. The outbox
// never drops the write while the bot runs; a crash loses it (see cards).
const handOff = 200 * time.Millisecond

// startWait is how long the consumer waits for a write to leave the
// outbox: one whose budget allows it starts within microseconds, one that
// has not started by then waits for Slack's budget, and waiting for it here
// would only hold up the events behind it.
const startWait = 20 * time.Millisecond

// awaitWrite waits for w while it is being sent, up to handOff, and runs
// then with the outcome; a write still queued after startWait, or still in
// flight after handOff, finishes in a task and awaitWrite returns nil.
func (t *tasks) awaitWrite(log zerolog.Logger, w outbox.Pending, then func(outbox.Result) error) error {
	// Wall time on purpose: this bounds how the consumer shares its time,
	// it is no deadline a test would move by hand.
	timer := time.NewTimer(startWait)
	defer timer.Stop()
	select {
	case r := <-w.Done():
		return then(r)
	case <-w.Started():
		timer.Reset(handOff)
		select {
		case r := <-w.Done():
			return then(r)
		case <-timer.C:
		}
	case <-timer.C:
	}
	started := t.Go(func(context.Context) {
		if err := then(<-w.Done()); err != nil {
			log.Error().Err(err).Msg("event shown late in slack failed")
		}
	})
	if !started {
		return then(<-w.Done())
	}
	return nil
}

// fold shows a tool use or a tool's result in the turn's fold. The
// fold needs only the session's thread, which this bot may know already
// (statusEntry.thread): a turn's many tool events then read no session.
func (c *consumer) fold(ctx context.Context, log zerolog.Logger, e store.Event) error {
	s := store.Session{ID: e.SessionID}
	if thread, ok := c.status.threadOf(e.SessionID); ok {
		s.Thread = thread
	} else {
		var err error
		if s, err = c.st.GetSession(ctx, e.SessionID); err != nil {
			return fmt.Errorf("bot: get session %s: %w", e.SessionID, err)
		}
	}
	c.status.showProgress(log.With().Str("channel", s.Thread.Channel).Logger(), s, e, nil)
	return nil
}

// showSessionEvent posts what Claude said and how the turn ended in the
// results lane, and moves the status line.
func (c *consumer) showSessionEvent(ctx context.Context, log zerolog.Logger, e store.Event) error {
	s, err := c.st.GetSession(ctx, e.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", e.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	// The fold goes first, so the thread reads in the order things happened.
	c.status.showProgress(log, s, e, nil)
	var results []outbox.Pending
	for _, m := range renderEvent(e) {
		results = append(results, c.out.Post(log, outbox.LaneResult, s.Thread.Channel, s.Thread.TS, m))
	}
	err = c.awaitResults(log, results)
	switch e.Type {
	case store.EventResult:
		if e.Result != nil && e.Result.IsError {
			c.status.refreshOf(ctx, s, blocks.PhaseFailed, blocks.ResultFailure(*e.Result))
		} else {
			c.status.refreshOf(ctx, s, blocks.PhaseDone)
		}
	case store.EventExit:
		if e.Exit != nil && e.Exit.Failed() {
			c.status.refreshOf(ctx, s, blocks.PhaseFailed, e.Exit.Reason)
		}
	case store.EventError:
		c.status.refreshOf(ctx, s, blocks.PhaseFailed, e.Text)
	case store.EventInterrupted:
		c.status.refreshOf(ctx, s, blocks.PhaseStopped)
	case store.EventModeChanged:
		c.status.refreshOf(ctx, s, statusKeep)
	case store.EventRefused:
		// A refused session is failed (the worker stores that before it
		// tells); a refused input leaves the session as it was.
		if s.State == store.SessionFailed {
			c.status.refreshOf(ctx, s, blocks.PhaseFailed, "slackgate refused to run it")
		}
	case store.EventAssistantText:
		c.status.refreshOf(ctx, s, blocks.PhaseWorking)
	}
	return err
}

// awaitResults waits (see awaitWrite) for posts queued in one lane of one
// thread. They go out in order, so once the last is done all are.
func (c *consumer) awaitResults(log zerolog.Logger, results []outbox.Pending) error {
	if len(results) == 0 {
		return nil
	}
	return c.work.awaitWrite(log, results[len(results)-1], func(last outbox.Result) error {
		for _, w := range results[:len(results)-1] {
			if r := <-w.Done(); r.Err != nil {
				return r.Err
			}
		}
		return last.Err
	})
}
