package relay_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// BenchmarkTwentyApprovalsInProcess is the floor of the 20-approval session
// without Slack: the same CLI and script as cmd/slackgate's
// BenchmarkTwentyApprovals, each request allowed straight through the
// store the moment it appears.
//
//	CLAUDE_BIN=… go test -run '^$' -bench TwentyApprovalsInProcess -benchtime 3x ./relay
//
// Measured 2026-11-23 (machine shared with other builds): 2.5 s for the 20.
func BenchmarkTwentyApprovalsInProcess(b *testing.B) {
	const n = 20
	step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
		i := len(req.ToolResults())
		if i >= n {
			return relaytest.Text("all done")
		}
		return relaytest.ToolUse(fmt.Sprint("toolu_", i), "Bash", map[string]any{"command": fmt.Sprintf("echo %d > out-%d.txt", i, i), "description": "bench"})
	})
	for range b.N {
		b.StopTimer()
		steps := make([]relaytest.Step, n+1)
		for i := range steps {
			steps[i] = step
		}
		h := newHarness(b, "", steps)
		b.StartTimer()
		start := time.Now()
		h.startSession("run them")
		for range n {
			h.decide(h.waitRequest().ID, store.Decision{Outcome: store.OutcomeAllow, By: "U1"})
		}
		if res := h.waitResult(); res.IsError {
			b.Fatalf("turn failed: %+v", res)
		}
		b.ReportMetric(time.Since(start).Seconds(), "total-s")
	}
}
