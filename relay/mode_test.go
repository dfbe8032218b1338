package relay_test

import (
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// A mode switch reaches the live process (set_permission_mode), is
// recorded, audited and told; the process's end resets it; with no
// process the thread is told nothing was switched, and no claude starts.
func TestE2EModeSwitchIsRecordedAndEndsWithItsProcess(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{relaytest.Text("first")})
	id := h.startSession("say first")
	h.waitResult()

	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "acceptEdits", User: "U2",
		Process: runningProcess(t, h, id), At: h.clock.Now()}, botKey)
	if e := h.waitEvent("the mode change", ofType(store.EventModeChanged)); e.Text != "acceptEdits" || e.By != "U2" {
		t.Errorf("mode event %+v, want acceptEdits by U2", e)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.LiveMode == "acceptEdits" })
	log, err := h.st.AuditLog(h.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.Action != store.AuditModeChanged || last.By != "U2" || last.Message != "acceptEdits" {
		t.Errorf("last audit entry %+v, want U2's switch to acceptEdits", last)
	}

	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	h.waitEvent("idle exit", ofType(store.EventExit))
	checkSession(t, h, id, func(s store.Session) bool { return s.LiveMode == "" && s.Process == "" })

	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "plan", User: "U2"}, botKey)
	if e := h.waitEvent("the refusal", ofType(store.EventRefused)); e.Text != relay.NoProcessForMode {
		t.Errorf("refusal %q, want NoProcessForMode", e.Text)
	}
	if n := countType(h.seen, store.EventSessionStarted); n != 1 {
		t.Errorf("%d process starts, want 1 (a mode switch starts no claude)", n)
	}
}

// runningProcess is the name of the claude process running session id,
// as a bot reads it to sign a mode switch for it.
func runningProcess(t *testing.T, h *harness, id string) string {
	t.Helper()
	s, err := h.st.GetSession(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Process == "" {
		t.Fatalf("session %s runs no named process: %+v", id, s)
	}
	return s.Process
}

// A signed mode switch captured from the store and queued again into a
// later process of the same session switches nothing, nor does one asked
// for longer ago than store.ModeSwitchTTL; each is told and audited.
func TestE2EModeSwitchBindsToItsProcessAndExpires(t *testing.T) {
	onEachBackend(t, testModeSwitchBindsToItsProcessAndExpires)
}

func testModeSwitchBindsToItsProcessAndExpires(t *testing.T, open func(testing.TB) store.Store) {
	h := newHarnessOn(t, open, "", []relaytest.Step{relaytest.Text("first"), relaytest.Text("second")})
	id := h.startSession("say first")
	h.waitResult()
	first := runningProcess(t, h, id)
	captured := h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "plan", User: "U2",
		Process: first, At: h.clock.Now()}, botKey)
	h.waitEvent("the first switch", ofType(store.EventModeChanged))

	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	h.waitEvent("idle exit", ofType(store.EventExit))
	h.send("say second")
	h.waitResult()
	second := runningProcess(t, h, id)
	if second == first {
		t.Fatalf("the second process has the first one's name %q", first)
	}

	// A switch signed for the first process, still fresh (one captured
	// as the first process crashed and the next started at once).
	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "acceptEdits", User: "U2",
		Process: first, At: h.clock.Now()}, botKey)
	if e := h.waitEvent("the earlier process's switch refused", ofType(store.EventRefused)); e.Text != relay.ModeForAnotherProcess {
		t.Errorf("refusal %q, want ModeForAnotherProcess", e.Text)
	}
	if _, err := h.st.Enqueue(h.ctx, captured); err != nil { // the same signed input, queued again
		t.Fatal(err)
	}
	if e := h.waitEvent("the replay's refusal", ofType(store.EventRefused)); e.Text != relay.ModeForAnotherProcess {
		t.Errorf("refusal %q, want ModeForAnotherProcess", e.Text)
	}
	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "acceptEdits", User: "U2",
		Process: second, At: h.clock.Now().Add(-store.ModeSwitchTTL - time.Second)}, botKey)
	if e := h.waitEvent("the late switch's refusal", ofType(store.EventRefused)); e.Text != relay.ModeSwitchExpired {
		t.Errorf("refusal %q, want ModeSwitchExpired", e.Text)
	}
	if n := countType(h.seen, store.EventModeChanged); n != 1 {
		t.Errorf("%d mode changes, want the first switch's only", n)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.LiveMode == "" })
	log, err := h.st.AuditLog(h.ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range log {
		if e.Action == store.AuditInputRefused && e.SessionID == id {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d refusals audited, want 3", refused)
	}
}

// Each request names whose messages the turn that made it answers: the
// session's first message's author, then a follow-up's (not_self counts
// neither).
func TestE2ERequestsNameWhoTheirTurnAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch first.txt"), relaytest.Text("first done"),
		bash("toolu_2", "touch second.txt"), relaytest.Text("second done")})
	id := h.startSession("first")
	r := h.waitRequest()
	if !slices.Equal(r.TurnBy, []string{"U1"}) {
		t.Errorf("first request's TurnBy = %q, want the first message's author", r.TurnBy)
	}
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	h.waitEventOf(id, "the first turn", ofType(store.EventResult))
	h.queue(store.Input{SessionID: id, Text: "second", User: "U2"}, botKey)
	r = h.waitRequest()
	if !slices.Equal(r.TurnBy, []string{"U2"}) {
		t.Errorf("second request's TurnBy = %q, want the follow-up's author alone", r.TurnBy)
	}
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
}
