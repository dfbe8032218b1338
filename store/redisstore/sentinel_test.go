package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// TestSentinelURLReachesThePrimary: a redis+sentinel:// URL finds the
// primary through a real Sentinel, and a request makes its round trip there.
func TestSentinelURLReachesThePrimary(t *testing.T) {
	primary := redistest.Start(t)
	sentinel := redistest.StartSentinel(t, primary.Port())
	url := fmt.Sprintf("redis+sentinel://127.0.0.1:%d/main/0", sentinel.Port())
	prefix := uniquePrefix()
	s := open(t, url, prefix)
	ctx := t.Context()
	r := newTestRequest("req-1", "sess-1")
	must(t, s.CreateRequest(ctx, r))
	got := make(chan error, 1)
	go func() {
		_, err := s.WaitDecision(ctx, r.ID)
		got <- err
	}()
	_, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
	must(t, err)
	must(t, <-got)
	// The data is on the primary the Sentinel names.
	direct := open(t, primary.URL(), prefix)
	back, err := direct.GetRequest(ctx, r.ID)
	must(t, err)
	if back.Decision == nil || back.Decision.Outcome != store.OutcomeAllow {
		t.Errorf("the primary holds %+v", back)
	}
}
