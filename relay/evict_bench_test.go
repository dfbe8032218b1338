package relay_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// BenchmarkNewSessionStart measures how long a new session waits for its
// first turn's result with the real CLI: with a free place, and on a
// worker whose only place is held by the previous session's idle process
// (which must stop first; the idle timeout, on a clock nobody advances,
// never fires). Each iteration is a new session.
//
//	CLAUDE_BIN=… go test -run '^$' -bench NewSessionStart -benchtime 20x ./relay
//
// Measured 2026-11-23, new session → its first result, p50 / max: a free
// place 568 / 901 ms; MAX_SESSIONS=1 held by an idle process 559 / 650 ms.
// An idle process gives way instead of making the session wait for
// SESSION_IDLE_TIMEOUT.
func BenchmarkNewSessionStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		max  func(n int) int
	}{
		{"free-place", func(n int) int { return n + 1 }},
		{"full-of-idle", func(int) int { return 1 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			steps := make([]relaytest.Step, b.N)
			for i := range steps {
				steps[i] = relaytest.Text("ok")
			}
			h := newHarness(b, "", steps, func(c *relay.Config) { c.MaxSessions = bc.max(b.N) })
			waits := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				id := h.startSession(fmt.Sprint("session ", i))
				if res := h.waitEventOf(id, "the result", ofType(store.EventResult)).Result; res.IsError {
					b.Fatalf("session %d: %+v", i, res)
				}
				waits = append(waits, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "to-result-p50-ms")
			b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "to-result-max-ms")
		})
	}
}
