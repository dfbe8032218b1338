package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// These tests run `slackgate run` with an MCP server registered in the
// operator's MCP config (CLAUDE_MCP_CONFIG) whose one tool asks the user for input (an MCP
// elicitation). The server is this test binary (elicitSwitch in TestMain);
// it answers the tool call with what the elicitation returned, so the
// model's tool result shows exactly what reached the server.

const (
	elicitSwitch = "SLACKGATE_TEST_RUN_ELICIT_SERVER"
	// elicitURLMode makes the server ask for a visit to loginURL instead.
	elicitURLMode = "SLACKGATE_TEST_ELICIT_URL"
	// elicitReadyURL is where the server says the CLI has listed its
	// tools (a GET), so the scripted model calls one only then.
	elicitReadyURL = "SLACKGATE_TEST_ELICIT_READY_URL"
	loginURL       = "https://login.example.com/device?code=AB12"
)

// deployElicitation is the form the test server asks for.
var deployElicitation = &mcp.ElicitParams{
	Message: "Where should the <!channel> deploy go?",
	RequestedSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"region":{"type":"string","title":"Region","oneOf":[{"const":"eu-west-1","title":"Europe"},{"const":"us-east-1","title":"US East"}]},` +
		`"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":5},` +
		`"notify":{"type":"boolean","title":"Notify the team"}},"required":["region","replicas"]}`),
}

// runElicitServerIfAsked makes the test binary an MCP server with the
// tool "deploy": it asks for deployElicitation (through the input
// requests of the current protocol; the SDK asks older clients directly)
// and returns "elicitation result: <JSON>".
func runElicitServerIfAsked() {
	if os.Getenv(elicitSwitch) != "1" {
		return
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "deployer", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				if resp, gerr := http.Get(os.Getenv(elicitReadyURL)); gerr == nil {
					_ = resp.Body.Close()
				}
			}
			return res, err
		}
	})
	s.AddTool(&mcp.Tool{Name: "deploy", Description: "Deploys, asking where.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			got, ok := req.Params.InputResponses["where"]
			if !ok {
				ask := deployElicitation
				if os.Getenv(elicitURLMode) == "1" {
					ask = &mcp.ElicitParams{Mode: "url", Message: "Sign in to deploy", URL: loginURL, ElicitationID: "login-1"}
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"where": ask}}, nil
			}
			b, _ := json.Marshal(got)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "elicitation result: " + string(b)}}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "elicitation server:", err)
	}
	os.Exit(0)
}

// startElicitApp runs slackgate with the test server as the CLI's MCP
// server "deployer" (CLAUDE_MCP_CONFIG), its tool allowed without a card by
// the operator's settings (CLAUDE_SETTINGS), and approvers only lee and kim.
func startElicitApp(t *testing.T, serverEnv ...string) *app {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The CLI connects its MCP servers while the first turn starts: on a
	// busy machine the model's call could come before the server (this
	// test binary, built with -race) has listed its tools. The model
	// answers once it has; 2.1.197 may still not have taken the tool on
	// (noSuchTool), and the model then calls it again.
	ready := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { once.Do(func() { close(ready) }) }))
	t.Cleanup(srv.Close)
	env := map[string]string{elicitSwitch: "1", elicitReadyURL: srv.URL}
	for _, kv := range serverEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	ops := t.TempDir() // the operator's files, outside the working directory
	mcp := writeJSON(t, filepath.Join(ops, "mcp.json"), map[string]any{"mcpServers": map[string]any{
		"deployer": map[string]any{"type": "stdio", "command": self, "env": env},
	}})
	settings := writeJSON(t, filepath.Join(ops, "settings.json"), map[string]any{"permissions": map[string]any{"allow": []string{"mcp__deployer__deploy"}}})
	return startApp(t, options{approvers: lee + "," + kim, configure: func(c *Config) { c.ClaudeMCPConfig, c.ClaudeSettings = mcp, settings }},
		relaytest.Hold(ready, relaytest.ToolUse("toolu_el", "mcp__deployer__deploy", map[string]any{})),
		relaytest.Func(func(req relaytest.Request) relaytest.Reply {
			if tr, _ := req.ToolResult("toolu_el"); strings.Contains(tr.Content, noSuchTool) {
				return relaytest.ToolUse("toolu_el2", "mcp__deployer__deploy", map[string]any{})
			}
			return relaytest.Text("deployed")
		}),
		relaytest.Text("deployed"))
}

// noSuchTool is what 2.1.197 answers a call of an MCP tool it has not
// taken on yet, though its server listed it: the model calls it again, as
// a model would.
const noSuchTool = "No such tool available"

// elicitResult is what the model was told the deploy tool returned, on
// its second call when the first came too early (noSuchTool).
func elicitResult(a *app) relaytest.ToolResult {
	a.tb.Helper()
	if tr := a.toolResult("toolu_el"); !strings.Contains(tr.Content, noSuchTool) {
		return tr
	}
	return a.toolResult("toolu_el2")
}

// writeJSON writes v to path and returns path.
func writeJSON(t *testing.T, path string, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestElicitationFormSubmittedInSlackReachesTheMCPServerTyped(t *testing.T) {
	t.Parallel()
	a := startElicitApp(t)
	thread := a.mention("deploy it")
	card := a.card(thread, "asks for input")
	if !card.HasText("&lt;!channel&gt;") || card.HasText("<!channel>") {
		t.Errorf("the server's message is not escaped on the card: %s", card.AllText())
	}
	// dana started the session but is no approver: her click opens nothing.
	a.click(dana, card.Ref(), "Fill in…")
	a.told(dana, "can decide Claude's requests")
	a.click(lee, card.Ref(), "Fill in…")
	view := a.view(lee)
	// Out of range first: the modal stays open with the field's error.
	resp, err := a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"Region": "Europe", "Replicas": "9"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Action != "errors" || len(resp.Errors) != 1 {
		t.Fatalf("submitting 9 replicas = %+v, want one field error", resp)
	}
	for _, msg := range resp.Errors {
		if !strings.Contains(msg, "at most 5") {
			t.Errorf("field error %q does not say the bound", msg)
		}
	}
	if resp, err = a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"Region": "Europe", "Replicas": "3", "Notify the team": "Yes"}); err != nil || resp.Action != "" {
		t.Fatalf("submitting a good form: %+v, %v", resp, err)
	}
	res := elicitResult(a)
	want := `elicitation result: {"action":"accept","content":{"notify":true,"region":"eu-west-1","replicas":3}}`
	if res.IsError || res.Content != want {
		t.Errorf("the MCP server got %q (is_error %v), want %q", res.Content, res.IsError, want)
	}
	final := a.settled(card.Ref(), "Submitted")
	if !final.HasText("<@"+lee+">") || !final.HasText("Europe") {
		t.Errorf("the settled card does not say who submitted what: %s", final.AllText())
	}
	a.threadText(thread, "deployed")
}

func TestElicitationDeclinedInSlackTellsTheMCPServer(t *testing.T) {
	t.Parallel()
	a := startElicitApp(t)
	thread := a.mention("deploy it")
	card := a.card(thread, "asks for input")
	a.click(kim, card.Ref(), "Decline")
	if res := elicitResult(a); res.Content != `elicitation result: {"action":"decline"}` {
		t.Errorf("the MCP server got %q, want a decline", res.Content)
	}
	a.settled(card.Ref(), "Declined")
	a.threadText(thread, "deployed")
}

func TestElicitationLinkShowsItsHostAndDoneAcceptsIt(t *testing.T) {
	t.Parallel()
	a := startElicitApp(t, elicitURLMode+"=1")
	thread := a.mention("deploy it")
	card := a.card(thread, "asks you to open a link")
	if !card.HasText("Opens *login.example.com*") || !slices.Contains(card.Buttons(), "Open login.example.com") {
		t.Errorf("the card does not name the link's host on the text and the button: %s %q", card.AllText(), card.Buttons())
	}
	a.click(lee, card.Ref(), "Open login.example.com") // Slack opens the URL; nothing is decided
	a.click(lee, card.Ref(), "Done")
	if res := elicitResult(a); res.Content != `elicitation result: {"action":"accept"}` {
		t.Errorf("the MCP server got %q, want an accept", res.Content)
	}
	a.settled(card.Ref(), "Done")
}
