package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
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

// hookDecision is the approval API's decision (bot/api.go's apiDecision).
type hookDecision struct {
	Outcome      string            `json:"outcome"`
	UpdatedInput json.RawMessage   `json:"updated_input"`
	Permissions  []json.RawMessage `json:"updated_permissions"`
	Message      string            `json:"message"`
	Interrupt    bool              `json:"interrupt"`
	By           string            `json:"by"`
	ByName       string            `json:"by_name"`
}

type hookStatus struct {
	ID       string        `json:"id"`
	Status   string        `json:"status"`
	Decision *hookDecision `json:"decision"`
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
	c := apiClient{base: strings.TrimRight(cfg.URL, "/"), token: cfg.Token, http: &http.Client{Timeout: hookPoll + 15*time.Second}}
	ctx, cancel := context.WithTimeout(ctx, cfg.Wait)
	defer cancel()
	id, err := c.create(ctx, in, cfg)
	if err != nil {
		return nil, err
	}
	d, err := c.await(ctx, id)
	if d == nil {
		// Nobody decided in time, or Claude Code stopped waiting (the
		// person answered in the terminal): withdraw the card.
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer wcancel()
		if derr := c.withdraw(wctx, id); derr != nil {
			err = errors.Join(err, derr)
		}
		return passThrough, err
	}
	return hookOutput(in.Event, *d)
}

// hookOutput turns a decision into the hook output for event; a decision
// that is nobody's answer (expired, cancelled, ended) passes through.
func hookOutput(event string, d hookDecision) (json.RawMessage, error) {
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

// apiClient speaks to the bot's approval API.
type apiClient struct {
	base, token string
	http        *http.Client
}

func (c apiClient) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("approval api: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("approval api %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("approval api %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("approval api %s %s: answer is not JSON: %w", method, path, err)
	}
	return nil
}

func (c apiClient) create(ctx context.Context, in hookInput, cfg HookConfig) (string, error) {
	host, _ := os.Hostname()
	body := map[string]any{
		"tool_name": in.ToolName, "input": in.ToolInput, "tool_use_id": in.ToolUseID,
		"permission_suggestions": in.Suggestions,
		// The card outlives the wait a little: the hook withdraws it first.
		"timeout": (cfg.Wait + hookTimeoutMargin).String(),
		"session": map[string]string{"id": in.SessionID, "host": host, "cwd": in.Cwd, "name": cfg.User},
	}
	var st hookStatus
	if err := c.do(ctx, http.MethodPost, "/v1/requests", body, &st); err != nil {
		return "", err
	}
	return st.ID, nil
}

// await long-polls until the request is decided (its decision) or ctx
// ends (nil and ctx's error).
func (c apiClient) await(ctx context.Context, id string) (*hookDecision, error) {
	for {
		wait := hookPoll
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		var st hookStatus
		// At least a second: a shorter poll would only spin; ctx still
		// cuts it at the deadline.
		poll := max(wait.Round(time.Second), time.Second)
		err := c.do(ctx, http.MethodGet, "/v1/requests/"+id+"?wait="+poll.String(), nil, &st)
		switch {
		case ctx.Err() != nil:
			return nil, nil // the wait is over: pass through, no error to report
		case err != nil:
			return nil, err
		case st.Decision != nil:
			return st.Decision, nil
		}
	}
}

func (c apiClient) withdraw(ctx context.Context, id string) error {
	var st hookStatus
	return c.do(ctx, http.MethodDelete, "/v1/requests/"+id, nil, &st)
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
