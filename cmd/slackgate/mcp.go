package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
)

// `slackgate mcp` is an MCP stdio server with one tool, approve, for
// `claude -p --permission-prompt-tool mcp__slackgate__approve`: a CI job's
// permission prompts become Slack cards through the bot's approval API.
// Unlike the hook it cannot pass a prompt back (in -p mode nobody else
// would answer it), so nobody deciding or the API failing is a deny that
// says so.

// approveArgs is what Claude Code passes the permission-prompt tool.
type approveArgs struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// approveSchema accepts Claude Code's call; the tool is hidden from the
// model, so the schema documents rather than guides.
var approveSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"tool_name":{"type":"string"},"input":{"type":"object"},"tool_use_id":{"type":"string"}},` +
	`"required":["tool_name","input"]}`)

func (p program) mcp(ctx context.Context) error {
	cfg, err := loadHookConfig(p.environ)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(p.stderr, "slackgate mcp: warning:", w)
	}
	// Claude Code does not name its session in tools/call: one server
	// process serves one session, so an id per process keeps its requests
	// in one thread.
	session := cmp.Or(cfg.ClaudeSession, uuid.NewString())
	cwd, _ := os.Getwd()
	client := newAPIClient(cfg)
	s := mcp.NewServer(&mcp.Implementation{Name: "slackgate", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "approve",
		Description: "Asks a person in Slack whether Claude Code may use a tool.",
		InputSchema: approveSchema,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args approveArgs
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.ToolName == "" || len(args.Input) == 0 {
			return promptResult(deny("slackgate could not read the permission request: " + cmp.Or(fmt.Sprint(err), "no tool name or input"))), nil
		}
		d, err := askSlack(ctx, client, cfg, apiRequest{
			ToolCall: store.ToolCall{ToolName: args.ToolName, Input: args.Input, ToolUseID: args.ToolUseID}, SessionID: session, Cwd: cwd,
		})
		if err != nil {
			fmt.Fprintln(p.stderr, "slackgate mcp:", err)
		}
		return promptResult(approveOutput(args.Input, d, err)), nil
	})
	t := &mcp.IOTransport{Reader: io.NopCloser(p.stdin), Writer: nopWriteCloser{p.stdout}}
	if err := s.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// approveOutput is the permission result for a decision: allow always
// with the whole input (the edited one when a person edited it), deny
// always with a message. A nil decision is nobody's answer; err says why.
func approveOutput(input json.RawMessage, d *approvalapi.Decision, err error) relay.PermissionResult {
	switch {
	case d == nil && err != nil:
		return deny("slackgate could not ask anyone (its approval API is unreachable or refused the request): " + err.Error())
	case d == nil:
		return deny("Nobody answered this permission request in Slack in time; the tool was not run.")
	}
	dec := *d
	if dec.Outcome == store.OutcomeAllow && (len(dec.UpdatedInput) == 0 || string(dec.UpdatedInput) == "null") {
		dec.UpdatedInput = input // the API always sends one; never allow without it
	}
	res, ok, err := permissionResult(dec)
	switch {
	case err != nil:
		return deny("slackgate: " + err.Error())
	case !ok: // expired, cancelled, ended: nobody decided
		return deny(cmp.Or(d.Message, "Nobody answered this permission request in Slack ("+string(d.Outcome)+"); the tool was not run."))
	}
	return res
}

func deny(message string) relay.PermissionResult { return relay.Deny(message, false) }

// promptResult is the single text block Claude Code reads a
// permission-prompt tool's answer from.
func promptResult(out relay.PermissionResult) *mcp.CallToolResult {
	b, err := json.Marshal(out)
	if err != nil { // only a malformed updatedInput could do this
		b, _ = json.Marshal(deny("slackgate: the decision is not JSON: " + err.Error()))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
