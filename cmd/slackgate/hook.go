package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// `slackgate hook` is a Claude Code command hook: Claude Code runs it once
// per PermissionRequest (or PreToolUse, for questions) with the event on
// stdin, and reads the answer from stdout. It puts the prompt on a Slack
// card through the bot's approval API and waits for a person. Whatever goes
// wrong, it exits 0 and prints the pass-through "{}" (never "defer", which
// ends the turn), so the terminal's own prompt still works; errors go to
// stderr.

const (
	// maxHookWait bounds SLACKGATE_WAIT.
	maxHookWait = 24 * time.Hour
	// hookTimeoutMargin is how much longer than SLACKGATE_WAIT the installed
	// hook timeout is, so slackgate always answers before Claude Code gives
	// up on it.
	hookTimeoutMargin = time.Minute
	// hookPoll is one long poll; several make up the wait.
	hookPoll = 50 * time.Second
	// maxHookInput caps what is read from stdin.
	maxHookInput = 2 << 20
)

// hookInput is the part of Claude Code's hook input slackgate uses.
type hookInput struct {
	SessionID   string            `json:"session_id"`
	Cwd         string            `json:"cwd"`
	Event       string            `json:"hook_event_name"`
	ToolName    string            `json:"tool_name"`
	ToolInput   json.RawMessage   `json:"tool_input"`
	ToolUseID   string            `json:"tool_use_id"`
	Suggestions []json.RawMessage `json:"permission_suggestions"`
}

var passThrough = json.RawMessage(`{}`)

func (p program) hook(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return p.hookInstall(args[1:])
	}
	out, err := p.hookAnswer(ctx)
	if err != nil {
		fmt.Fprintln(p.stderr, "slackgate hook:", err, "(passing the prompt back to Claude Code)")
		out = passThrough
	}
	_, _ = p.stdout.Write(append(out, '\n'))
	return nil // a hook that fails must never fail the session
}

// hookAnswer reads the event, asks Slack and returns the hook output.
func (p program) hookAnswer(ctx context.Context) (json.RawMessage, error) {
	cfg, err := loadHookConfig(p.environ)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(io.LimitReader(p.stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("hook input is not JSON: %w", err)
	}
	if in.Event != "PermissionRequest" && in.Event != "PreToolUse" {
		return passThrough, nil
	}
	d, err := newAPIClient(cfg).ask(ctx, cfg, apiRequest{
		ToolName: in.ToolName, Input: in.ToolInput, ToolUseID: in.ToolUseID, Suggestions: in.Suggestions,
		SessionID: in.SessionID, Cwd: in.Cwd,
	})
	if d == nil {
		// Nobody decided in time, Claude Code stopped waiting (the person
		// answered in the terminal), or the API failed: pass through.
		return passThrough, err
	}
	return hookOutput(in.Event, *d)
}

// hookOutput turns a decision into the hook output for event; a decision
// that is nobody's answer (expired, cancelled, ended) passes through.
func hookOutput(event string, d apiDecision) (json.RawMessage, error) {
	var specific map[string]any
	who := cmp.Or(d.ByName, d.By, "a person")
	switch {
	case d.Outcome == "allow" && event == "PermissionRequest":
		dec := map[string]any{"behavior": "allow", "updatedInput": d.UpdatedInput}
		if len(d.Permissions) > 0 {
			dec["updatedPermissions"] = d.Permissions
		}
		specific = map[string]any{"decision": dec}
	case d.Outcome == "allow":
		specific = map[string]any{"permissionDecision": "allow", "permissionDecisionReason": "Approved in Slack by " + who, "updatedInput": d.UpdatedInput}
	case (d.Outcome == "deny" || d.Outcome == "refused") && event == "PermissionRequest":
		specific = map[string]any{"decision": map[string]any{"behavior": "deny", "message": d.Message, "interrupt": d.Interrupt}}
	case d.Outcome == "deny" || d.Outcome == "refused":
		specific = map[string]any{"permissionDecision": "deny", "permissionDecisionReason": d.Message}
	default:
		return passThrough, nil
	}
	if d.Outcome == "allow" && len(d.UpdatedInput) == 0 {
		return nil, errors.New("the API allowed without an input")
	}
	specific["hookEventName"] = event
	return json.Marshal(map[string]any{"hookSpecificOutput": specific})
}

// hookSettings is the settings.json block: PermissionRequest for every
// tool, PreToolUse for questions, each with a timeout longer than wait.
func hookSettings(command string, wait time.Duration) map[string]any {
	entry := func(matcher string) []any {
		return []any{map[string]any{"matcher": matcher, "hooks": []any{map[string]any{
			"type": "command", "command": command, "timeout": int((wait + hookTimeoutMargin).Seconds()),
		}}}}
	}
	return map[string]any{"hooks": map[string]any{
		"PermissionRequest": entry("*"),
		"PreToolUse":        entry(questionMatcher),
	}}
}

// questionMatcher selects Claude Code's AskUserQuestion and MCP tools of
// the same name.
const questionMatcher = "(AskUserQuestion|mcp__.*__AskUserQuestion)"
