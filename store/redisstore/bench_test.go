package redisstore_test

import (
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"
)

// BenchmarkListPending10k: what a bot starting up reads to reconcile, with
// 10,000 requests pending over 2,500 sessions; and what "has this session
// pending requests" reads among them (the session's own index), listed or
// counted.
//
//	.ci/with-redis.sh go test -run '^$' -bench ListPending10k -benchtime 20x -count 3 ./store/redisstore
//
// Measured 2026-11-23 (load average 7–11), one server and a 3-node cluster:
// all 10,000 per call 79–117 ms (median 90) and 99–152 ms (median 114),
// well inside the 2 s a bot may spend reconciling them at start (two
// pipelines whatever their number: one read per shard, then one per
// request); one session's, listed 0.07–0.11 and 0.22–0.25 ms. Counted
// (16:50, -benchtime 200x -benchmem): 0.16–0.19 ms and 3.6 KB on one
// server, 0.17–0.22 ms and 5.1 KB on the cluster, where listing took
// 0.21–0.27 ms and 11.9 KB, 0.24–0.26 ms and 13.5 KB.
func BenchmarkListPending10k(b *testing.B) {
	const n, perSession = 10_000, 4
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			url := srv.url(b)
			prefix := uniquePrefix()
			b.Cleanup(func() { dropPrefix(b, url, prefix) })
			s := open(b, url, prefix)
			ctx := b.Context()
			var g errgroup.Group
			g.SetLimit(32)
			for i := range n {
				g.Go(func() error {
					return s.CreateRequest(ctx, newTestRequest(fmt.Sprint("req-", i), fmt.Sprint("sess-", i/perSession)))
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
			var once sync.Once
			b.Run("All", func(b *testing.B) {
				for b.Loop() {
					got, err := s.ListPending(ctx, "")
					if err != nil {
						b.Fatal(err)
					}
					once.Do(func() {
						if len(got) != n {
							b.Fatalf("listed %d, want %d", len(got), n)
						}
					})
				}
			})
			b.Run("OneSession", func(b *testing.B) {
				for b.Loop() {
					got, err := s.ListPending(ctx, "sess-7")
					if err != nil {
						b.Fatal(err)
					}
					if len(got) != perSession {
						b.Fatalf("listed %d, want %d", len(got), perSession)
					}
				}
			})
			// What a bot's status line reads on every card and outcome.
			b.Run("CountOneSession", func(b *testing.B) {
				for b.Loop() {
					n, err := s.CountPending(ctx, "sess-7")
					if err != nil {
						b.Fatal(err)
					}
					if n != perSession {
						b.Fatalf("counted %d, want %d", n, perSession)
					}
				}
			})
		})
	}
}
