package main

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestApproveOutputFollowsThePermissionResultSchema(t *testing.T) {
	input := json.RawMessage(`{"command":"ls","description":"List"}`)
	edited := json.RawMessage(`{"command":"ls -la","description":"List"}`)
	perm := json.RawMessage(`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"session"}`)
	tests := []struct {
		name string
		d    *apiDecision
		err  error
		want string
	}{
		{"approved", &apiDecision{Outcome: "allow", UpdatedInput: input},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"}}`},
		{"edited", &apiDecision{Outcome: "allow", UpdatedInput: edited},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls -la","description":"List"}}`},
		{"allowed for the session", &apiDecision{Outcome: "allow", UpdatedInput: input, Permissions: []json.RawMessage{perm}},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"},"updatedPermissions":[` + string(perm) + `]}`},
		{"allowed without an input keeps the original", &apiDecision{Outcome: "allow", UpdatedInput: json.RawMessage("null")},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"}}`},
		{"denied with a reason", &apiDecision{Outcome: "deny", Message: "use make clean"},
			nil, `{"behavior":"deny","message":"use make clean"}`},
		{"denied without a reason", &apiDecision{Outcome: "deny", ByName: "dana"},
			nil, `{"behavior":"deny","message":"Denied in Slack by dana."}`},
		{"denied and stopped", &apiDecision{Outcome: "deny", Message: "stop", Interrupt: true},
			nil, `{"behavior":"deny","message":"stop","interrupt":true}`},
		{"refused", &apiDecision{Outcome: "refused", Message: "dana may not approve in #general"},
			nil, `{"behavior":"deny","message":"dana may not approve in #general"}`},
		{"expired", &apiDecision{Outcome: "expired"},
			nil, `{"behavior":"deny","message":"Nobody answered this permission request in Slack (expired); the tool was not run."}`},
		{"nobody answered", nil,
			nil, `{"behavior":"deny","message":"Nobody answered this permission request in Slack in time; the tool was not run."}`},
		{"unreachable", nil, errors.New("dial tcp: connection refused"),
			`{"behavior":"deny","message":"slackgate could not ask anyone (its approval API is unreachable or refused the request): dial tcp: connection refused"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := promptResult(approveOutput(input, tc.d, tc.err))
			if len(res.Content) != 1 {
				t.Fatalf("%d content blocks, Claude Code reads exactly one", len(res.Content))
			}
			b, err := json.Marshal(res.Content[0])
			if err != nil {
				t.Fatal(err)
			}
			var block struct{ Type, Text string }
			if err := json.Unmarshal(b, &block); err != nil {
				t.Fatal(err)
			}
			if block.Type != "text" || !jsonSame(t, json.RawMessage(block.Text), tc.want) {
				t.Errorf("got  %s %s\nwant text %s", block.Type, block.Text, tc.want)
			}
		})
	}
}
