package bot

import (
	"time"

	"github.com/slackgate/slackgate/store/storetest"
)

// newFakeClock is the clock bot's tests move by hand, so they hold the
// outbox's pacing and backoff, the sealer's looks and the caches' expiry
// open and release them.
func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}
