package relay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// waitEventOf returns the oldest event of session id matching match that
// no earlier call returned. Unlike waitEvent it keeps other sessions'
// events for later calls, so a test can follow several sessions at once.
func (h *harness) waitEventOf(id, what string, match func(store.Event) bool) store.Event {
	h.tb.Helper()
	if h.used == nil {
		h.used = make(map[int]bool)
	}
	for i := 0; ; i++ {
		for ; i < len(h.seen); i++ {
			if e := h.seen[i]; !h.used[i] && e.SessionID == id && match(e) {
				h.used[i] = true
				return e
			}
		}
		select {
		case e := <-h.events:
			h.seen = append(h.seen, e)
			i-- // look at the new event
		case <-h.ctx.Done():
			h.tb.Fatalf("timed out waiting for %s of %s; events so far: %s", what, id, h.describe())
		}
	}
}

// sendTo queues a message for session id.
func (h *harness) sendTo(id, text string) {
	h.tb.Helper()
	h.queue(store.Input{SessionID: id, Text: text, User: "U1"}, botKey)
}

func maxOne(c *relay.Config) { c.MaxSessions = 1 }

func TestE2EIdleProcessGivesWayToANewSessionAndResumesLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{
		relaytest.Text("noted"), relaytest.Text("hi from B"), relaytest.Text("it was MANGO"),
	}, maxOne)
	a := h.startSession("remember the word MANGO")
	if e := h.waitEventOf(a, "A's start", ofType(store.EventSessionStarted)); !strings.Contains(e.Text, "resume false") {
		t.Errorf("A's first start: %q", e.Text)
	}
	if res := h.waitEventOf(a, "A's result", ofType(store.EventResult)).Result; res.Text != "noted" {
		t.Errorf("A's result: %+v", res)
	}

	// A's process now waits for a follow-up and the worker is full. The
	// idle timeout (an hour on a clock nobody advances) never fires: B is
	// served because A's process gives way.
	b := h.startSession("say hi")
	exit := h.waitEventOf(a, "A's exit", ofType(store.EventExit)).Exit
	if exit.Reason != "idle" || exit.Code != 0 || exit.Cause != store.ExitEvicted {
		t.Errorf("A's exit: %+v", exit)
	}
	if e := h.waitEventOf(b, "B's start", ofType(store.EventSessionStarted)); !strings.Contains(e.Text, "resume false") {
		t.Errorf("B's start: %q", e.Text)
	}
	if _, err := h.worker.PID(a); !errors.Is(err, relay.ErrNoProcess) {
		t.Errorf("A's process is still there once B's started (PID: %v); MaxSessions is 1", err)
	}
	if res := h.waitEventOf(b, "B's result", ofType(store.EventResult)).Result; res.Text != "hi from B" {
		t.Errorf("B's result: %+v", res)
	}
	checkSession(t, h, a, func(s store.Session) bool { return s.State == store.SessionIdle && s.Worker == "" && s.Started })

	// A follow-up to A resumes it, and now B's idle process gives way.
	h.sendTo(a, "what was the word?")
	if exit := h.waitEventOf(b, "B's exit", ofType(store.EventExit)).Exit; exit.Reason != "idle" || exit.Code != 0 {
		t.Errorf("B's exit: %+v", exit)
	}
	if e := h.waitEventOf(a, "A's second start", ofType(store.EventSessionStarted)); !strings.Contains(e.Text, "resume true") {
		t.Errorf("A's second start: %q", e.Text)
	}
	if _, err := h.worker.PID(b); !errors.Is(err, relay.ErrNoProcess) {
		t.Errorf("B's process is still there once A's resumed (PID: %v); MaxSessions is 1", err)
	}
	if res := h.waitEventOf(a, "A's resumed result", ofType(store.EventResult)).Result; res.Text != "it was MANGO" || res.IsError {
		t.Errorf("A's resumed result: %+v", res)
	}
	reqs := h.srv.Requests()
	last := reqs[len(reqs)-1]
	texts := strings.Join(last.UserTexts(), "|")
	if !strings.Contains(texts, "remember the word MANGO") || strings.Contains(texts, "say hi") || last.LastUserText() != "what was the word?" {
		t.Errorf("the resumed model saw %q", texts)
	}
	checkSession(t, h, b, func(s store.Session) bool { return s.State == store.SessionIdle && s.Worker == "" })
	if starts := countType(h.seen, store.EventSessionStarted); starts != 3 {
		t.Errorf("%d process starts, want 3 (A, B, A again)", starts)
	}
}

