package relay_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
)

// BenchmarkIdleSessionMemory measures what one idle session costs the
// worker's own heap, its CLI aside: 200 sessions on the stand-in CLI
// (relay/relaytest/standin) each run a turn and wait between turns, and
// the Go heap in use (runtime.MemStats.HeapInuse, after GC) is compared
// with the worker's before the first session. Target: at most 64 KB a
// session.
//
//	go test -run '^$' -bench IdleSessionMemory -benchtime 1x -count 3 ./relay
//
// Measured 2026-11-23 12:52 UTC (load average 7.2–7.9): 29–45 KB a session
// with 4 KiB pipe buffers (a long line still passes whole: the reader
// grows). Before, exec's 32 KiB copy buffers for stdout and stderr and a
// 64 KiB line reader, held for the process's life: 152–173 KB.
func BenchmarkIdleSessionMemory(b *testing.B) {
	const sessions = 200
	standin := filepath.Join(b.TempDir(), "standin")
	if out, err := exec.Command("go", "build", "-o", standin, "github.com/slackgate/slackgate/relay/relaytest/standin").CombinedOutput(); err != nil {
		b.Fatalf("go build standin: %v\n%s", err, out)
	}
	for range b.N {
		b.StopTimer()
		h := newHarness(b, standin, nil, func(c *relay.Config) {
			c.MaxSessions = sessions
			c.Env = append(c.Env, "CLAUDE_CODE_STANDIN_REQUESTS=0")
		})
		before := heapInUse()
		b.StartTimer()
		ids := make([]string, sessions)
		for i := range ids {
			ids[i] = h.startSession("hello")
		}
		for _, id := range ids {
			if res := h.waitEventOf(id, "the result", ofType(store.EventResult)).Result; res.IsError {
				b.Fatalf("session %s: %+v", id, res)
			}
		}
		if err := h.worker.WaitSessions(h.ctx, func(n map[string]int) bool { return n[relay.SessionsIdle] == sessions }); err != nil {
			b.Fatalf("the sessions never all went idle: %v (%v)", err, h.worker.Sessions())
		}
		b.StopTimer()
		after := heapInUse()
		b.ReportMetric(float64(after-before)/sessions/1024, "heap-KB/session")
		h.stopWorker()
	}
}

// heapInUse is the heap in use once the garbage is collected.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}
