package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// consume shows the store's events in Slack until ctx ends. Each event is
// acknowledged only once Slack has what it shows, so a crash or a Slack
// outage leads to a redelivery, not a gap in the thread.
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

// showRequest posts a request's card in its session's thread, records
// where (SetCard), and attaches the full input when the card had to
// truncate it.
func (b *Bot) showRequest(ctx context.Context, log zerolog.Logger, id string) error {
	r, err := b.st.GetRequest(ctx, id)
	if err != nil {
		return fmt.Errorf("bot: get request %s: %w", id, err)
	}
	s, err := b.st.GetSession(ctx, r.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", r.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	card := renderCard(r, s)
	if !r.Card.IsZero() {
		// A redelivery after the card was posted: bring it up to date
		// rather than posting a second one.
		return b.out.Update(ctx, log, r.Card, card.msg)
	}
	ts, err := b.out.Post(ctx, log, s.Thread.Channel, s.Thread.TS, card.msg)
	if err != nil {
		if !retryable(ctx, err) {
			// Slack refused the card itself: say so in the thread rather
			// than leave people unaware that Claude is waiting.
			notice := fmt.Sprintf("⚠️ Claude is waiting for a decision on %s, but its card could not be shown in Slack (%s). "+
				"The request will expire unless it is decided another way; the bot's log has the details.",
				"`"+blocks.Escape(r.ToolName)+"`", blocks.Escape(slackErrCode(err)))
			if _, perr := b.out.Post(ctx, log, s.Thread.Channel, s.Thread.TS, outMsg{Text: notice}); perr != nil {
				log.Error().Err(perr).Msg("post card failure notice")
			}
		}
		return err
	}
	ref := store.MessageRef{Channel: s.Thread.Channel, TS: ts}
	// Record the card even when the bot is stopping: an unrecorded card
	// would be posted a second time after a restart.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	err = b.st.SetCard(sctx, r.ID, ref)
	cancel()
	if err != nil {
		return fmt.Errorf("bot: set card %s: %w", r.ID, err)
	}
	if card.fullInput != "" {
		name := cmp.Or(card.fullInputName, "request-"+r.ID+".txt")
		if err := b.out.Upload(ctx, log, s.Thread.Channel, s.Thread.TS, name, "Full input of "+r.ToolName, card.fullInput); err != nil {
			// The card is up; a missing attachment is not worth posting it twice.
			log.Error().Err(err).Msg("upload full input")
		}
	}
	// Settled while it was being posted (another replica showed the
	// settlement before the card existed): show the final state now.
	if now, err := b.st.GetRequest(ctx, r.ID); err == nil && !now.Pending() && r.Pending() {
		if err := b.out.Update(ctx, log, ref, renderCard(now, s).msg); err != nil {
			return err
		}
	}
	b.refreshStatus(ctx, s.ID, statusKeep)
	return nil
}

// slackErrCode is Slack's short error code when there is one.
func slackErrCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return "error"
}

// showSettled replaces a card's buttons with its outcome.
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
	if err := b.out.Update(ctx, log.With().Str("channel", r.Card.Channel).Logger(), r.Card, renderCard(r, s).msg); err != nil {
		return err
	}
	b.refreshStatus(ctx, s.ID, statusKeep)
	return nil
}

// showSessionEvent posts what Claude said and did in the thread and moves
// the status line.
func (b *Bot) showSessionEvent(ctx context.Context, log zerolog.Logger, e store.Event) error {
	s, err := b.st.GetSession(ctx, e.SessionID)
	if err != nil {
		return fmt.Errorf("bot: get session %s: %w", e.SessionID, err)
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	for _, m := range renderEvent(e) {
		if _, err := b.out.Post(ctx, log, s.Thread.Channel, s.Thread.TS, m); err != nil {
			return err
		}
	}
	switch e.Type {
	case store.EventResult:
		if e.Result != nil && e.Result.IsError {
			b.refreshStatus(ctx, s.ID, blocks.PhaseFailed, e.Result.Subtype)
		} else {
			b.refreshStatus(ctx, s.ID, blocks.PhaseDone)
		}
	case store.EventExit:
		if e.Exit != nil && e.Exit.Failed() {
			b.refreshStatus(ctx, s.ID, blocks.PhaseFailed, e.Exit.Reason)
		}
	case store.EventError:
		b.refreshStatus(ctx, s.ID, blocks.PhaseFailed, e.Text)
	case store.EventInterrupted:
		b.refreshStatus(ctx, s.ID, blocks.PhaseStopped)
	case store.EventAssistantText, store.EventToolUse:
		b.refreshStatus(ctx, s.ID, blocks.PhaseWorking)
	}
	return nil
}
