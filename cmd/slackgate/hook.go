package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
)

// `slackgate hook` is a Claude Code command hook: Claude Code runs it once
// per PermissionRequest (or PreToolUse, for questions) with the event on
// stdin, and reads the answer from stdout. It puts the prompt on a Slack
// card through the bot's approval API and waits for a person. On
// PostToolUse and PostToolUseFailure it reports what ran, for the audit
// log and the session's thread, and answers at once. Whatever goes
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
	SessionID   string             `json:"session_id"`
	Cwd         string             `json:"cwd"`
	Event       string             `json:"hook_event_name"`
	ToolName    string             `json:"tool_name"`
	ToolInput   json.RawMessage    `json:"tool_input"`
	ToolUseID   string             `json:"tool_use_id"`
	Suggestions []store.Suggestion `json:"permission_suggestions"`
	// PostToolUse: what the tool returned; PostToolUseFailure: its error.
	ToolResponse json.RawMessage `json:"tool_response"`
	Error        string          `json:"error"`
}

var passThrough = json.RawMessage(`{}`)

func (p program) hook(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "install" {
		return p.hookInstall(args[1:])
	}
	out, err := p.hookAnswer(ctx, args)
	if err != nil {
		fmt.Fprintln(p.stderr, "slackgate hook:", err, "(passing the prompt back to Claude Code)")
		out = passThrough
	}
	_, _ = p.stdout.Write(append(out, '\n'))
	return nil // a hook that fails must never fail the session
}

// hookAnswer reads the event, asks Slack and returns the hook output.
func (p program) hookAnswer(ctx context.Context, args []string) (json.RawMessage, error) {
	cfg, err := loadHookConfig(p.environ)
	if err != nil {
		return nil, err
	}
	if err := cfg.waitFlag(args, p.stderr); err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(p.stderr, "slackgate hook: warning:", w)
	}
	raw, err := io.ReadAll(io.LimitReader(p.stdin, maxHookInput))
	if err != nil {
		return nil, fmt.Errorf("read hook input: %w", err)
	}
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("hook input is not JSON: %w", err)
	}
	switch in.Event {
	case "PostToolUse", "PostToolUseFailure":
		return passThrough, reportToolRan(ctx, newAPIClient(cfg), cfg, in)
	case "PermissionRequest", "PreToolUse":
	default:
		return passThrough, nil
	}
	d, err := askSlack(ctx, newAPIClient(cfg), cfg, apiRequest{
		ToolCall:    store.ToolCall{ToolName: in.ToolName, Input: in.ToolInput, ToolUseID: in.ToolUseID},
		Suggestions: in.Suggestions, SessionID: in.SessionID, Cwd: in.Cwd, Terminal: true,
	})
	switch {
	case d != nil:
		return hookOutput(in.Event, *d)
	case err == nil && ctx.Err() != nil:
		return passThrough, errors.New("stopped: Claude Code no longer waits (the prompt was answered in the terminal)")
	case err == nil:
		return passThrough, fmt.Errorf("nobody answered in Slack within %s", shortDuration(cfg.Wait))
	}
	return passThrough, err // the API failed
}

// waitFlag reads the hook's one flag, -wait D: what `hook install -wait`
// puts in the command, so the hook waits as long as the timeout installed
// beside it allows. It wins over SLACKGATE_WAIT, which would otherwise let
// Claude Code end the hook before it answers.
func (c *HookConfig) waitFlag(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	wait := fs.Duration("wait", 0, "how long to wait for a person (default SLACKGATE_WAIT, else 10m)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("hook: %w (slackgate hook -h says how to call it)", err)
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("hook: unexpected argument %q (slackgate hook -h says how to call it)", fs.Arg(0))
	case *wait == 0:
		return nil
	case *wait < 0 || *wait > maxHookWait:
		return fmt.Errorf("hook: -wait %s: must be positive and at most %s", *wait, maxHookWait)
	}
	if c.Wait != *wait && c.waitSet {
		c.Warnings = append(c.Warnings, fmt.Sprintf("SLACKGATE_WAIT=%s is not used: the hook waits %s, the -wait it was installed with "+
			"(Claude Code's timeout for it is a minute longer); run slackgate hook install -wait again to change it", shortDuration(c.Wait), shortDuration(*wait)))
	}
	c.Wait = *wait
	return nil
}

