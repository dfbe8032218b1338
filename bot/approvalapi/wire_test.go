package approvalapi

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// newRequestJSON is a POST /v1/requests body with every field the API
// takes, as clients send it.
const newRequestJSON = `{"tool_name":"Bash","input":{"command":"make test"},"tool_use_id":"toolu_1","title":"Run the tests?",` +
	`"description":"run the tests","permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"make test"}],` +
	`"behavior":"allow","destination":"localSettings"}],"timeout":"5m","session":{"id":"s-1","host":"dev1","cwd":"/srv/repo","name":"Ada"},` +
	`"home":"/home/ada","resolved":{"/srv/repo":"/data/repo"}}`

func fullNewRequest() NewRequest {
	return NewRequest{
		ToolCall: store.ToolCall{
			ToolName: "Bash", Input: json.RawMessage(`{"command":"make test"}`), ToolUseID: "toolu_1", Title: "Run the tests?",
			Description: "run the tests",
		},
		Suggestions: []store.Suggestion{{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "make test"}},
			Behavior: "allow", Destination: "localSettings"}},
		Timeout: "5m", Session: Session{ID: "s-1", Host: "dev1", Cwd: "/srv/repo", Name: "Ada"},
		Home: "/home/ada", Resolved: map[string]string{"/srv/repo": "/data/repo"},
	}
}

// TestNewRequestKeepsItsJSON: the body a client sends reads as the
// request it meant, and a request writes as that body, key for key and
// value for value, so clients and bots of other versions agree.
func TestNewRequestKeepsItsJSON(t *testing.T) {
	want := fullNewRequest()
	var got NewRequest
	if err := json.Unmarshal([]byte(newRequestJSON), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reads as\n%+v\nwant\n%+v", got, want)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameJSON(t, b, []byte(newRequestJSON))
}
