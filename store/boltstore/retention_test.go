package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, func(tb testing.TB) storetest.RetentionBackend {
		c := storetest.NewClock(time.Now())
		s := open(tb, filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithNoSync(),
			boltstore.WithClock(c), boltstore.WithSweepEvery(0),
			boltstore.WithRetention(time.Hour), boltstore.WithAuditRetention(24*time.Hour))
		return storetest.RetentionBackend{
			Store: s, Retention: time.Hour, AuditRetention: 24 * time.Hour,
			Pass: func(tb testing.TB, d time.Duration) {
				tb.Helper()
				// A sweep before the clock moves records where the audit
				// log stands now.
				must(tb, s.Sweep(tb.Context()))
				c.Advance(d)
				must(tb, s.Sweep(tb.Context()))
			},
			Records: func(tb testing.TB) int {
				tb.Helper()
				n, err := s.Records()
				must(tb, err)
				return n
			},
		}
	})
}

// TestSweeperRunsOnItsOwn: an open store sweeps without being asked, and
// Close stops its sweeper (goleak checks that).
func TestSweeperRunsOnItsOwn(t *testing.T) {
	c := storetest.NewClock(time.Now())
	s := open(t, filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync(),
		boltstore.WithClock(c), boltstore.WithSweepEvery(time.Millisecond), boltstore.WithRetention(time.Hour))
	ctx := t.Context()
	r := store.Request{ID: "r1", SessionID: "s1", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}}
	must(t, s.CreateRequest(ctx, r))
	_, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: c.Now()})
	must(t, err)
	c.Advance(2 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.GetRequest(ctx, r.ID); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not expire a settled request within 10s")
		}
		time.Sleep(time.Millisecond) // polls for the sweeper's tick; the deadline bounds it
	}
}
