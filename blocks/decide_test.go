package blocks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

var clickAt = t0.Add(2 * time.Minute)

// payload loads a JSON interaction payload as Slack sends it.
func payload(t *testing.T, name string) *slack.InteractionCallback {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "payloads", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal(raw, &cb); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return &cb
}

func TestDecideActionFromSlackPayloads(t *testing.T) {
	base := store.Decision{By: "U0ALICE", ByName: "alice", At: clickAt}
	with := func(f func(*store.Decision)) store.Decision { d := base; f(&d); return d }
	tests := []struct {
		name     string
		payload  string
		r        store.Request
		want     store.Decision
		wantNext Next
		wantErr  error
	}{
		{"approve allows as is", "approve", bashRequest(),
			with(func(d *store.Decision) { d.Outcome = store.OutcomeAllow }), NextDecide, nil},
		{"always allow applies the rule to the session", "always_0", bashRequest(),
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.Permissions = []store.Suggestion{{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "make deploy:*"}}, Behavior: "allow", Destination: "session"}}
			}), NextDecide, nil},
		{"always allow a directory", "always_1", bashRequest(),
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.Permissions = []store.Suggestion{{Type: "addDirectories", Directories: []string{"/srv/repo/deploy"}, Destination: "session"}}
			}), NextDecide, nil},
		{"always allow whose rule was swapped in the store since the card is refused", "always_0", func() store.Request {
			r := bashRequest()
			r.Suggestions[0].Rules = []store.SuggestionRule{{ToolName: "Bash"}} // all of Bash
			return r
		}(), store.Decision{}, NextDecide, ErrChoiceChanged},
		{"always allow whose suggestions were reordered since the card is refused", "always_0", func() store.Request {
			r := bashRequest()
			r.Suggestions[0], r.Suggestions[1] = r.Suggestions[1], r.Suggestions[0]
			return r
		}(), store.Decision{}, NextDecide, ErrChoiceChanged},
		{"deny opens the deny modal", "deny", bashRequest(), store.Decision{}, NextDenyModal, nil},
		{"edit opens the edit modal", "edit", bashRequest(), store.Decision{}, NextEditModal, nil},
		{"an option button answers its question", "answer_2", questionRequest(oneQuestion),
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.Answers = map[string]string{"Which database should we use?": "MongoDB"}
			}), NextDecide, nil},
		{"skip denies with the skip message", "skip", questionRequest(oneQuestion),
			with(func(d *store.Decision) { d.Outcome = store.OutcomeDeny; d.Skipped = true; d.Message = SkipMessage }), NextDecide, nil},
		{"other opens the free-text modal", "other", questionRequest(severalQuestions), store.Decision{}, NextOtherModal, nil},
		{"submit reads every menu from state.values", "submit_several", questionRequest(severalQuestions),
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.Answers = map[string]string{"Which database should we use?": "SQLite", "Which features do you want?": "Auth, Export"}
			}), NextDecide, nil},
		{"submit with unanswered questions is incomplete", "submit_missing", questionRequest(severalQuestions), store.Decision{}, NextDecide, ErrIncomplete},
		{"a menu change waits for submit", "pick", questionRequest(severalQuestions), store.Decision{}, NextNothing, nil},
		{"approve on a plan allows it", "approve", func() store.Request { r := planRequest(); r.ID = "req-bash"; return r }(),
			with(func(d *store.Decision) { d.Outcome = store.OutcomeAllow }), NextDecide, nil},
		{"keep planning opens the feedback modal", "deny", func() store.Request { r := planRequest(); r.ID = "req-bash"; return r }(), store.Decision{}, NextDenyModal, nil},
		{"a request without a kind is typed by its tool", "skip", func() store.Request { r := questionRequest(oneQuestion); r.Kind = ""; return r }(),
			with(func(d *store.Decision) { d.Outcome = store.OutcomeDeny; d.Skipped = true; d.Message = SkipMessage }), NextDecide, nil},
		{"edit on a plan is a mismatch", "edit", func() store.Request { r := planRequest(); r.ID = "req-bash"; return r }(), store.Decision{}, NextDecide, ErrMismatch},
		{"skip on a tool is a mismatch", "skip", func() store.Request { r := bashRequest(); r.ID = "req-question"; return r }(), store.Decision{}, NextDecide, ErrMismatch},
		{"approve on a question is a mismatch", "approve", func() store.Request { r := questionRequest(oneQuestion); r.ID = "req-bash"; return r }(), store.Decision{}, NextDecide, ErrMismatch},
		{"another request's button is a mismatch", "approve", writeRequest(), store.Decision{}, NextDecide, ErrMismatch},
		{"an option that does not exist is a mismatch", "answer_2", questionRequest(`{"questions":[{"question":"Q","options":[{"label":"a"},{"label":"b"}]}]}`), store.Decision{}, NextDecide, ErrMismatch},
		{"a decided request says already decided", "approve", decided(bashRequest(), store.Decision{Outcome: store.OutcomeAllow, By: "U0BOB", At: t0}), store.Decision{}, NextDecide, store.ErrAlreadyDecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := payload(t, tt.payload)
			if len(cb.ActionCallback.BlockActions) != 1 {
				t.Fatalf("payload has %d actions", len(cb.ActionCallback.BlockActions))
			}
			a, ok := ParseAction(cb.ActionCallback.BlockActions[0])
			if !ok {
				t.Fatalf("ParseAction: not ours")
			}
			d, next, err := DecideAction(a, tt.r, cb, alice, clickAt)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if Explain(err) == "" {
					t.Errorf("Explain gives nothing for %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecideAction: %v", err)
			}
			if next != tt.wantNext {
				t.Errorf("next = %v, want %v", next, tt.wantNext)
			}
			if !reflect.DeepEqual(d, tt.want) {
				t.Errorf("decision = %+v\nwant       %+v", d, tt.want)
			}
			if d.Interrupt {
				t.Errorf("a click never interrupts")
			}
			if mk := next.Modal(); mk != ModalNone {
				if _, ok := Modal(mk, tt.r, cardRef); !ok {
					t.Errorf("no modal for %v", mk)
				}
			}
		})
	}
}

