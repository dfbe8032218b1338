package relay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// interrupt queues a control input the way the bot does when someone
// presses Stop.
func (h *harness) interrupt(user string) {
	h.tb.Helper()
	h.queue(store.Input{SessionID: h.sessID, Control: store.ControlInterrupt, User: user}, botKey)
}

func TestE2EInterruptInputStopsTheTurnAndCancelsItsPendingRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch never.txt"), relaytest.Text("ready for more")})
	id := h.startSession("make the file")
	r := h.waitRequest()

	h.interrupt("U2")
	d, err := h.st.WaitDecision(h.ctx, r.ID)
	if err != nil || d.Outcome != store.OutcomeCancelled {
		t.Fatalf("decision %+v, %v; want cancelled", d, err)
	}
	if d.By != "U2" || !strings.Contains(d.Message, "stopped") {
		t.Errorf("cancelled decision %+v does not say who stopped the turn", d)
	}
	res := h.waitResult()
	if res.Subtype != "error_during_execution" || !res.IsError {
		t.Errorf("result after the interrupt: %+v", res)
	}
	// The stop is told after the turn's result, naming who pressed Stop.
	if e := h.waitEvent("the interrupted event", ofType(store.EventInterrupted)); e.Text != "U2" {
		t.Errorf("interrupted event names %q, want U2", e.Text)
	}
	if h.exists("never.txt") {
		t.Error("the interrupted command ran")
	}

	// The same process takes the next message.
	h.send("are you there?")
	if res := h.waitResult(); res.IsError || res.Text != "ready for more" {
		t.Errorf("follow-up result: %+v; events: %s", res, h.describe())
	}
	if n := countType(h.seen, store.EventSessionStarted); n != 1 {
		t.Errorf("%d process starts, want 1 (the interrupt must not restart claude)", n)
	}
	if n := countType(h.seen, store.EventInterrupted); n != 1 {
		t.Errorf("%d interrupted events, want 1", n)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionRunning })
}

func TestE2EInterruptBetweenTurnsOrWithoutAProcessDoesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{relaytest.Text("first"), relaytest.Text("second"), relaytest.Text("third")})
	id := h.startSession("say first")
	h.waitResult()

	// A live process between turns: nothing to stop, and the next message
	// is answered normally.
	h.interrupt("U2")
	h.send("say second")
	if res := h.waitResult(); res.IsError || res.Text != "second" {
		t.Fatalf("result after an interrupt between turns: %+v; events: %s", res, h.describe())
	}

	// No process at all (stopped idle): the interrupt is dropped without
	// starting claude; the message queued behind it resumes the session.
	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	h.waitEvent("idle exit", ofType(store.EventExit))
	h.interrupt("U2")
	h.send("say third")
	started := h.waitEvent("resume", ofType(store.EventSessionStarted))
	if !strings.Contains(started.Text, "resume true") {
		t.Errorf("start after idle: %q", started.Text)
	}
	if res := h.waitResult(); res.IsError || res.Text != "third" {
		t.Fatalf("result after an interrupt with no process: %+v; events: %s", res, h.describe())
	}
	if n := countType(h.seen, store.EventSessionStarted); n != 2 {
		t.Errorf("%d process starts, want 2 (the first prompt and the resume)", n)
	}
	for _, typ := range []store.EventType{store.EventInterrupted, store.EventError} {
		if n := countType(h.seen, typ); n != 0 {
			t.Errorf("%d %s events, want none; events: %s", n, typ, h.describe())
		}
	}
	if reqs := h.srv.Requests(); len(reqs) != 3 || reqs[2].LastUserText() != "say third" {
		t.Errorf("the model got %d requests, the last ending with %q; want 3, the last ending with the third prompt", len(reqs), reqs[len(reqs)-1].LastUserText())
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionRunning })
}

func TestE2EMessageRightAfterAnInterruptKeepsWhoStopped(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch never.txt"), relaytest.Text("ready for more")})
	h.startSession("make the file")
	r := h.waitRequest()

	// Stop, and a new message queued right behind it.
	h.interrupt("U2")
	h.send("never mind, just say hi")
	if d, err := h.st.WaitDecision(h.ctx, r.ID); err != nil || d.Outcome != store.OutcomeCancelled || d.By != "U2" {
		t.Fatalf("decision %+v, %v; want cancelled by U2", d, err)
	}
	if e := h.waitEvent("the interrupted event", ofType(store.EventInterrupted)); e.Text != "U2" {
		t.Errorf("interrupted event names %q, want U2", e.Text)
	}
	h.waitEvent("the follow-up's answer", func(e store.Event) bool {
		return e.Type == store.EventResult && !e.Result.IsError && e.Result.Text == "ready for more"
	})
	if h.exists("never.txt") {
		t.Error("the interrupted command ran")
	}
}

// A stopping worker takes no new session, not even the one its stop makes
// room for: a full worker (MaxSessions 1) with a session queued behind its
// running one is stopped; the running session's process exits, which frees
// the capacity, and the queued session must still be in the queue for
// another worker, not claimed by the one going away.
func TestStoppingWorkerLeavesTheQueuedSessionForOthers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, busyCLI(t), nil, func(c *relay.Config) { c.MaxSessions = 1 })
	h.startSession("first")
	h.waitEvent("first start", ofType(store.EventSessionStarted))
	queued := h.startSession("second")

	h.stopWorker()
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	got, err := h.st.Claim(ctx, "next-worker")
	if err != nil || got != queued {
		t.Fatalf("the next worker claimed %q, %v; want %s still queued after the stop", got, err, queued)
	}
	// Every event published before the stop ended is ahead of this marker
	// in the stream, so once it is here, seen holds them all.
	if _, err := h.st.Publish(h.ctx, store.Event{Type: store.EventError, SessionID: queued, Text: "after the stop", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	h.waitEvent("the marker", func(e store.Event) bool { return e.Text == "after the stop" })
	for _, e := range h.seen {
		if e.SessionID == queued && e.Type == store.EventSessionStarted {
			t.Errorf("the stopping worker started the queued session: %+v", e)
		}
	}
}
