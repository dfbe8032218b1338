package blocks

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// stopButton returns the status message's Stop button and its block id, or
// nil when there is none.
func stopButton(m Message) (*slack.ButtonBlockElement, string) {
	for _, b := range m.Blocks {
		ab, ok := b.(*slack.ActionBlock)
		if !ok {
			continue
		}
		for _, el := range ab.Elements.ElementSet {
			if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == string(ActionStop) {
				return btn, ab.BlockID
			}
		}
	}
	return nil, ""
}

func TestStatusShowsStopOnlyWhileClaudeWorksOrWaits(t *testing.T) {
	for _, tt := range []struct {
		phase Phase
		stop  bool
	}{
		{PhaseQueued, false},
		{PhaseWorking, true},
		{PhaseWaiting, true},
		{PhaseDone, false},
		{PhaseFailed, false},
		{PhaseStopped, false},
	} {
		t.Run(string(tt.phase), func(t *testing.T) {
			m := StatusMessage(session, Status{Phase: tt.phase, Pending: 1})
			if err := ValidateMessage(m.Text, m.Blocks); err != nil {
				t.Fatal(err)
			}
			btn, _ := stopButton(m)
			if (btn != nil) != tt.stop {
				t.Fatalf("Stop button shown = %t, want %t", btn != nil, tt.stop)
			}
			if btn == nil {
				return
			}
			if btn.Style != slack.StyleDanger || btn.Confirm == nil || btn.Confirm.Text == nil || btn.Confirm.Text.Text != "Stop Claude's current turn?" {
				t.Errorf("Stop button is not a danger button asking for confirmation: %+v", btn)
			}
		})
	}
}

func TestStatusWithoutASessionIDHasNoStopButton(t *testing.T) {
	if btn, _ := stopButton(StatusMessage(store.Session{}, Status{Phase: PhaseWorking})); btn != nil {
		t.Fatal("a Stop button that names no session")
	}
}

func TestParseActionStopNamesTheSession(t *testing.T) {
	long := store.Session{ID: strings.Repeat("s", 200), WorkDir: "/w", StartedBy: "U1"}
	for _, s := range []store.Session{session, long} {
		btn, blockID := stopButton(StatusMessage(s, Status{Phase: PhaseWorking}))
		if btn == nil {
			t.Fatal("no Stop button")
		}
		if len(btn.Value) > MaxButtonValue {
			t.Errorf("value %d chars", len(btn.Value))
		}
		a, ok := ParseAction(&slack.BlockAction{ActionID: btn.ActionID, BlockID: blockID, Value: btn.Value})
		if !ok || a.Kind != ActionStop || a.SessionID != s.ID || a.RequestID != "" {
			t.Errorf("ParseAction(Stop) = %+v, %t; want ActionStop for session %q", a, ok, s.ID)
		}
	}
	if a, ok := ParseAction(&slack.BlockAction{ActionID: string(ActionStop), Value: "garbage"}); ok {
		t.Errorf("ParseAction accepted a malformed Stop value: %+v", a)
	}
}

func TestStopButtonIsNotADecision(t *testing.T) {
	a := Action{Kind: ActionStop, SessionID: session.ID}
	r := bashRequest()
	if _, _, err := DecideAction(a, r, &slack.InteractionCallback{}, Who{ID: "U1"}, t0); err == nil {
		t.Fatal("DecideAction took a Stop click as a decision")
	}
}

func TestInterruptedEventMentionsOnlyAUserID(t *testing.T) {
	for _, tt := range []struct {
		name, by, want string
	}{
		{"user id", "U0ALICE", "⏹️ Stopped by <@U0ALICE>"},
		{"unknown", "", "⏹️ Claude's turn was stopped"},
		{"not an id", "<!channel>", "⏹️ Claude's turn was stopped"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ms := EventMessages(store.Event{Type: store.EventInterrupted, SessionID: session.ID, Text: tt.by, At: t0})
			if len(ms) != 1 {
				t.Fatalf("%d messages, want 1", len(ms))
			}
			if !strings.HasPrefix(ms[0].Text, tt.want) || strings.Contains(ms[0].Text, "<!channel>") {
				t.Errorf("text %q, want it to start %q", ms[0].Text, tt.want)
			}
			if err := ValidateMessage(ms[0].Text, ms[0].Blocks); err != nil {
				t.Error(err)
			}
		})
	}
}
