package relay_test

import (
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

	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "acceptEdits", User: "U2"}, botKey)
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
	checkSession(t, h, id, func(s store.Session) bool { return s.LiveMode == "" })

	h.queue(store.Input{SessionID: id, Control: store.ControlSetMode, Mode: "plan", User: "U2"}, botKey)
	if e := h.waitEvent("the refusal", ofType(store.EventRefused)); e.Text != relay.NoProcessForMode {
		t.Errorf("refusal %q, want NoProcessForMode", e.Text)
	}
	if n := countType(h.seen, store.EventSessionStarted); n != 1 {
		t.Errorf("%d process starts, want 1 (a mode switch starts no claude)", n)
	}
}
