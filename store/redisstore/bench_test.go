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
