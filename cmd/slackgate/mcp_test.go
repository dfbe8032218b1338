package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/store"
)

func TestApproveOutputFollowsThePermissionResultSchema(t *testing.T) {
	input := json.RawMessage(`{"command":"ls","description":"List"}`)
	edited := json.RawMessage(`{"command":"ls -la","description":"List"}`)
	perm := `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"session"}`
	suggestion := store.Suggestion{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "ls"}}, Behavior: "allow", Destination: "session"}
	tests := []struct {
		name string
		d    *approvalapi.Decision
		err  error
		want string
	}{
		{"approved", &approvalapi.Decision{Outcome: "allow", UpdatedInput: input},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"}}`},
		{"edited", &approvalapi.Decision{Outcome: "allow", UpdatedInput: edited},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls -la","description":"List"}}`},
		{"allowed for the session", &approvalapi.Decision{Outcome: "allow", UpdatedInput: input, Permissions: []store.Suggestion{suggestion}},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"},"updatedPermissions":[` + perm + `]}`},
		{"allowed without an input keeps the original", &approvalapi.Decision{Outcome: "allow", UpdatedInput: json.RawMessage("null")},
			nil, `{"behavior":"allow","updatedInput":{"command":"ls","description":"List"}}`},
		{"denied with a reason", &approvalapi.Decision{Outcome: "deny", Message: "use make clean"},
			nil, `{"behavior":"deny","message":"use make clean"}`},
		{"denied without a reason", &approvalapi.Decision{Outcome: "deny", ByName: "dana"},
			nil, `{"behavior":"deny","message":"Denied in Slack by dana."}`},
		{"denied and stopped", &approvalapi.Decision{Outcome: "deny", Message: "stop", Interrupt: true},
			nil, `{"behavior":"deny","message":"stop","interrupt":true}`},
		{"refused", &approvalapi.Decision{Outcome: "refused", Message: "dana may not approve in #general"},
			nil, `{"behavior":"deny","message":"dana may not approve in #general"}`},
		{"expired", &approvalapi.Decision{Outcome: "expired"},
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

// TestMCPServerDeniesWhenTheAPIIsUnreachable speaks MCP to `slackgate mcp`
// in-process: the handshake lists approve, a call against an API that is
// not there is a deny saying so (never a protocol error: Claude Code must
// get an answer), and closing the connection ends the server cleanly.
func TestMCPServerDeniesWhenTheAPIIsUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	var stderr syncBuffer
	p := program{environ: []string{"SLACKGATE_URL=" + dead, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "t", 0o600), "SLACKGATE_WAIT=10s"},
		stdin: toServer, stdout: fromServer, stderr: &stderr}
	served := make(chan error, 1)
	go func() {
		served <- p.run(ctx, []string{"mcp"})
		_ = fromServer.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "approve" {
		t.Fatalf("tools/list = %+v, %v; want the one tool approve", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{
		"tool_name": "Bash", "input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if len(res.Content) != 1 || !ok {
		t.Fatalf("result %+v: want one text block", res.Content)
	}
	var out struct{ Behavior, Message string }
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil || out.Behavior != "deny" || !strings.Contains(out.Message, "unreachable") {
		t.Errorf("answer %s (%v): want a deny saying slackgate is unreachable", text.Text, err)
	}
	// Claude Code ends the server by closing its stdin.
	_ = clientOut.Close()
	if err := <-served; err != nil {
		t.Errorf("the server ended with %v once Claude Code closed its stdin", err)
	}
	_ = cs.Close()
	if !strings.Contains(stderr.String(), "slackgate mcp: approval api") {
		t.Errorf("stderr does not say what failed: %q", stderr.String())
	}
}
