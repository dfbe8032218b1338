package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestWorkers(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { workersOn(t, srv.url(t)) })
	}
}

func workersOn(t *testing.T, url string) {
	storetest.RunWorkers(t, func(tb testing.TB) storetest.WorkersBackend {
		prefix := uniquePrefix()
		tb.Cleanup(func() { dropPrefix(tb, url, prefix) })
		s := open(tb, url, prefix, testOptions...)
		return storetest.WorkersBackend{
			// A lapse is real time on Redis (the subtests wait theirs out
			// side by side). Long enough that a loaded machine stalling
			// between a heartbeat and the check after it does not lapse
			// it: at 200 ms, a CI machine running every package at once
			// did.
			Store: s, TTL: time.Second,
			// Redis' clock cannot be moved: d of real time passes, and a
			// key whose TTL ran out is gone for every command after, so
			// the wait is exact rather than hopeful.
			Pass: func(_ testing.TB, d time.Duration) { time.Sleep(d) },
			Remaining: func(tb testing.TB, worker string) time.Duration {
				d, err := s.Client().PTTL(context.Background(), redisstore.Key(prefix, "heartbeat", worker)).Result()
				if err != nil {
					tb.Fatal(err)
				}
				return d
			},
		}
	})
}
