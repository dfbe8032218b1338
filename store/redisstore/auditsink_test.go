package redisstore_test

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/storetest"
)

func TestAuditSinks(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			storetest.RunAuditSinks(t, func(tb testing.TB) storetest.AuditSinksBackend {
				prefix := uniquePrefix()
				tb.Cleanup(func() { dropPrefix(tb, url, prefix) })
				return storetest.AuditSinksBackend{
					Store: open(tb, url, prefix, testOptions...), Second: open(tb, url, prefix, testOptions...),
					// A lapse is real time on Redis, as for heartbeats
					// (workers_test.go): long enough that a loaded machine
					// stalling between two calls does not lapse a claim.
					TTL:  time.Second,
					Pass: func(_ testing.TB, d time.Duration) { time.Sleep(d) },
				}
			})
		})
	}
}
