package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slackgate/slackgate/store"
)

// An approval API request waits for a person until its deadline; a client
// that dies or stops polling must not leave its card open forever. So each
// bot with the API on runs expireAPIRequests: it settles every API request
// past its deadline as expired, which the card then shows. It wakes at the
// earliest deadline it knows of (requests created through this bot tell it
// theirs at once) and at least every ReconcileInterval, which covers the
// requests of a replica that went away. Replicas racing to expire one
// request settle it once: store.Decide is exactly-once. A poll that finds
// its request past the deadline settles it the same way.

// apiExpiredMessage is what an expired API request's card and client say.
const apiExpiredMessage = "Nobody answered this request before its deadline."

// apiExpiry tells the sweeper about deadlines it has not listed yet.
type apiExpiry struct {
	mu   sync.Mutex
	next time.Time
	wake chan struct{}
}

func newAPIExpiry() apiExpiry { return apiExpiry{wake: make(chan struct{}, 1)} }

// due announces a new request's deadline.
func (e *apiExpiry) due(t time.Time) {
	e.mu.Lock()
	if e.next.IsZero() || t.Before(e.next) {
		e.next = t
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// take returns the earliest deadline announced since the last take.
func (e *apiExpiry) take() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.next
	e.next = time.Time{}
	return t
}

// expireAPIRequests runs until ctx ends (nil), expiring API requests at
// their deadlines by the bot's clock.
func (b *Bot) expireAPIRequests(ctx context.Context) error {
	next := b.expireDue(ctx)
	for {
		wait := b.cfg.ReconcileInterval
		if !next.IsZero() {
			wait = min(wait, next.Sub(b.clock.Now()))
		}
		now := b.clock.Now()
		timer := b.clock.NewTimer(wait)
		if b.expiryArmed != nil {
			b.expiryArmed(now.Add(wait))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
			next = b.expireDue(ctx)
		case <-b.apiExpiry.wake:
			timer.Stop()
			if t := b.apiExpiry.take(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
}

// expireDue settles the pending API requests past their deadline and
// returns the earliest deadline among the rest (zero: none). Errors are
// logged; the next pass tries again.
func (b *Bot) expireDue(ctx context.Context) time.Time {
	pending, err := b.st.ListPending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn().Err(err).Msg("api: list pending requests to expire")
		}
		return time.Time{}
	}
	now := b.clock.Now()
	var next time.Time
	for _, r := range pending {
		if !isAPISession(r.SessionID) || r.Deadline.IsZero() {
			continue
		}
		if now.Before(r.Deadline) {
			if next.IsZero() || r.Deadline.Before(next) {
				next = r.Deadline
			}
			continue
		}
		if _, err := b.apiExpire(ctx, r); err != nil && ctx.Err() == nil {
			b.log.Warn().Err(err).Str("request_id", r.ID).Str("session_id", r.SessionID).Msg("api: expire request; the next pass tries again")
		}
	}
	return next
}

// apiExpire settles req, past its deadline, as expired, and returns it as
// settled (by whoever settled it first).
func (b *Bot) apiExpire(ctx context.Context, req store.Request) (store.Request, error) {
	d := store.Decision{Outcome: store.OutcomeExpired, At: b.clock.Now(), Message: apiExpiredMessage}
	settled, err := b.st.Decide(ctx, req.ID, d)
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		return req, fmt.Errorf("bot: expire api request %s: %w", req.ID, err)
	}
	if err == nil {
		b.log.Info().Str("request_id", req.ID).Str("session_id", req.SessionID).Msg("api: request expired")
	}
	return settled, nil
}
