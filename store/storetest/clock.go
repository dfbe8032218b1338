package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Clock is a store.Clock that moves only when a test moves it (Advance),
// so a test holds a deadline, a backoff or a heartbeat open and releases
// it when it says, instead of sleeping. It is safe for concurrent use.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*clockTimer
	asked   []time.Duration // every d given to NewTimer, in order
	changed chan struct{}   // closed and replaced whenever timers change
}

// NewClock returns a Clock that reads start until it is moved.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start, changed: make(chan struct{})}
}

type clockTimer struct {
	clock *Clock
	at    time.Time
	fired chan time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches now+d, or at
// once when d <= 0, as time.NewTimer does.
func (c *Clock) NewTimer(d time.Duration) store.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &clockTimer{clock: c, at: c.now.Add(d), fired: make(chan time.Time, 1)}
	c.asked = append(c.asked, d)
	if d <= 0 {
		t.fired <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.signal()
	return t
}

// signal wakes WaitTimers; c.mu is held.
func (c *Clock) signal() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Advance moves the clock by d and fires every timer then due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			keep = append(keep, t)
			continue
		}
		t.fired <- c.now
	}
	clear(c.timers[len(keep):])
	c.timers = keep
	c.signal()
}

// Timers returns how many timers wait to fire.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Asked returns every duration a timer was asked for so far, in order.
func (c *Clock) Asked() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// WaitTimers returns once at least n timers wait to fire, so a test moves
// the clock only after the code under test armed its timer; ctx.Err() if
// ctx ends first.
func (c *Clock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, changed := len(c.timers), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// AwaitTimers is WaitTimers for a test: it returns, once at least n
// timers wait, every duration a timer was asked for so far, and fails t
// when none come within 10 s.
func (c *Clock) AwaitTimers(t testing.TB, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.WaitTimers(ctx, n); err != nil {
		t.Fatalf("no one waited on the clock (want %d timers): %v", n, err)
	}
	return c.Asked()
}

func (t *clockTimer) C() <-chan time.Time { return t.fired }

// Stop removes the timer; false when it fired (or was stopped) before.
func (t *clockTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = slices.Delete(c.timers, i, i+1)
			c.signal()
			return true
		}
	}
	return false
}
