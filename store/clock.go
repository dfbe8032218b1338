package store

import (
	"context"
	"time"
)

// Clock is the time source of everything that stamps a time or waits on
// one: decisions and deadlines, the bot's pacing and caches, the worker's
// heartbeats and idle timers, the embedded store's retention. Production
// uses WallClock; tests give every part one storetest.Clock and move it by
// hand instead of sleeping.
type Clock interface {
	Now() time.Time
	// NewTimer fires once d has passed; at once when d <= 0.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Clock's user needs.
type Timer interface {
	C() <-chan time.Time
	// Stop reports whether it stopped the timer before it fired.
	Stop() bool
}

// WallClock is the real Clock: time.Now and time.NewTimer.
type WallClock struct{}

// Now returns time.Now().
func (WallClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (WallClock) NewTimer(d time.Duration) Timer { return wallTimer{timer: time.NewTimer(d)} }

type wallTimer struct{ timer *time.Timer }

func (w wallTimer) C() <-chan time.Time { return w.timer.C }
func (w wallTimer) Stop() bool          { return w.timer.Stop() }

// Sleep waits d on c and returns nil, or returns ctx.Err() when ctx ends
// first (at once when d <= 0 and ctx has ended).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
