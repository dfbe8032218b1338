package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// BenchmarkApprovalRoundTrip measures what a person in Slack waits for, with
// the whole product and the real CLI: a mention until its card shows up
// (Claude Code starting, the model's first reply, the request stored,
// rendered and posted), and the Approve click until the command's result
// reaches the model (decision stored, control_response written, the tool
// run). Each iteration is a new session.
//
//	CLAUDE_BIN=… go test -run '^$' -bench ApprovalRoundTrip -benchtime 20x ./cmd/slackgate
func BenchmarkApprovalRoundTrip(b *testing.B) {
	for _, tr := range []transport{socketMode, httpMode} {
		b.Run(string(tr), func(b *testing.B) {
			// Every session asks to run a command named after its prompt,
			// then says done once the result is in.
			step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
				if rs := req.ToolResults(); len(rs) > 0 {
					return relaytest.Text("done")
				}
				n := strings.TrimPrefix(req.LastUserText(), "run ")
				return relaytest.ToolUse("toolu_"+n, "Bash", bash("echo "+n+" > out-"+n+".txt", "bench"))
			})
			steps := make([]relaytest.Step, 2*b.N)
			for i := range steps {
				steps[i] = step
			}
			// Finished sessions give their process up quickly, so the
			// machine runs one or two claude processes at a time.
			a := startApp(b, options{transport: tr, extraEnv: []string{"SESSION_IDLE_TIMEOUT=1s"}}, steps...)
			toCard := make([]time.Duration, 0, b.N)
			toResult := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				n := fmt.Sprint(i)
				start := time.Now()
				thread := a.mention("run " + n)
				card := a.card(thread, "out-"+n+".txt")
				toCard = append(toCard, time.Since(start))
				start = time.Now()
				a.click(lee, card.Ref(), "Approve")
				if res := a.toolResult("toolu_" + n); res.IsError {
					b.Fatalf("iteration %d: the command failed: %q", i, res.Content)
				}
				toResult = append(toResult, time.Since(start))
			}
			b.StopTimer()
			b.ReportMetric(p50(toCard), "mention-to-card-p50-ms")
			b.ReportMetric(p50(toResult), "approve-to-result-p50-ms")
		})
	}
}

func p50(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}
