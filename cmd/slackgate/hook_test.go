package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

func TestHookOutputFollowsTheHookProtocol(t *testing.T) {
	input := json.RawMessage(`{"command":"ls"}`)
	perm := `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"ls"}],"behavior":"allow","destination":"session"}`
	suggestion := store.Suggestion{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "ls"}}, Behavior: "allow", Destination: "session"}
	tests := []struct {
		name, event string
		d           approvalapi.Decision
		want        string
	}{
		{"permission allowed", "PermissionRequest", approvalapi.Decision{Outcome: "allow", UpdatedInput: input, Permissions: []store.Suggestion{suggestion}},
			`{"hookSpecificOutput":{"decision":{"behavior":"allow","updatedInput":{"command":"ls"},"updatedPermissions":[` + perm + `]},"hookEventName":"PermissionRequest"}}`},
		{"permission denied with interrupt", "PermissionRequest", approvalapi.Decision{Outcome: "deny", Message: "no", Interrupt: true},
			`{"hookSpecificOutput":{"decision":{"behavior":"deny","interrupt":true,"message":"no"},"hookEventName":"PermissionRequest"}}`},
		{"question answered", "PreToolUse", approvalapi.Decision{Outcome: "allow", UpdatedInput: input, ByName: "dana"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"Approved in Slack by dana","updatedInput":{"command":"ls"}}}`},
		{"question declined", "PreToolUse", approvalapi.Decision{Outcome: "deny", Message: "declined"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"declined"}}`},
		{"expired passes through", "PermissionRequest", approvalapi.Decision{Outcome: "expired", Message: "late"}, `{}`},
		{"cancelled passes through", "PreToolUse", approvalapi.Decision{Outcome: "cancelled"}, `{}`},
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
	if _, err := hookOutput("PermissionRequest", approvalapi.Decision{Outcome: "allow"}); err == nil {
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
	token := "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o600)
	home := t.TempDir()
	tests := []struct {
		name, stdin, why string
		environ          []string
	}{
		{"no url", event, "SLACKGATE_URL is required", []string{token}},
		{"no token file", event, "the approval API token is read from " + home + "/.config/slackgate/token",
			[]string{"SLACKGATE_URL=http://127.0.0.1:1", "HOME=" + home}},
		{"token file others can read", event, "chmod 600",
			[]string{"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o644)}},
		{"bad wait", event, "SLACKGATE_WAIT", []string{"SLACKGATE_URL=http://127.0.0.1:1", token, "SLACKGATE_WAIT=-1s"}},
		{"input not json", "{", "not JSON", []string{"SLACKGATE_URL=http://127.0.0.1:1", token}},
		{"api unreachable", event, "approval api POST /v1/requests", []string{"SLACKGATE_URL=http://127.0.0.1:1", token}},
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

// writeTokenFile writes token to a new file with mode perm.
func writeTokenFile(t *testing.T, token string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// The token is the hook's, not Claude's: it comes from a file only its
// user can read, never silently from the environment every command Claude
// runs inherits.
func TestHookTokenComesFromAPrivateFile(t *testing.T) {
	const url = "SLACKGATE_URL=http://127.0.0.1:1"
	private := writeTokenFile(t, "tok-0123456789abcdef0123456789", 0o600)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(private, link); err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	if err := os.MkdirAll(filepath.Join(config, "slackgate"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(config, "slackgate", "token"), []byte("tok-from-xdg\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		environ   []string
		token     string
		refused   string
		warnsOfIt bool
	}{
		{name: "named file", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + private}, token: "tok-0123456789abcdef0123456789"},
		{name: "a link to a private file", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + link}, token: "tok-0123456789abcdef0123456789"},
		{name: "default under XDG_CONFIG_HOME", environ: []string{url, "XDG_CONFIG_HOME=" + config, "HOME=/nonexistent"}, token: "tok-from-xdg"},
		{name: "group can read", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o640)}, refused: "mode 0640"},
		{name: "others can write", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o602)}, refused: "mode 0602"},
		{name: "a link to a readable file", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + linkTo(t, writeTokenFile(t, "x", 0o644))}, refused: "mode 0644"},
		{name: "a directory", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + t.TempDir()}, refused: "not a regular file"},
		{name: "empty", environ: []string{url, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "", 0o600)}, refused: "one token on one line"},
		{name: "both", environ: []string{url, "SLACKGATE_TOKEN=x", "SLACKGATE_TOKEN_FILE=" + private}, refused: "unset SLACKGATE_TOKEN"},
		{name: "the environment", environ: []string{url, "SLACKGATE_TOKEN=tok-env"}, token: "tok-env", warnsOfIt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := loadHookConfig(tc.environ)
			switch {
			case tc.refused != "":
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Errorf("err = %v, want it refused saying %q", err, tc.refused)
				}
			case err != nil:
				t.Fatal(err)
			case cfg.Token != tc.token:
				t.Errorf("token = %q, want %q", cfg.Token, tc.token)
			case tc.warnsOfIt != (len(cfg.Warnings) > 0):
				t.Errorf("warnings = %q, want them only for a token in the environment", cfg.Warnings)
			}
		})
	}
}