func TestE2EBusyProcessKeepsItsPlaceUntilItsTurnEnds(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{
		bash("toolu_1", "touch a.txt"), relaytest.Text("A done"), relaytest.Text("B done"),
	}, maxOne)
	a := h.startSession("make a file")
	e := h.waitEventOf(a, "A's request", ofType(store.EventRequestCreated))

	// A's turn waits for a person: its process is busy and keeps its
	// place, so the full worker leaves B for anyone else to claim.
	b := h.startSession("hello")
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	got, err := h.st.Claim(ctx, "other-worker")
	if err != nil || got != b {
		t.Fatalf("other worker claimed %q, %v; want %s (the worker, full of busy processes, must not take it)", got, err, b)
	}
	if err := h.st.Release(h.ctx, b, "other-worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.worker.PID(a); err != nil {
		t.Errorf("A's process while its request waits: %v", err)
	}

	// Once A's turn ends, its idle process gives way to B.
	h.decide(e.RequestID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	if res := h.waitEventOf(a, "A's result", ofType(store.EventResult)).Result; res.Text != "A done" {
		t.Errorf("A's result: %+v", res)
	}
	if !h.exists("a.txt") {
		t.Error("A's approved command did not run")
	}
	if exit := h.waitEventOf(a, "A's exit", ofType(store.EventExit)).Exit; exit.Reason != "idle" {
		t.Errorf("A's exit: %+v", exit)
	}
	h.waitEventOf(b, "B's start", ofType(store.EventSessionStarted))
	if res := h.waitEventOf(b, "B's result", ofType(store.EventResult)).Result; res.Text != "B done" {
		t.Errorf("B's result: %+v", res)
	}
	checkSession(t, h, a, func(s store.Session) bool { return s.State == store.SessionIdle && s.Worker == "" })
}

// turnTaker writes a stand-in claude that ends every turn at once, logs
// each input line to dir/inputs, and appends to dir/overlaps when it
// starts while another stand-in of the test still runs (mkdir is atomic).
func turnTaker(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	body := fmt.Sprintf(`#!/bin/sh
dir=%q
mkdir "$dir/running" 2>/dev/null || echo "$$" >> "$dir/overlaps"
while read line; do
  echo "$line" >> "$dir/inputs"
  echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"duration_ms":1,"result":"ok","session_id":"s","total_cost_usd":0}'
done
rmdir "$dir/running"
`, dir)
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestWorkerNeverExceedsMaxSessionsWhileIdleSessionsTakeTurns(t *testing.T) {
	onEachBackend(t, testSessionsTakeTurns)
}

func testSessionsTakeTurns(t *testing.T, open func(testing.TB) store.Store) {
	dir := t.TempDir()
	h := newHarnessOn(t, open, turnTaker(t, dir), nil, maxOne)
	a := h.startSession("a-0")
	b := h.startSession("b-0")
	const rounds = 12
	for i := 0; ; i++ {
		h.waitEventOf(a, fmt.Sprintf("A's result %d", i), ofType(store.EventResult))
		h.waitEventOf(b, fmt.Sprintf("B's result %d", i), ofType(store.EventResult))
		if i+1 == rounds {
			break
		}
		// Both are idle and one holds the only place: each follow-up
		// either reaches its live process or makes the other give way,
		// and a follow-up for a process being evicted goes back to the
		// queue. Alternate who asks first.
		if i%2 == 0 {
			h.sendTo(a, fmt.Sprintf("a-%d", i+1))
			h.sendTo(b, fmt.Sprintf("b-%d", i+1))
		} else {
			h.sendTo(b, fmt.Sprintf("b-%d", i+1))
			h.sendTo(a, fmt.Sprintf("a-%d", i+1))
		}
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("a stand-in started while another ran (pids %q); MaxSessions is 1", raw)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "inputs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b"} {
		for i := range rounds {
			text := fmt.Sprintf(`"%s-%d"`, s, i)
			if n := strings.Count(string(raw), text); n != 1 {
				t.Errorf("input %s reached claude %d times, want once", text, n)
			}
		}
	}
	// Each round the session without the place needs a process.
	if n := countType(h.seen, store.EventSessionStarted); n < rounds+1 {
		t.Errorf("%d process starts for %d rounds of two sessions: the sessions did not take turns", n, rounds)
	}
}

func TestWorkerFollowUpDuringTheIdleStopIsAnsweredOnceWithinCapacity(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHarness(t, turnTaker(t, dir), nil, maxOne)
	a := h.startSession("first")
	h.waitEventOf(a, "the first result", ofType(store.EventResult))
	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	// The idle timeout and the follow-up race: the follow-up reaches the
	// live process (which then stays), goes back to the queue while the
	// process stops, or finds the session released; each way it is
	// answered once, by one process at a time.
	h.clock.Advance(time.Hour)
	h.sendTo(a, "second")
	h.waitEventOf(a, "the follow-up's result", ofType(store.EventResult))
	raw, err := os.ReadFile(filepath.Join(dir, "inputs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"second"`); n != 1 {
		t.Errorf("the follow-up reached claude %d times, want once", n)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, "overlaps")); err == nil {
		t.Errorf("a stand-in started while another ran (pids %q); MaxSessions is 1", raw)
	}
}