// shortDuration is d as a person writes it: 10m, not 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// hookSpecific is Claude Code's hookSpecificOutput for the two events the
// hook answers. A PermissionRequest's decision is a permission result, the
// same the stdio protocol carries; PreToolUse says allow or deny in fields
// of its own, with the input to run.
type hookSpecific struct {
	HookEventName            string                  `json:"hookEventName"`
	Decision                 *relay.PermissionResult `json:"decision,omitempty"`
	PermissionDecision       string                  `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string                  `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             json.RawMessage         `json:"updatedInput,omitempty"`
}

// hookOutput turns a decision into the hook output for event; a decision
// that is nobody's answer (expired, cancelled, ended) passes through.
func hookOutput(event string, d approvalapi.Decision) (json.RawMessage, error) {
	res, ok, err := permissionResult(d)
	if err != nil || !ok {
		return passThrough, err
	}
	out := hookSpecific{HookEventName: event}
	switch {
	case event == "PermissionRequest":
		out.Decision = &res
	case res.Behavior == "allow":
		out.PermissionDecision, out.UpdatedInput = "allow", res.UpdatedInput
		out.PermissionDecisionReason = "Approved in Slack by " + cmp.Or(d.ByName, d.By, "a person")
		if d.Rule != "" {
			out.PermissionDecisionReason = "Allowed by slackgate's policy rule " + d.Rule
		}
	default:
		out.PermissionDecision, out.PermissionDecisionReason = "deny", res.Message
	}
	return json.Marshal(map[string]hookSpecific{"hookSpecificOutput": out})
}

// hookSettings is the settings.json block: PermissionRequest for every
// tool, PreToolUse for questions, each running command with -wait wait
// and a timeout longer than that.
func hookSettings(command string, wait time.Duration) map[string]any {
	entry := func(matcher string) []any {
		return []any{map[string]any{"matcher": matcher, "hooks": []any{map[string]any{
			"type": "command", "command": waitingCommand(command, wait), "timeout": int((wait + hookTimeoutMargin).Seconds()),
		}}}}
	}
	report := func() []any {
		return []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{
			"type": "command", "command": command, "timeout": int(reportTimeout.Seconds()) + 5,
		}}}}
	}
	return map[string]any{"hooks": map[string]any{
		"PermissionRequest":  entry("*"),
		"PreToolUse":         entry(questionMatcher),
		"PostToolUse":        report(),
		"PostToolUseFailure": report(),
	}}
}

// waitingCommand is command told to wait up to wait for a person.
func waitingCommand(command string, wait time.Duration) string {
	return command + " -wait " + shortDuration(wait)
}

// reportTimeout bounds a PostToolUse report: Claude Code waits for it
// before it goes on.
const reportTimeout = 15 * time.Second

// maxReportedError caps the error text a report carries.
const maxReportedError = 2000

// reportToolRan tells the bot what ran (PostToolUse) or failed
// (PostToolUseFailure), for the audit log and the session's thread.
func reportToolRan(ctx context.Context, c *approvalapi.Client, cfg HookConfig, in hookInput) error {
	ctx, cancel := context.WithTimeout(ctx, reportTimeout)
	defer cancel()
	failed, text := toolFailed(in)
	input := in.ToolInput
	if len(input) == 0 || string(input) == "null" {
		input = json.RawMessage(`{}`)
	}
	return explainAPIError(c.ReportToolRan(ctx, approvalapi.ToolRan{
		ToolName: in.ToolName, Input: input, ToolUseID: in.ToolUseID, Failed: failed,
		Error: capBytes(text, maxReportedError), Session: from(cfg, in.SessionID, in.Cwd),
	}), cfg.Token)
}

// toolFailed reads the outcome of a tool call from the hook input: a
// PostToolUseFailure failed with its error; a PostToolUse response that
// says it is an error ("is_error": true, "success": false) failed too.
func toolFailed(in hookInput) (bool, string) {
	if in.Event == "PostToolUseFailure" {
		return true, in.Error
	}
	var resp struct {
		IsError *bool  `json:"is_error"`
		Success *bool  `json:"success"`
		Error   string `json:"error"`
		Stderr  string `json:"stderr"`
	}
	if json.Unmarshal(in.ToolResponse, &resp) != nil {
		return false, ""
	}
	if (resp.IsError != nil && *resp.IsError) || (resp.Success != nil && !*resp.Success) {
		return true, cmp.Or(resp.Error, resp.Stderr)
	}
	return false, ""
}

// capBytes shortens s to at most n bytes on a rune boundary.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// questionMatcher selects Claude Code's AskUserQuestion and MCP tools of
// the same name.
const questionMatcher = "(AskUserQuestion|mcp__.*__AskUserQuestion)"
