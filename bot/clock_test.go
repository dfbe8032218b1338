package bot

import (
	"context"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/storetest"
)

// newFakeClock is the clock bot's tests move by hand, so they hold the
// outbox's pacing and backoff, the sealer's looks and the caches' expiry
// open and release them.
func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}

// waitTimers returns once at least n timers wait on clock (someone waits
// on it), with every duration a timer was asked for so far; it fails t
// when none comes within 10 s.
func waitTimers(t *testing.T, clock *storetest.Clock, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := clock.WaitTimers(ctx, n); err != nil {
		t.Fatalf("no one waited on the clock (want %d timers): %v", n, err)
	}
	return clock.Asked()
}
