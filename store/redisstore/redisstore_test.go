package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// servers are the two deployments the suite runs on.
var servers = []struct {
	name string
	url  func(testing.TB) string
}{
	{"Single", redistest.URL},
	{"Cluster", redistest.ClusterURL},
}

// testRedelivery is the base redelivery delay of the suite's stores.
const testRedelivery = 20 * time.Millisecond

// testOptions make abandoned events come back quickly, so the suite's
// redelivery tests take well under a second.
var testOptions = []redisstore.Option{
	redisstore.WithClaimIdle(300 * time.Millisecond),
	redisstore.WithRedeliveryDelay(testRedelivery),
}

// uniquePrefix gives every store its own key space on the shared test
// server, so tests may run in parallel without flushing.
func uniquePrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "sgtest-" + hex.EncodeToString(b[:])
}

// open returns a Store on its own prefix whose keys are deleted at cleanup.
func open(tb testing.TB, url, prefix string, opts ...redisstore.Option) *redisstore.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := redisstore.New(ctx, url, append([]redisstore.Option{redisstore.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// prefixKeys lists every key of a prefix (SCAN on every primary, test-only;
// SCAN also drops keys whose TTL has passed as it meets them).
func prefixKeys(tb testing.TB, c redis.UniversalClient, prefix string) []string {
	tb.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var out []string
	scan := func(ctx context.Context, c *redis.Client) error {
		// "{prefix}:…" (the global slot) and "{prefix:kind:id}:…".
		for _, pattern := range []string{"{" + prefix + "}:*", "{" + prefix + ":*"} {
			iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				mu.Lock()
				out = append(out, iter.Val())
				mu.Unlock()
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	switch c := c.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		tb.Fatalf("scan: %v", err)
	}
	return out
}

// dropPrefix deletes every key of a prefix.
func dropPrefix(tb testing.TB, url, prefix string) {
	tb.Helper()
	c, err := redisstore.Dial(url)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	for _, k := range prefixKeys(tb, c, prefix) {
		if err := c.Del(context.Background(), k).Err(); err != nil {
			tb.Errorf("cleanup: del %s: %v", k, err)
		}
	}
}

// newSuiteStore is the suite's factory: a fresh prefix per store; the second
// client is a separate Store (its own pool and pub/sub connection) on the
// same prefix.
func newSuiteStore(url string) (storetest.NewFunc, storetest.Option) {
	var prefixes sync.Map // store.Store → its prefix
	newStore := func(tb testing.TB) store.Store {
		prefix := uniquePrefix()
		tb.Cleanup(func() { dropPrefix(tb, url, prefix) }) // runs after Close (cleanups run last-in first-out)
		s := open(tb, url, prefix, testOptions...)
		prefixes.Store(store.Store(s), prefix)
		return s
	}
	second := storetest.WithSecondClient(func(tb testing.TB, s store.Store) store.Store {
		prefix, ok := prefixes.Load(s)
		if !ok {
			tb.Fatal("second client asked for a store the factory did not make")
		}
		return open(tb, url, prefix.(string), testOptions...)
	})
	return newStore, second
}

func TestConformance(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			newStore, second := newSuiteStore(srv.url(t))
			storetest.Run(t, newStore, second, storetest.WithRedeliveryDelay(testRedelivery))
		})
	}
}

func BenchmarkStore(b *testing.B) {
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			newStore, _ := newSuiteStore(srv.url(b))
			storetest.Bench(b, newStore)
		})
	}
}

// BenchmarkAuditAppend: the cost of one audit entry (storetest.BenchAudit).
// Before the audit chain (d641776) and after, interleaved, three rounds of
// -benchtime 2000x on 2026-11-26 at load average 7-12 (2 cores shared):
//
//	                              before          after
//	one server, serial p50        70-93 µs        352-370 µs
//	one server, 16 at once        63-83 µs/op     340-538 µs/op
//	cluster, serial p50           77-105 µs       373-431 µs
//	cluster, 16 at once           40-68 µs/op     479-638 µs/op
//	Redis CPU per append          6.6-8.9 µs      208-247 µs (INFO commandstats)
//	CreateDecideWait p50, server  589-624 µs      769-1124 µs (two appends)
//	CreateDecideWait p50, cluster 1165-1232 µs    1615-1689 µs
//
// The script's SHA-256 compression in Lua is most of it (a script doing
// only that took 152 µs at the same load); AppendAudit also reads the
// session's thread first, one round trip more.
func BenchmarkAuditAppend(b *testing.B) {
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			newStore, _ := newSuiteStore(srv.url(b))
			storetest.BenchAudit(b, newStore)
		})
	}
}
