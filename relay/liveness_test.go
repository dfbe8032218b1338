package relay_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

// A worker that stops beating (cut off, hung) without shutting down is
// taken over by another: its pending request ends saying the worker was
// lost, the session is released, and the next message resumes the session
// on the other worker. Store and workers share the fake clock, so the
// heartbeat lapses when the test says, not when real time says.
func TestE2ELostWorkerIsTakenOverAndTheSessionResumesElsewhere(t *testing.T) {
	t.Parallel()
	clock := storetest.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC))
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h := newHarnessWith(t, st, clock, "", []relaytest.Step{
		bash("toolu_1", "touch lost.txt"), relaytest.Text("resumed elsewhere"),
	})
	id := h.startSession("make the file")
	r := h.waitRequest()
	if owned, err := st.Owned(h.ctx, h.cfg.WorkerID); err != nil || len(owned) != 1 || owned[0] != id {
		t.Fatalf("worker A owns %v (%v), want [%s]", owned, err, id)
	}

	// Worker B joins the same store; once its heartbeat timer is armed,
	// A falls silent and the clock passes WORKER_TIMEOUT.
	armed := clock.Timers()
	cfgB := h.cfg
	cfgB.WorkerID = h.cfg.WorkerID + "-b"
	b, err := relay.NewWorker(cfgB, st, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Str("as", "B").Logger())
	if err != nil {
		t.Fatal(err)
	}
	bctx, stopB := context.WithCancel(h.ctx)
	bdone := make(chan error, 1)
	go func() { bdone <- b.Run(bctx) }()
	t.Cleanup(func() {
		stopB()
		if err := <-bdone; err != nil {
			t.Errorf("worker B: %v", err)
		}
	})
	if err := clock.WaitTimers(h.ctx, armed+livenessTimers); err != nil {
		t.Fatal(err)
	}
	h.worker.Silence()
	clock.Advance(relay.DefaultWorkerTimeout + time.Second)

	d, err := st.WaitDecision(h.ctx, r.ID)
	if err != nil || d.Outcome != store.OutcomeEnded || d.Message != relay.LostMessage(relay.DefaultWorkerTimeout) {
		t.Fatalf("decision %+v (%v), want ended: %q", d, err, relay.LostMessage(relay.DefaultWorkerTimeout))
	}
	if !strings.Contains(d.Message, "30s") {
		t.Errorf("the message does not say how long the worker was silent: %q", d.Message)
	}
	lost := h.waitEvent("the takeover's notice", ofType(store.EventError))
	if !strings.HasPrefix(lost.Text, relay.LostMessage(relay.DefaultWorkerTimeout)) {
		t.Errorf("notice %q", lost.Text)
	}
	for _, w := range []string{h.cfg.WorkerID, cfgB.WorkerID} {
		if owned, err := st.Owned(h.ctx, w); err != nil || len(owned) != 0 {
			t.Errorf("%s still owns %v (%v) after the takeover", w, owned, err)
		}
	}
	s, err := st.GetSession(h.ctx, id)
	if err != nil || s.State != store.SessionIdle || s.Worker != "" {
		t.Errorf("session after the takeover: %+v (%v)", s, err)
	}
	// A is dead for this test from here on: it never gets the session back.
	h.stopWorker()
	if got, err := st.GetRequest(h.ctx, r.ID); err != nil || got.Decision == nil || got.Decision.Outcome != store.OutcomeEnded {
		t.Errorf("the lost worker changed the end: %+v (%v)", got.Decision, err)
	}
	if h.exists("lost.txt") {
		t.Error("the command of the ended request ran")
	}

	// The next message resumes the Claude session on B.
	h.send("go on")
	started := h.waitEvent("start on B", ofType(store.EventSessionStarted))
	if !strings.Contains(started.Text, "resume true") {
		t.Errorf("start on B: %q", started.Text)
	}
	if res := h.waitResult(); res.IsError || res.Text != "resumed elsewhere" {
		t.Errorf("result on B: %+v", res)
	}
	if _, err := b.PID(id); err != nil {
		t.Errorf("B does not run the session: %v", err)
	}
}