// A token file another user owns is refused, whatever its mode: that user
// chooses which token the hook presents.
func TestHookRefusesATokenFileOfAnotherUser(t *testing.T) {
	other, err := user.Lookup(relaytest.OSUser(t))
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(other.Uid)
	path := writeTokenFile(t, "x", 0o600)
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
	_, err = loadHookConfig([]string{"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN_FILE=" + path})
	if err == nil || !strings.Contains(err.Error(), "belongs to uid "+other.Uid) {
		t.Errorf("err = %v, want the file refused as another user's", err)
	}
}

func linkTo(t *testing.T, target string) string {
	t.Helper()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}

func TestHookInstallPrintsHooksThatOutwaitTheHook(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := program{stdout: &stdout, stderr: &stderr}
	if err := p.run(context.Background(), []string{"hook", "install", "-command", "/usr/local/bin/slackgate hook", "-wait", "5m"}); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	// It says where the token goes, and that the environment is not it.
	if note := stderr.String(); !strings.Contains(note, tokenFileDefault) || !strings.Contains(note, "Do not export SLACKGATE_TOKEN") {
		t.Errorf("install says %q, want the token file and a warning against the environment", note)
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
		report := event == "PostToolUse" || event == "PostToolUseFailure"
		switch {
		case report && h.Command != "/usr/local/bin/slackgate hook":
			t.Errorf("%s hook = %+v, want the command", event, h)
		case !report && h.Command != "/usr/local/bin/slackgate hook -wait 5m":
			t.Errorf("%s hook = %+v, want the command told to wait the 5m it was installed with", event, h)
		case report:
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
		{"matcher":"old","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":5}]}],
		"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook -wait 2h","timeout":7260}]}]}}`
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
			{"matcher":"(AskUserQuestion|mcp__.*__AskUserQuestion)","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook -wait 10m","timeout":660}]}],
		"PermissionRequest":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook -wait 10m","timeout":660}]}],
		"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":20}]}],
		"PostToolUseFailure":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/slackgate hook","timeout":20}]}]}}`
	if !jsonSame(t, raw, want) {
		t.Errorf("settings after install:\n%s", raw)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want the file's own 0644 kept", st.Mode().Perm())
	}
}

// TestHookRefusesPlainHTTPToAnotherHost: the token is a bearer secret, so
// the hook and the MCP server send it over https, or over http to this
// machine only.
func TestHookRefusesPlainHTTPToAnotherHost(t *testing.T) {
	token := "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o600)
	for _, u := range []string{"https://slackgate.example.com", "http://localhost:3000", "http://127.0.0.1:3000", "http://[::1]:3000"} {
		if _, err := loadHookConfig([]string{"SLACKGATE_URL=" + u, token}); err != nil {
			t.Errorf("SLACKGATE_URL=%s refused: %v", u, err)
		}
	}
	for _, u := range []string{"http://slackgate.example.com", "http://10.0.0.5:3000", "ftp://x", "slackgate.example.com"} {
		_, err := loadHookConfig([]string{"SLACKGATE_URL=" + u, token})
		if err == nil || !strings.Contains(err.Error(), "SLACKGATE_URL="+u) || !strings.Contains(err.Error(), "https://") {
			t.Errorf("SLACKGATE_URL=%s = %v; want a refusal naming it and https://", u, err)
		}
	}
	if _, err := loadHookConfig([]string{"SLACKGATE_URL=http://10.0.0.5:3000", token}); err == nil || !strings.Contains(err.Error(), "in clear") {
		t.Errorf("http:// to a remote host = %v; want it to say the token would cross the network in clear", err)
	}
}
