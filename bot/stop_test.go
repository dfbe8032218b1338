package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// workingSession creates a running session and waits for its status
// message to offer Stop.
func (h *harness) workingSession(t testing.TB, id string) (store.Session, fakeslack.Message) {
	t.Helper()
	s := h.newSession(t, id)
	ctx := testCtx(t)
	if _, err := h.st.Publish(ctx, store.Event{Type: store.EventSessionStarted, SessionID: s.ID, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	status, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, "Stop")
	})
	if err != nil {
		t.Fatalf("status message with Stop never shown: %v", err)
	}
	return s, status
}

// requireInterrupt claims the session as a worker would and checks that
// the first thing queued is an interrupt by user.
func (h *harness) requireInterrupt(t testing.TB, s store.Session, user string) {
	t.Helper()
	got, in := h.claim(t)
	if got.ID != s.ID {
		t.Fatalf("claimed session %s, want %s", got.ID, s.ID)
	}
	if in.Control != store.ControlInterrupt || in.Text != "" || in.User != user {
		t.Fatalf("queued input = %+v, want an interrupt by %s with no text", in, user)
	}
}

func TestStopClickByAnApproverQueuesAnInterrupt(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"S0OPS"}} }})
			h.fake.AddUserGroup("S0OPS", "U2")
			s, status := h.workingSession(t, "sess-stop")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U2", status.Ref(), "Stop"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("Stopping Claude's current turn")); err != nil {
				t.Fatal(err)
			}
			h.requireInterrupt(t, s, "U2")
		})
	}
}

func TestStopClickByAStrangerIsRefusedAndTheStarterMayStop(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"S0OPS"}} }})
			h.fake.AddUserGroup("S0OPS", "U2")
			s, status := h.workingSession(t, "sess-stranger")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U3", status.Ref(), "Stop"); err != nil {
				t.Fatal(err)
			}
			eph, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(eph.Text, "<@U1>") || !strings.Contains(eph.Text, "S0OPS") {
				t.Errorf("refusal %q does not say who may stop", eph.Text)
			}
			// U1 started the session but is no approver: the starter may
			// stop it. The queue is first in, first out, so the input
			// claimed being U1's shows the stranger's queued nothing.
			if err := h.fake.Click(ctx, "U1", status.Ref(), "Stop"); err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.Text("Stopping Claude's current turn")); err != nil {
				t.Fatal(err)
			}
			h.requireInterrupt(t, s, "U1")
		})
	}
}

func TestStopReplyInTheThreadInterruptsInsteadOfPrompting(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	for _, tt := range []struct {
		name, user, text string
		interrupt        bool
	}{
		{"plain stop by the starter", "U1", "stop", true},
		{"mention and capitals by an approver", "U2", "<@" + fakeslack.BotUserID + "> STOP ", true},
		{"stop by a stranger is refused", "U3", "Stop", false},
		{"a sentence starting with stop is a prompt", "U1", "stop the build and rerun it", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := h.newSession(t, "sess-reply-"+strings.ReplaceAll(tt.name, " ", "-"))
			if _, err := h.fake.Reply(ctx, tt.user, "C1", s.Thread.TS, tt.text); err != nil {
				t.Fatal(err)
			}
			if tt.interrupt {
				h.requireInterrupt(t, s, tt.user)
				return
			}
			if tt.user == "U3" {
				if _, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed")); err != nil {
					t.Fatal(err)
				}
				// Nothing reached Claude: the next input is the starter's.
				if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, "carry on"); err != nil {
					t.Fatal(err)
				}
				if got, in := h.claim(t); got.ID != s.ID || in.Text != "carry on" || in.User != "U1" {
					t.Fatalf("first queued input = %+v (session %s), want U1's \"carry on\"", in, got.ID)
				}
				return
			}
			if got, in := h.claim(t); got.ID != s.ID || in.Control != "" || in.Text != tt.text {
				t.Fatalf("queued input = %+v (session %s), want the prompt %q", in, got.ID, tt.text)
			}
		})
	}
}

func TestStopOnAnIdleSessionQueuesNothing(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-idle")
	if _, err := h.st.UpdateSession(ctx, s.ID, func(s *store.Session) error { s.State = store.SessionIdle; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.Text("nothing to stop")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, "next task"); err != nil {
		t.Fatal(err)
	}
	if _, in := h.claim(t); in.Text != "next task" || in.Control != "" {
		t.Fatalf("first queued input = %+v, want the next prompt", in)
	}
}

func TestInterruptedEventSaysWhoStoppedAndTheStatusLosesStop(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	s, status := h.workingSession(t, "sess-stopped")
	ctx := testCtx(t)
	for _, e := range []store.Event{
		{Type: store.EventResult, IsError: true, Result: &store.Result{Subtype: "error_during_execution", IsError: true, Turns: 1}},
		{Type: store.EventInterrupted, Text: "U2"},
	} {
		e.SessionID, e.At = s.ID, time.Now()
		if _, err := h.st.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("Stopped by <@U2>")); err != nil {
		t.Fatal(err)
	}
	final, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == status.Ref() && m.HasText("Stopped: reply in this thread") && !hasButton(m, "Stop")
	})
	if err != nil {
		t.Fatalf("status line never said stopped without a Stop button: %v", err)
	}
	if final.HasText("Failed") {
		t.Errorf("status after a stop reads as a failure: %q", final.AllText())
	}
}
