package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHookOutputFollowsTheHookProtocol(t *testing.T) {
	input := json.RawMessage(`{"command":"ls"}`)
	perm := json.RawMessage(`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"session"}`)
	tests := []struct {
		name, event string
		d           apiDecision
		want        string
	}{
		{"permission allowed", "PermissionRequest", apiDecision{Outcome: "allow", UpdatedInput: input, Permissions: []json.RawMessage{perm}},
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"command":"ls"},"updatedPermissions":[` + string(perm) + `]},"hookEventName":"PermissionRequest"}}`},
		{"permission denied with interrupt", "PermissionRequest", apiDecision{Outcome: "deny", Message: "no", Interrupt: true},
			`{"hookSpecificOutput":{"decision":{"behavior":"deny","interrupt":true,"message":"no"},"hookEventName":"PermissionRequest"}}`},
		{"question answered", "PreToolUse", apiDecision{Outcome: "allow", UpdatedInput: input, ByName: "dana"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Approved in Slack by dana","updatedInput":{"command":"ls"}}}`},
		{"question declined", "PreToolUse", apiDecision{Outcome: "deny", Message: "declined"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"declined"}}`},
		{"expired passes through", "PermissionRequest", apiDecision{Outcome: "expired", Message: "late"}, `{}`},
		{"cancelled passes through", "PreToolUse", apiDecision{Outcome: "cancelled"}, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hookOutput(tc.event, tc.d)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonSame(t, got, tc.want) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	if _, err := hookOutput("PermissionRequest", apiDecision{Outcome: "allow"}); err == nil {
		t.Error("an allow without an input was turned into an output; Claude Code would fail its schema")
	}
}

func jsonSame(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// A hook that cannot do its work passes through and exits 0: the terminal's
// own prompt still works and the session goes on.
func TestHookFailuresPassThroughAndSayWhy(t *testing.T) {
	event := `{"session_id":"s1","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`
	tests := []struct {
		name, stdin, why string
		environ          []string
	}{
		{"no url", event, "SLACKGATE_URL is required", []string{"SLACKGATE_TOKEN=x"}},
		{"no token", event, "SLACKGATE_TOKEN is required", []string{"SLACKGATE_URL=http://127.0.0.1:1"}},
		{"bad wait", event, "SLACKGATE_WAIT", []string{"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN=x", "SLACKGATE_WAIT=-1s"}},
		{"input not json", "{", "not JSON", []string{"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN=x"}},
		{"api unreachable", event, "approval api POST /v1/requests", []string{"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN=x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p := program{environ: tc.environ, stdin: strings.NewReader(tc.stdin), stdout: &out, stderr: &errb}
			if err := p.run(ctx, []string{"hook"}); err != nil {
				t.Fatalf("hook returned %v; it must never fail the session", err)
			}
			if strings.TrimSpace(out.String()) != "{}" {
				t.Errorf("stdout = %q, want the pass-through {}", out.String())
			}
			if !strings.Contains(errb.String(), tc.why) {
				t.Errorf("stderr = %q, want it to say %q", errb.String(), tc.why)
			}
		})
	}
}

func TestHookInstallPrintsHooksThatOutwaitTheHook(t *testing.T) {
	out, err := runProgram(t, nil, "hook", "install", "-command", "/usr/local/bin/slackgate hook", "-wait", "5m")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if m := s.Hooks["PreToolUse"][0].Matcher; m != "(AskUserQuestion|mcp__.*__AskUserQuestion)" {
		t.Errorf("PreToolUse matcher = %q", m)
	}
	for event, entries := range s.Hooks {
		h := entries[0].Hooks[0]
		switch {
		case h.Command != "/usr/local/bin/slackgate hook":
			t.Errorf("%s hook = %+v, want the command", event, h)
		case event == "PostToolUse" || event == "PostToolUseFailure":
			// A report answers at once: a timeout just above its own bound.
			if h.Timeout <= int(reportTimeout.Seconds()) || entries[0].Matcher != "*" {
				t.Errorf("%s hook = %+v (matcher %q), want every tool, a timeout above %s", event, h, entries[0].Matcher, reportTimeout)
			}
		case h.Timeout <= 300:
			t.Errorf("%s hook = %+v, want the command with a timeout above the 5m wait", event, h)
		}
	}
	for _, event := range []string{"PermissionRequest", "PreToolUse", "PostToolUse", "PostToolUseFailure"} {
		if len(s.Hooks[event]) == 0 {
			t.Errorf("no %s hook", event)
		}
	}
}

// deploy/claude/settings.json is what `slackgate hook install` prints for
// /usr/local/bin/slackgate and the default wait.
func TestDeployedHookSettingsMatchInstall(t *testing.T) {
	file, err := os.ReadFile("../../deploy/claude/settings.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(hookSettings("/usr/local/bin/slackgate hook", 10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonSame(t, file, string(want)) {
		t.Errorf("deploy/claude/settings.json differs from slackgate hook install:\n%s", want)
	}
}

func TestHookInstallWriteMergesIntoSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	before := `{"model":"opus","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"/bin/audit"}]},
		{"matcher":"old","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":5}]}]}}`
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second install changes nothing more
		if _, err := runProgram(t, nil, "hook", "install", "-command", "/usr/local/bin/slackgate hook", "-write", path); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"opus","hooks":{
		"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"/bin/audit"}]},
			{"matcher":"(AskUserQuestion|mcp__.*__AskUserQuestion)","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":660}]}],
		"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":660}]}],
		"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":20}]}],
		"PostToolUseFailure":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":20}]}]}}`
	if !jsonSame(t, raw, want) {
		t.Errorf("settings after install:\n%s", raw)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want the file's own 0644 kept", st.Mode().Perm())
	}
}
