package store_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// fullRequest sets every field of a Request (storetest.EveryFieldSet checks it), so
// the record's JSON below covers each.
func fullRequest() store.Request {
	return store.Request{
		ID: "r1", SessionID: "s1", CLIRequestID: "cli-1", Kind: store.KindTool,
		ToolCall: store.ToolCall{
			ToolName: "Bash", DisplayName: "Shell", Input: json.RawMessage(`{"command":"make test"}`), Description: "run the tests",
			BlockedPath: "/srv/repo/out", DecisionReason: "This command requires approval", DecisionReasonType: "other",
			ToolUseID: "toolu_1", AgentID: "agent-1", Title: "Run the tests?", MCPServer: "ci", SuppressAlwaysAllow: true,
		},
		Suggestions: []store.Suggestion{{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "make test"}},
			Behavior: "allow", Destination: "localSettings"}},
		Home: "/home/ada", Resolved: map[string]string{"/srv/repo/out": "/data/out"}, TurnBy: []string{"U1"},
		CreatedAt: at, Deadline: at.Add(time.Hour),
		Card: store.MessageRef{Channel: "C1", TS: "1700000000.000100"},
		CardState: store.CardState{ClaimedUntil: at.Add(time.Minute), Clicks: []string{"0123456789abcdef01234567"},
			Shown: store.CardShown{By: store.CardShownByClick, Decision: "0123456789abcdef01234567"}, InputAttached: true},
		Reach:     store.Reach{Copies: []store.MessageRef{{Channel: "C2", TS: "1700000000.000200"}}, Reminded: at.Add(time.Minute)},
		Approvals: []store.Approval{{By: "U2", ByName: "Bo", At: at.Add(2 * time.Minute)}},
		Decision:  &store.Decision{Outcome: store.OutcomeAllow, By: "U3", ByName: "Cy", At: at.Add(3 * time.Minute)},
	}
}

// TestRequestRecordKeepsItsJSON: a request reads from and writes to the
// JSON the stores keep (testdata/request.json, written by an earlier
// version), key for key and value for value, so records written before and
// after a change of the Go types read the same.
func TestRequestRecordKeepsItsJSON(t *testing.T) {
	want := fullRequest()
	storetest.EveryFieldSet(t, want)
	raw, err := os.ReadFile("testdata/request.json")
	if err != nil {
		t.Fatal(err)
	}
	var got store.Request
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("testdata/request.json reads as\n%+v\nwant\n%+v", got, want)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	storetest.SameJSON(t, b, raw)
}
