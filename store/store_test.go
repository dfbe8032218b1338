package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

var at = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

func TestValidate(t *testing.T) {
	req := store.Request{ID: "r1", SessionID: "s1", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}}
	with := func(f func(*store.Request)) store.Request { r := req; f(&r); return r }
	allow := store.Decision{Outcome: store.OutcomeAllow, By: "U1", At: at}
	deny := store.Decision{Outcome: store.OutcomeDeny, By: "U1", At: at, Message: "no"}
	dec := func(d store.Decision, f func(*store.Decision)) store.Decision { f(&d); return d }
	exitEvent := func(c store.ExitCause) store.Event {
		return store.Event{Type: store.EventExit, SessionID: "s1", Exit: &store.Exit{Code: 1, Cause: c}}
	}
	audit := store.AuditEntry{At: at, Action: store.AuditCreated, RequestID: "r1", SessionID: "s1", Kind: store.KindTool}

	for _, tc := range []struct {
		name  string
		v     interface{ Validate() error }
		valid bool
	}{
		{"request", req, true},
		{"request with a zero CreatedAt (the store fills it)", with(func(r *store.Request) { r.CreatedAt = time.Time{} }), true},
		{"request without id", with(func(r *store.Request) { r.ID = "" }), false},
		{"request without session", with(func(r *store.Request) { r.SessionID = "" }), false},
		{"request of unknown kind", with(func(r *store.Request) { r.Kind = "poll" }), false},
		{"request of no kind", with(func(r *store.Request) { r.Kind = "" }), false},
		{"settled request", with(func(r *store.Request) { r.Decision = &deny }), true},
		{"request with an invalid decision", with(func(r *store.Request) { r.Decision = &store.Decision{Outcome: store.OutcomeAllow} }), false},

		{"allow", allow, true},
		{"allow with everything an allow carries", dec(allow, func(d *store.Decision) {
			d.UpdatedInput = json.RawMessage(`{"command":"ls"}`)
			d.Permissions = []store.Suggestion{{Type: "addRules"}}
			d.Answers = map[string]string{"q": "a"}
		}), true},
		{"deny skipped and interrupting", dec(deny, func(d *store.Decision) { d.Skipped, d.Interrupt = true, true }), true},
		{"expired by the system", store.Decision{Outcome: store.OutcomeExpired, At: at, Message: "nobody answered"}, true},
		{"unknown outcome", dec(allow, func(d *store.Decision) { d.Outcome = "maybe" }), false},
		{"no outcome", dec(allow, func(d *store.Decision) { d.Outcome = "" }), false},
		{"decision without a time", dec(allow, func(d *store.Decision) { d.At = time.Time{} }), false},
		{"skipped allow", dec(allow, func(d *store.Decision) { d.Skipped = true }), false},
		{"interrupting allow", dec(allow, func(d *store.Decision) { d.Interrupt = true }), false},
		{"skipped expiry", store.Decision{Outcome: store.OutcomeExpired, At: at, Skipped: true}, false},
		{"deny with an edited input", dec(deny, func(d *store.Decision) { d.UpdatedInput = json.RawMessage(`{}`) }), false},
		{"deny with permissions", dec(deny, func(d *store.Decision) { d.Permissions = []store.Suggestion{{Type: "addRules"}} }), false},
		{"cancel with answers", store.Decision{Outcome: store.OutcomeCancelled, At: at, Answers: map[string]string{"q": "a"}}, false},

		{"session", store.Session{ID: "s1", State: store.SessionQueued}, true},
		{"session without state or time", store.Session{ID: "s1"}, true},
		{"session without id", store.Session{State: store.SessionQueued}, false},
		{"session in unknown state", store.Session{ID: "s1", State: "sleeping"}, false},

		{"message input", store.Input{SessionID: "s1", Text: "hi"}, true},
		{"interrupt input", store.Input{SessionID: "s1", Control: store.ControlInterrupt}, true},
		{"input without session", store.Input{Text: "hi"}, false},
		{"unknown control", store.Input{SessionID: "s1", Control: "reboot"}, false},
		{"control with text", store.Input{SessionID: "s1", Control: store.ControlInterrupt, Text: "hi"}, false},

		{"event", store.Event{Type: store.EventAssistantText, SessionID: "s1", Text: "hi"}, true},
		{"event of unknown type", store.Event{Type: "gossip", SessionID: "s1"}, false},
		{"event without session", store.Event{Type: store.EventAssistantText}, false},
		{"exit with a cause", exitEvent(store.ExitIdle), true},
		{"exit without a cause (an older worker)", exitEvent(""), true},
		{"exit of unknown cause", exitEvent("bored"), false},

		{"audit created", audit, true},
		{"audit settled", store.SettledAudit(req, deny), true},
		{"audit of unknown action", func() store.AuditEntry { a := audit; a.Action = "viewed"; return a }(), false},
		{"audit without time", func() store.AuditEntry { a := audit; a.At = time.Time{}; return a }(), false},
		{"audit without request", func() store.AuditEntry { a := audit; a.RequestID = ""; return a }(), false},
		{"audit settled without outcome", func() store.AuditEntry { a := audit; a.Action = store.AuditSettled; return a }(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			switch {
			case tc.valid && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case !tc.valid && !errors.Is(err, store.ErrInvalid):
				t.Errorf("Validate() = %v, want an error wrapping ErrInvalid", err)
			}
		})
	}
}