func TestIncompleteSubmitNamesTheQuestions(t *testing.T) {
	cb := payload(t, "submit_missing")
	a, _ := ParseAction(cb.ActionCallback.BlockActions[0])
	_, _, err := DecideAction(a, questionRequest(severalQuestions), cb, alice, clickAt)
	msg := Explain(err)
	for _, q := range []string{"Which database should we use?", "Which features do you want?"} {
		if !strings.Contains(msg, q) {
			t.Errorf("explanation %q does not name %q", msg, q)
		}
	}
}

func TestParseActionIgnoresOtherApps(t *testing.T) {
	cb := payload(t, "foreign")
	if a, ok := ParseAction(cb.ActionCallback.BlockActions[0]); ok {
		t.Fatalf("ParseAction accepted a foreign action: %+v", a)
	}
	for _, ba := range []*slack.BlockAction{
		nil,
		{ActionID: "sg_unknown", Value: "0|0|r"},
		{ActionID: "sg_approve", Value: "no-separators"},
		{ActionID: "sg_approve", Value: "x|0|r"},
		{ActionID: "sg_approve", Value: "0|0|"},
	} {
		if a, ok := ParseAction(ba); ok {
			t.Errorf("ParseAction(%+v) = %+v, want not ours", ba, a)
		}
	}
	if a, ok := ParseAction(&slack.BlockAction{ActionID: "sg_approve", Value: "0|0|id|with|bars"}); !ok || a.RequestID != "id|with|bars" {
		t.Errorf("request ids may contain '|': %+v %v", a, ok)
	}
}

