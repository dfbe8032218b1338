package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestWorkers(t *testing.T) {
	storetest.RunWorkers(t, func(tb testing.TB) storetest.WorkersBackend {
		c := storetest.NewClock(time.Now())
		s, err := boltstore.Open(filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithClock(c), boltstore.WithSweepEvery(0))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return storetest.WorkersBackend{
			Store: s, TTL: 30 * time.Second,
			Pass: func(_ testing.TB, d time.Duration) { c.Advance(d) },
			Remaining: func(tb testing.TB, worker string) time.Duration {
				until, err := boltstore.HeartbeatUntil(s, worker)
				if err != nil {
					tb.Fatal(err)
				}
				return until.Sub(c.Now())
			},
		}
	})
}