func TestValidateNewRefusesADecidedRequest(t *testing.T) {
	r := store.Request{ID: "r1", SessionID: "s1", Kind: store.KindQuestion}
	if err := r.ValidateNew(); err != nil {
		t.Fatalf("ValidateNew of a pending request = %v, want nil", err)
	}
	r.Decision = &store.Decision{Outcome: store.OutcomeAllow, At: at}
	if err := r.ValidateNew(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ValidateNew of a decided request = %v, want ErrInvalid", err)
	}
	r.ID = ""
	if err := r.ValidateNew(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("ValidateNew of a request without id = %v, want ErrInvalid", err)
	}
}

func TestExitFailedOnlyWhenItCrashed(t *testing.T) {
	for _, tc := range []struct {
		exit store.Exit
		want bool
	}{
		{store.Exit{Code: 1, Cause: store.ExitCrashed, Reason: "exit status 1"}, true},
		{store.Exit{Code: 137, Cause: store.ExitCrashed, Reason: "signal: killed"}, true},
		{store.Exit{Code: 0, Cause: store.ExitFinished, Reason: "exited"}, false},
		{store.Exit{Code: 1, Cause: store.ExitFinished, Reason: "exit status 1"}, false},
		{store.Exit{Code: 143, Cause: store.ExitIdle, Reason: "idle"}, false},
		{store.Exit{Code: 143, Cause: store.ExitEvicted, Reason: "idle"}, false},
		{store.Exit{Code: 137, Cause: store.ExitStopped, Reason: "stopped"}, false},
		{store.Exit{Code: 143, Cause: store.ExitShutdown, Reason: "worker shutting down"}, false},
		// Written before causes existed: the code decides.
		{store.Exit{Code: 1, Reason: "exit status 1"}, true},
		{store.Exit{Code: 0, Reason: "exited"}, false},
	} {
		if got := tc.exit.Failed(); got != tc.want {
			t.Errorf("%+v.Failed() = %t, want %t", tc.exit, got, tc.want)
		}
	}
}

func TestRedeliveryDelayDoublesUpTo32Times(t *testing.T) {
	base := 100 * time.Millisecond
	for n, want := range map[int]time.Duration{
		0: base, 1: base, 2: 2 * base, 3: 4 * base, 4: 8 * base, 5: 16 * base, 6: 32 * base, 7: 32 * base, 100: 32 * base,
	} {
		if got := store.RedeliveryDelay(base, n); got != want {
			t.Errorf("RedeliveryDelay(%v, %d) = %v, want %v", base, n, got, want)
		}
	}
}

func TestRequestRecordsAgreeWithTheRequest(t *testing.T) {
	r := store.Request{ID: "r1", SessionID: "s1", Kind: store.KindPlan, ToolCall: store.ToolCall{ToolName: "ExitPlanMode"}, CreatedAt: at}
	d := store.Decision{Outcome: store.OutcomeDeny, By: "U1", ByName: "Ada", At: at.Add(time.Minute), Message: "not yet"}
	for _, a := range []store.AuditEntry{store.CreatedAudit(r), store.SettledAudit(r, d)} {
		if err := a.Validate(); err != nil {
			t.Errorf("%s entry: %v", a.Action, err)
		}
	}
	for _, e := range []store.Event{store.CreatedEvent(r), store.SettledEvent(r, d)} {
		if err := e.Validate(); err != nil || e.RequestID != r.ID {
			t.Errorf("%s event %+v: %v", e.Type, e, err)
		}
	}
	if s := store.SettledAudit(r, d); s.At != d.At || s.Outcome != d.Outcome || s.ByName != "Ada" || s.Message != "not yet" || s.Tool != r.ToolName {
		t.Errorf("SettledAudit = %+v, does not carry the decision and the request", s)
	}
	if c := store.CreatedEvent(r); c.Type != store.EventRequestCreated || c.At != r.CreatedAt {
		t.Errorf("CreatedEvent = %+v", c)
	}
}

func TestKindOf(t *testing.T) {
	const form = `{"questions":[{"question":"Which?","header":"Pick","multiSelect":false,"options":[{"label":"A","description":"a"},{"label":"B","description":"b"}]}]}`
	tests := []struct {
		name, tool, input string
		want              store.Kind
	}{
		{"bash", "Bash", `{"command":"ls"}`, store.KindTool},
		{"write", "Write", `{}`, store.KindTool},
		{"built-in question", "AskUserQuestion", form, store.KindQuestion},
		{"mcp question, exact schema", "mcp__slack__AskUserQuestion", form, store.KindQuestion},
		{"mcp question with an extra argument", "mcp__x__AskUserQuestion",
			`{"questions":[{"question":"Which?","header":"Pick","multiSelect":false,"options":[{"label":"A"},{"label":"B"}]}],"command":"rm -rf /"}`, store.KindTool},
		{"mcp name only alike", "mcp__x__AskUserQuestionLater", form, store.KindTool},
		{"built-in name with a suffix", "AskUserQuestionX", form, store.KindTool},
		{"plan", "ExitPlanMode", `{"plan":"p"}`, store.KindPlan},
		{"mcp tool", "mcp__fs__read", `{}`, store.KindTool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.KindOf(tt.tool, json.RawMessage(tt.input)); got != tt.want {
				t.Errorf("KindOf(%q, %s) = %q, want %q", tt.tool, tt.input, got, tt.want)
			}
		})
	}
}
