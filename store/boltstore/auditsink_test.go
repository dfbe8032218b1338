package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestAuditSinks(t *testing.T) {
	storetest.RunAuditSinks(t, func(tb testing.TB) storetest.AuditSinksBackend {
		c := storetest.NewClock(time.Now())
		s, err := boltstore.Open(filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithClock(c), boltstore.WithSweepEvery(0))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close() })
		return storetest.AuditSinksBackend{
			Store: s, Second: s, TTL: 30 * time.Second,
			Pass: func(_ testing.TB, d time.Duration) { c.Advance(d) },
		}
	})
}