func TestDecideViewFromSlackPayloads(t *testing.T) {
	base := store.Decision{By: "U0ALICE", ByName: "alice", At: clickAt}
	with := func(f func(*store.Decision)) store.Decision { d := base; f(&d); return d }
	tests := []struct {
		name     string
		payload  string
		r        store.Request
		wantKind ModalKind
		want     store.Decision
		wantErrs map[string]string // block ids that must carry an error
		wantErr  error
	}{
		{"deny with a reason", "view_deny", bashRequest(), ModalDeny,
			with(func(d *store.Decision) { d.Outcome = store.OutcomeDeny; d.Message = "Not on a Friday" }), nil, nil},
		{"deny without a reason and with stop", "view_deny_interrupt", bashRequest(), ModalDeny,
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeDeny
				d.Message = "Denied in Slack by alice."
				d.Interrupt = true
			}), nil, nil},
		{"plan feedback denies with the feedback", "view_plan_feedback", planRequest(), ModalDeny,
			with(func(d *store.Decision) { d.Outcome = store.OutcomeDeny; d.Message = "Add a rollback step first" }), nil, nil},
		{"empty plan feedback asks for it", "view_plan_empty", planRequest(), ModalDeny, store.Decision{},
			map[string]string{"sg_reason": ""}, nil},
		{"edited command comes back as input of the same shape", "view_edit_bash", bashRequest(), ModalEdit,
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.UpdatedInput = json.RawMessage(`{"command":"make deploy ENV=dev \u003c!channel\u003e","description":"Deploy to staging"}`)
			}), nil, nil},
		{"an emptied command is refused", "view_edit_bash_empty", bashRequest(), ModalEdit, store.Decision{},
			map[string]string{"sg_f:command": ""}, nil},
		{"an edited Edit keeps replace_all", "view_edit_edit", editRequest(), ModalEdit,
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.UpdatedInput = json.RawMessage(`{"file_path":"/srv/repo/main.go","new_string":"hello, world","old_string":"hi","replace_all":false}`)
			}), nil, nil},
		{"free text wins over the menu, labels are joined", "view_other", questionRequest(severalQuestions), ModalOther,
			with(func(d *store.Decision) {
				d.Outcome = store.OutcomeAllow
				d.Answers = map[string]string{"Which database should we use?": "MongoDB please (free text)", "Which features do you want?": "Auth, Search"}
			}), nil, nil},
		{"an unanswered question gets an error on its block", "view_other_missing", questionRequest(severalQuestions), ModalOther, store.Decision{},
			map[string]string{"sg_text:1": ""}, nil},
		{"a view for another request is a mismatch", "view_deny", writeRequest(), ModalDeny, store.Decision{}, nil, ErrMismatch},
		{"a decided request says already decided", "view_deny", decided(bashRequest(), store.Decision{Outcome: store.OutcomeExpired, At: t0}), ModalDeny, store.Decision{}, nil, store.ErrAlreadyDecided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cb := payload(t, tt.payload)
			v, err := ParseViewSubmission(cb)
			if err != nil {
				t.Fatalf("ParseViewSubmission: %v", err)
			}
			if v.Kind != tt.wantKind || v.Card != cardRef {
				t.Errorf("view action = %+v", v)
			}
			d, errs, err := DecideView(v, tt.r, cb, alice, clickAt)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecideView: %v", err)
			}
			if tt.wantErrs != nil {
				if len(errs) != len(tt.wantErrs) {
					t.Fatalf("errors = %v, want blocks %v", errs, tt.wantErrs)
				}
				for b := range tt.wantErrs {
					if errs[b] == "" {
						t.Errorf("no error on block %s: %v", b, errs)
					}
				}
				if d.Outcome != "" {
					t.Errorf("a decision came with the errors: %+v", d)
				}
				return
			}
			if errs != nil {
				t.Fatalf("unexpected errors %v", errs)
			}
			if !reflect.DeepEqual(d, tt.want) {
				t.Errorf("decision = %+v\nwant       %+v", d, tt.want)
			}
			if len(d.UpdatedInput) > 0 && !json.Valid(d.UpdatedInput) {
				t.Errorf("updated input is not JSON: %s", d.UpdatedInput)
			}
		})
	}
}

func TestParseViewSubmissionIgnoresOtherApps(t *testing.T) {
	if v, err := ParseViewSubmission(payload(t, "view_foreign")); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("ParseViewSubmission = %+v, %v; want ErrNotOurs", v, err)
	}
	cb := payload(t, "view_deny")
	cb.View.PrivateMetadata = "garbage"
	if _, err := ParseViewSubmission(cb); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("bad metadata: err = %v, want ErrNotOurs", err)
	}
}

