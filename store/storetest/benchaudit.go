package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// BenchAudit measures appending to the audit log: one tool_ran entry
// (AppendAudit) of a session that exists, from one goroutine (with p50 and
// p99, as Bench) and from 16 at once (what several bots and workers
// appending together cost).
func BenchAudit(b *testing.B, newStore NewFunc) {
	entry := func(sid string) store.AuditEntry {
		return store.AuditEntry{
			Action: store.AuditToolRan, SessionID: sid, Tool: "Bash", ReportedBy: "api:laptop", Result: store.ToolSucceeded,
			ToolUseID: "toolu_bench", Message: "go test ./... -run TestAudit -count 1",
		}
	}
	setup := func(b *testing.B) (store.Store, context.Context, string) {
		s := newStore(b)
		ctx := b.Context()
		sid := uniq("bench-sess")
		err := s.CreateSession(ctx, store.Session{ID: sid, State: store.SessionRunning,
			Thread: store.MessageRef{Channel: "C0BENCH", TS: "1700000000.000100"}})
		if err != nil {
			b.Fatal(err)
		}
		return s, ctx, sid
	}
	b.Run("Serial", func(b *testing.B) {
		s, ctx, sid := setup(b)
		var lat []time.Duration
		for b.Loop() {
			start := time.Now()
			if err := s.AppendAudit(ctx, entry(sid)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
	b.Run("Parallel16", func(b *testing.B) {
		s, ctx, sid := setup(b)
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := s.AppendAudit(ctx, entry(sid)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
