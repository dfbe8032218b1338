package relay

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func TestNewRequestCarriesEveryCanUseToolField(t *testing.T) {
	m, err := DecodeLine(corpusLines(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	c := *m.ControlRequest.CanUseTool
	c.AgentID = "agent-7"
	c.Title, c.MCPServer, c.SuppressAlwaysAllow = "Run the build?", "ci", true
	c.DecisionReason, c.DecisionReasonType = "This command requires approval", "other"
	now := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	r := NewRequest("sess-1", m.ControlRequest.RequestID, c, now, now.Add(time.Minute))
	want := store.Request{
		ID: r.ID, SessionID: "sess-1", CLIRequestID: "7b0a5703-1f2e-4c1a-9d7e-0a1b2c3d4e5f", Kind: store.KindTool,
		ToolCall: store.ToolCall{
			ToolName: "Bash", DisplayName: "Bash", Input: c.Input, Description: "same",
			BlockedPath: "/srv/repo/same.txt", DecisionReason: "This command requires approval", DecisionReasonType: "other",
			ToolUseID: "toolu_s1", AgentID: "agent-7", Title: "Run the build?", MCPServer: "ci", SuppressAlwaysAllow: true,
		},
		Suggestions: []store.Suggestion{
			{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "echo same *"}}, Behavior: "allow", Destination: "localSettings"},
			{Type: "addDirectories", Directories: []string{"/srv/repo"}, Destination: "session"},
		},
		CreatedAt: now, Deadline: now.Add(time.Minute),
	}
	if r.ID == "" {
		t.Error("no id")
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	if NewRequest("s", "c", c, now, time.Time{}).ID == r.ID {
		t.Error("ids repeat")
	}
}

func TestResultForBuildsWhatTheCLIRequires(t *testing.T) {
	bash := store.Request{Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"touch x","description":"make x"}`)}}
	question := store.Request{Kind: store.KindQuestion, ToolCall: store.ToolCall{
		ToolName: "AskUserQuestion",
		Input:    json.RawMessage(`{"questions":[{"question":"Which DB?","header":"DB","options":[{"label":"SQLite"},{"label":"Postgres"}],"multiSelect":false}]}`),
	}}
	at := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		req      store.Request
		d        store.Decision
		wantSent bool
		want     string // the response JSON
	}{
		{"allow without updated input sends the original input", bash,
			store.Decision{Outcome: store.OutcomeAllow, By: "U1", At: at}, true,
			`{"behavior":"allow","updatedInput":{"command":"touch x","description":"make x"}}`},
		{"allow with edited input sends the edit", bash,
			store.Decision{Outcome: store.OutcomeAllow, At: at, UpdatedInput: json.RawMessage(`{"command":"touch y"}`)}, true,
			`{"behavior":"allow","updatedInput":{"command":"touch y"}}`},
		{"allow with accepted suggestions sends updatedPermissions", bash,
			store.Decision{Outcome: store.OutcomeAllow, At: at, Permissions: []store.Suggestion{
				{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "touch *"}}, Behavior: "allow", Destination: "session"}}}, true,
			`{"behavior":"allow","updatedInput":{"command":"touch x","description":"make x"},"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"touch *"}],"behavior":"allow","destination":"session"}]}`},
		{"allow of a request without input sends an empty object", store.Request{Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "X"}},
			store.Decision{Outcome: store.OutcomeAllow, At: at}, true,
			`{"behavior":"allow","updatedInput":{}}`},
		{"deny without message gets a default naming the person", bash,
			store.Decision{Outcome: store.OutcomeDeny, ByName: "Alice", At: at}, true,
			`{"behavior":"deny","message":"Denied by Alice."}`},
		{"deny keeps the person's message", bash,
			store.Decision{Outcome: store.OutcomeDeny, ByName: "Alice", At: at, Message: "use a different file"}, true,
			`{"behavior":"deny","message":"use a different file"}`},
		{"deny with interrupt sets the flag", bash,
			store.Decision{Outcome: store.OutcomeDeny, ByName: "Alice", At: at, Interrupt: true}, true,
			`{"behavior":"deny","message":"Denied by Alice.","interrupt":true}`},
		{"expired is a deny saying nobody answered", bash,
			store.Decision{Outcome: store.OutcomeExpired, At: at, Message: ExpiredMessage(5 * time.Minute)}, true,
			`{"behavior":"deny","message":` + mustJSON(ExpiredMessage(5*time.Minute)) + `}`},
		{"expired without message still says so", bash,
			store.Decision{Outcome: store.OutcomeExpired, At: at}, true,
			`{"behavior":"deny","message":"Nobody answered this permission request within the timeout, so it was denied."}`},
		{"cancelled sends nothing", bash, store.Decision{Outcome: store.OutcomeCancelled, At: at}, false, ``},
		{"ended sends nothing", bash, store.Decision{Outcome: store.OutcomeEnded, At: at}, false, ``},
		{"answers are merged into the original input", question,
			store.Decision{Outcome: store.OutcomeAllow, At: at, Answers: map[string]string{"Which DB?": "SQLite"}}, true,
			`{"behavior":"allow","updatedInput":{"answers":{"Which DB?":"SQLite"},"questions":[{"question":"Which DB?","header":"DB","options":[{"label":"SQLite"},{"label":"Postgres"}],"multiSelect":false}]}}`},
		{"declined question gets a question-specific default", question,
			store.Decision{Outcome: store.OutcomeDeny, ByName: "Bob", At: at}, true,
			`{"behavior":"deny","message":"Bob declined to answer."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, sent, err := ResultFor(tt.req, tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if sent != tt.wantSent {
				t.Fatalf("sent = %v, want %v", sent, tt.wantSent)
			}
			if !sent {
				return
			}
			got, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestResultForRejectsAnswersToANonObjectInput(t *testing.T) {
	r := store.Request{Kind: store.KindQuestion, ToolCall: store.ToolCall{Input: json.RawMessage(`"x"`)}}
	_, _, err := ResultFor(r, store.Decision{Outcome: store.OutcomeAllow, Answers: map[string]string{"q": "a"}})
	if err == nil || !strings.Contains(err.Error(), "not an object") {
		t.Fatalf("err = %v", err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestFallbackWordingDoesNotNameTheChatTool(t *testing.T) {
	// The bot supplies what a decision tells Claude; relay's fallbacks
	// stay neutral, whatever front end decided.
	msgs := []string{ExpiredMessage(time.Minute)}
	for _, kind := range []store.Kind{store.KindTool, store.KindQuestion, store.KindPlan} {
		msgs = append(msgs, defaultDenyMessage(kind, "Alice"), defaultDenyMessage(kind, ""))
		res, _, err := ResultFor(store.Request{Kind: kind, ToolCall: store.ToolCall{ToolName: "X"}}, store.Decision{Outcome: store.OutcomeExpired})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, res.Message)
	}
	for _, m := range msgs {
		if m == "" || strings.Contains(strings.ToLower(m), "slack") {
			t.Errorf("fallback message %q is empty or names Slack", m)
		}
	}
}

func TestElicitationRequestAndResultMapping(t *testing.T) {
	line := []byte(`{"type":"control_request","request_id":"cli-e","request":{"subtype":"elicitation","mcp_server_name":"probe",` +
		`"message":"Which region?","mode":"form","requested_schema":{"type":"object","properties":{"region":{"type":"string"}}},"title":"Deploy"}}`)
	m, err := DecodeLine(line)
	if err != nil || m.ControlRequest == nil || m.ControlRequest.Elicitation == nil {
		t.Fatalf("decode: %+v, %v", m, err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := NewElicitationRequest("sess-1", "cli-e", *m.ControlRequest.Elicitation, now, now.Add(time.Hour))
	if r.Kind != store.KindElicitation || r.ToolName != ElicitationTool || r.MCPServer != "probe" || r.Title != "Deploy" ||
		r.CLIRequestID != "cli-e" || string(r.Input) != string(m.ControlRequest.Request) || r.ValidateNew() != nil {
		t.Errorf("request = %+v", r)
	}
	at := now.Add(time.Minute)
	for _, tc := range []struct {
		name string
		d    store.Decision
		want string // the JSON sent, "" for nothing
	}{
		{"submitted", store.Decision{Outcome: store.OutcomeAllow, At: at, Content: json.RawMessage(`{"region":"eu"}`)}, `{"action":"accept","content":{"region":"eu"}}`},
		{"link visited", store.Decision{Outcome: store.OutcomeAllow, At: at}, `{"action":"accept"}`},
		{"declined", store.Decision{Outcome: store.OutcomeDeny, At: at}, `{"action":"decline"}`},
		{"cancelled by the person", store.Decision{Outcome: store.OutcomeDeny, Skipped: true, At: at}, `{"action":"cancel"}`},
		{"nobody answered", store.Decision{Outcome: store.OutcomeExpired, At: at}, `{"action":"cancel"}`},
		{"refused", store.Decision{Outcome: store.OutcomeRefused, At: at}, `{"action":"decline"}`},
		{"withdrawn by Claude", store.Decision{Outcome: store.OutcomeCancelled, At: at}, ""},
		{"process ended", store.Decision{Outcome: store.OutcomeEnded, At: at}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, ok, err := ElicitResultFor(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if ok {
				b, _ := json.Marshal(res)
				got = string(b)
			}
			if got != tc.want {
				t.Errorf("sent %q, want %q", got, tc.want)
			}
		})
	}
	if _, _, err := ElicitResultFor(store.Decision{Outcome: store.OutcomeAllow, Content: json.RawMessage(`[1]`)}); !errors.Is(err, ErrInvalidResult) {
		t.Errorf("content that is not an object: err = %v, want ErrInvalidResult", err)
	}
}