// TestModalsRoundTrip opens each modal, fills it as a person would through
// the blocks it declares, and submits: what the modal asks for is what
// DecideView reads.
func TestModalsRoundTrip(t *testing.T) {
	r := bashRequest()
	mv := EditModal(r, cardRef)
	values := map[string]map[string]slack.BlockAction{}
	for _, b := range mv.Blocks.BlockSet {
		in, ok := b.(*slack.InputBlock)
		if !ok {
			continue
		}
		el := in.Element.(*slack.PlainTextInputBlockElement)
		values[in.BlockID] = map[string]slack.BlockAction{el.ActionID: {Value: el.InitialValue + " --dry-run"}}
	}
	cb := &slack.InteractionCallback{Type: slack.InteractionTypeViewSubmission,
		View: slack.View{CallbackID: mv.CallbackID, PrivateMetadata: mv.PrivateMetadata, State: &slack.ViewState{Values: values}}}
	v, err := ParseViewSubmission(cb)
	if err != nil {
		t.Fatal(err)
	}
	d, errs, err := DecideView(v, r, cb, alice, clickAt)
	if err != nil || errs != nil {
		t.Fatalf("DecideView: %v %v", err, errs)
	}
	if got := decodeInput(d.UpdatedInput).str("command"); got != "make deploy ENV=staging --dry-run" {
		t.Errorf("command = %q", got)
	}
	if got := decodeInput(d.UpdatedInput).str("description"); got != "Deploy to staging" {
		t.Errorf("description lost: %q", got)
	}
}

func TestNotEditableRequestsOfferNoEdit(t *testing.T) {
	long := make([]byte, MaxInputLength+1)
	for i := range long {
		long[i] = 'x'
	}
	tests := []struct {
		name string
		r    store.Request
		want bool
	}{
		{"Bash", bashRequest(), true},
		{"Write", writeRequest(), true},
		{"Edit", editRequest(), true},
		{"Write of an empty file", request("w", store.KindTool, "Write", `{"file_path":"/a","content":""}`), true},
		{"Read", request("r", store.KindTool, "Read", `{"file_path":"/a"}`), false},
		{"command over 3000 chars", request("b", store.KindTool, "Bash", `{"command":"`+string(long)+`"}`), false},
		{"command that is not a string", request("b", store.KindTool, "Bash", `{"command":["ls"]}`), false},
		{"plan", planRequest(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Editable(tt.r); got != tt.want {
				t.Errorf("Editable = %v, want %v", got, tt.want)
			}
			m := Card(tt.r, session)
			if got := strings.Contains(mustJSON(t, m.Blocks), `"sg_edit"`); got != tt.want {
				t.Errorf("card offers edit = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAModalCarriesTheResponseURLOfTheClickThatOpenedIt(t *testing.T) {
	const url = "https://hooks.slack.com/actions/T0/1/abc"
	for _, kind := range []ModalKind{ModalDeny, ModalEdit, ModalOther} {
		r := bashRequest()
		if kind == ModalOther {
			r = questionRequest(severalQuestions)
		}
		m, ok := Modal(kind, r, cardRef)
		if !ok {
			t.Fatalf("no %s modal", kind)
		}
		m = WithResponseURL(m, url)
		if err := ValidateView(m); err != nil {
			t.Fatalf("%s modal with a response_url: %v", kind, err)
		}
		cb := &slack.InteractionCallback{Type: slack.InteractionTypeViewSubmission}
		cb.View.CallbackID, cb.View.PrivateMetadata = m.CallbackID, m.PrivateMetadata
		v, err := ParseViewSubmission(cb)
		if err != nil || v.ResponseURL != url || v.Card != cardRef || v.RequestID != r.ID {
			t.Errorf("%s: ParseViewSubmission = %+v, %v", kind, v, err)
		}
	}
	// A modal opened without one (no click on the card) has none.
	m, _ := Modal(ModalDeny, bashRequest(), cardRef)
	cb := &slack.InteractionCallback{Type: slack.InteractionTypeViewSubmission}
	cb.View.CallbackID, cb.View.PrivateMetadata = m.CallbackID, m.PrivateMetadata
	if v, err := ParseViewSubmission(cb); err != nil || v.ResponseURL != "" {
		t.Errorf("ParseViewSubmission = %+v, %v; want no response_url", v, err)
	}
}
