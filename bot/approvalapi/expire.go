package approvalapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slackgate/slackgate/store"
)

// A request waits for a person until its deadline; a client that dies or
// stops polling must not leave its card open forever. So the server's Run
// settles every API request past its deadline as expired (through
// Host.Settle), which the card then shows. It wakes at the earliest
// deadline it knows of (requests created through this server tell it
// theirs at once) and at least every ServerConfig.Sweep, which covers the
// requests of a replica that went away. Replicas racing to expire one
// request settle it once: settling is exactly-once. A poll that finds its
// request past the deadline settles it the same way.

// expiredMessage is what an expired request's card and client say.
const expiredMessage = "Nobody answered this request before its deadline."

// expiry tells the sweeper about deadlines it has not listed yet.
type expiry struct {
	mu   sync.Mutex
	next time.Time
	wake chan struct{}
}

func newExpiry() expiry { return expiry{wake: make(chan struct{}, 1)} }

// due announces a new request's deadline.
func (e *expiry) due(t time.Time) {
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
func (e *expiry) take() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.next
	e.next = time.Time{}
	return t
}

// Run expires API requests at their deadlines by the server's clock until
// ctx ends (nil).
func (s *Server) Run(ctx context.Context) error {
	next := s.expireDue(ctx)
	for {
		wait := s.cfg.Sweep
		if !next.IsZero() {
			wait = min(wait, next.Sub(s.clock.Now()))
		}
		now := s.clock.Now()
		timer := s.clock.NewTimer(wait)
		if s.armed != nil {
			s.armed(now.Add(wait))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
			next = s.expireDue(ctx)
		case <-s.expiry.wake:
			timer.Stop()
			if t := s.expiry.take(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
}

// expireDue settles the pending API requests past their deadline and
// returns the earliest deadline among the rest (zero: none). Errors are
// logged; the next pass tries again.
func (s *Server) expireDue(ctx context.Context) time.Time {
	pending, err := s.st.ListPending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("api: list pending requests to expire")
		}
		return time.Time{}
	}
	now := s.clock.Now()
	var next time.Time
	for _, r := range pending {
		if !IsSession(r.SessionID) || r.Deadline.IsZero() {
			continue
		}
		if now.Before(r.Deadline) {
			if next.IsZero() || r.Deadline.Before(next) {
				next = r.Deadline
			}
			continue
		}
		if _, err := s.expire(ctx, r); err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Str("request_id", r.ID).Str("session_id", r.SessionID).Msg("api: expire request; the next pass tries again")
		}
	}
	return next
}

// expire settles req, past its deadline, as expired, and returns it as
// settled (by whoever settled it first).
func (s *Server) expire(ctx context.Context, req store.Request) (store.Request, error) {
	d := store.Decision{Outcome: store.OutcomeExpired, At: s.clock.Now(), Message: expiredMessage}
	settled, err := s.host.Settle(ctx, req.ID, d)
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		return req, fmt.Errorf("approvalapi: expire request %s: %w", req.ID, err)
	}
	if err == nil {
		s.log.Info().Str("request_id", req.ID).Str("session_id", req.SessionID).Msg("api: request expired")
	}
	return settled, nil
}
