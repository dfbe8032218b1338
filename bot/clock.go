package bot

import (
	"context"
	"time"
)

// Clock is the time source of everything in bot that waits: the outbox's
// pacing and backoff, the user group cache. Tests
// inject a clock they advance by hand instead of sleeping.
type Clock interface {
	Now() time.Time
	// After sends the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// sleep waits d on c, or returns ctx.Err() if ctx ends first.
func sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-c.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
