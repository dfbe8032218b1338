package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay"
)

func TestClaudeArgsCannotUndoWhatSlackgateDecides(t *testing.T) {
	refused := map[string]string{
		`--setting-sources ""`:                            "CLAUDE_SETTING_SOURCES",
		"--setting-sources=user,project,local":            "CLAUDE_SETTING_SOURCES",
		"--settings /srv/repo/.claude/x.json":             "CLAUDE_SETTINGS",
		`--settings={"permissions":{"allow":[]}}`:         "CLAUDE_SETTINGS",
		"--managed-settings /tmp/m.json":                  "CLAUDE_SETTINGS",
		"--mcp-config /srv/repo/.mcp.json":                "CLAUDE_MCP_CONFIG",
		"--mcp-config=/srv/repo/.mcp.json":                "CLAUDE_MCP_CONFIG",
		"--strict-mcp-config":                             "always passes it",
		"--plugin-dir /srv/repo/plugins":                  "CLAUDE_SETTINGS",
		"--plugin-dir-no-mcp=/srv/p":                      "CLAUDE_SETTINGS",
		"--plugin-url https://example.com/p.zip":          "CLAUDE_MCP_CONFIG",
		"--permission-prompt-tool mcp__x__approve":        "answers every permission prompt",
		"--permission-prompts=none":                       "answers every permission prompt",
		"--permission-mode bypassPermissions":             "CLAUDE_PERMISSION_MODE",
		"--max-turns 3 --dangerously-skip-permissions":    "CLAUDE_PERMISSION_MODE",
		"--allow-dangerously-skip-permissions":            "CLAUDE_PERMISSION_MODE",
		"--allow-dangerously-skip-permissions=true":       "CLAUDE_PERMISSION_MODE",
		`--append-system-prompt x --settings=/etc/s.json`: "CLAUDE_SETTINGS",
	}
	for args, want := range refused {
		t.Run(args, func(t *testing.T) {
			_, err := loadConfig([]string{"CLAUDE_ARGS=" + args})
			if err == nil || !strings.Contains(err.Error(), "CLAUDE_ARGS") || !strings.Contains(err.Error(), want) {
				t.Fatalf("loadConfig(CLAUDE_ARGS=%s) = %v, want a refusal naming %s", args, err, want)
			}
		})
	}
	// The operator's own flags that change none of it pass.
	for _, args := range []string{"--max-turns 40 --append-system-prompt 'be brief'", "--allowedTools 'Bash(git status)' --add-dir /srv/docs"} {
		if _, err := loadConfig([]string{"CLAUDE_ARGS=" + args}); err != nil {
			t.Errorf("loadConfig(CLAUDE_ARGS=%s) = %v", args, err)
		}
	}
}

func TestSettingSourcesAreAnOptInList(t *testing.T) {
	tests := []struct {
		env  string
		want []string
	}{
		{"", nil},
		{"CLAUDE_SETTING_SOURCES=", nil},
		{"CLAUDE_SETTING_SOURCES=project", []string{"project"}},
		{"CLAUDE_SETTING_SOURCES=local, project,local", []string{"project", "local"}},
		{"CLAUDE_SETTING_SOURCES=local,user,project", []string{"user", "project", "local"}},
	}
	for _, tt := range tests {
		cfg, err := loadConfig([]string{tt.env})
		if err != nil {
			t.Fatalf("loadConfig(%s): %v", tt.env, err)
		}
		got, _ := cfg.settingSources()
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: sources %q, want %q", tt.env, got, tt.want)
		}
		if rc := (program{}).relayConfig(cfg, nil, nil); !slices.Equal(rc.SettingSources, tt.want) {
			t.Errorf("%s: the worker gets sources %q, want %q", tt.env, rc.SettingSources, tt.want)
		}
	}
	for _, bad := range []string{"policy", "project,all", "Project"} {
		if _, err := loadConfig([]string{"CLAUDE_SETTING_SOURCES=" + bad}); err == nil || !strings.Contains(err.Error(), "CLAUDE_SETTING_SOURCES") {
			t.Errorf("CLAUDE_SETTING_SOURCES=%s: %v, want a refusal naming the variable", bad, err)
		}
	}
	for _, name := range []string{"CLAUDE_SETTINGS", "CLAUDE_MCP_CONFIG"} {
		if _, err := loadConfig([]string{name + "=etc/settings.json"}); err == nil || !strings.Contains(err.Error(), name+"=etc/settings.json: must be an absolute path") {
			t.Errorf("%s relative: %v, want a refusal", name, err)
		}
	}
}

// operatorFile writes content to dir/name and returns its path.
func operatorFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOperatorFilesMustLieOutOfClaudesReach(t *testing.T) {
	work, home, outside := t.TempDir(), t.TempDir(), t.TempDir()
	configDir := t.TempDir()
	settings := `{"permissions":{"deny":["WebFetch"]}}`
	mcp := `{"mcpServers":{"docs":{"command":"/usr/local/bin/docs-mcp"}}}`
	good := operatorFile(t, outside, "settings.json", settings)
	link := filepath.Join(outside, "link.json")
	if err := os.Symlink(operatorFile(t, work, ".claude/settings.json", settings), link); err != nil {
		t.Fatal(err)
	}
	environ := []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + configDir}
	tests := []struct {
		name string
		env  []string
		want string // "" = accepted
	}{
		{"outside everything", []string{"CLAUDE_SETTINGS=" + good, "CLAUDE_MCP_CONFIG=" + operatorFile(t, outside, "mcp.json", mcp)}, ""},
		{"in the repository", []string{"CLAUDE_SETTINGS=" + operatorFile(t, work, "ops/settings.json", settings)}, "lies in the working directory"},
		{"a link into the repository", []string{"CLAUDE_SETTINGS=" + link}, "lies in the working directory"},
		{"the user settings a session writes", []string{"CLAUDE_SETTINGS=" + operatorFile(t, home, ".claude/settings.json", settings)}, "lies in the CLI's config directory"},
		{"the CLI's config file", []string{"CLAUDE_MCP_CONFIG=" + operatorFile(t, home, ".claude.json", mcp)}, "lies in the CLI's config file"},
		{"CLAUDE_CONFIG_DIR", []string{"CLAUDE_SETTINGS=" + operatorFile(t, configDir, "settings.json", settings)}, "CLAUDE_CONFIG_DIR"},
		{"missing", []string{"CLAUDE_SETTINGS=" + filepath.Join(outside, "nope.json")}, "cannot be read"},
		{"a directory", []string{"CLAUDE_MCP_CONFIG=" + outside}, "is not a regular file"},
		{"not JSON", []string{"CLAUDE_SETTINGS=" + operatorFile(t, outside, "bad.json", `{"permissions":`)}, "not a JSON object"},
		{"an MCP config without servers", []string{"CLAUDE_MCP_CONFIG=" + operatorFile(t, outside, "nomcp.json", `{"docs":{}}`)}, `want {"mcpServers"`},
		{"an agents file in the repository", []string{"CLAUDE_ARGS=--agents " + operatorFile(t, work, "agents.json", `{}`)}, "CLAUDE_ARGS --agents"},
		{"a system prompt file in the repository", []string{"CLAUDE_ARGS=--append-system-prompt-file=" + operatorFile(t, work, "prompt.md", "x")}, "lies in the working directory"},
		{"inline agents", []string{`CLAUDE_ARGS=--agents '{"r":{"description":"d","prompt":"p"}}'`}, ""},
		{"a sandbox that does not say whether it asks", []string{"CLAUDE_SETTINGS=" + operatorFile(t, outside, "sandbox.json", `{"sandbox":{"enabled":true}}`)},
			`"autoAllowBashIfSandboxed": set it to false`},
		{"a sandbox that keeps asking", []string{"CLAUDE_SETTINGS=" + operatorFile(t, outside, "sandbox-asks.json",
			`{"sandbox":{"enabled":true,"autoAllowBashIfSandboxed":false,"allowUnsandboxedCommands":false}}`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(append([]string{"CLAUDE_WORKDIR=" + work}, tt.env...))
			if err != nil {
				t.Fatal(err)
			}
			err = checkClaudeFiles(cfg, nil, environ)
			if tt.want == "" && err != nil {
				t.Fatalf("checkClaudeFiles: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("checkClaudeFiles = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// CLAUDE_USER must be able to read the operator's file and unable to
// change it. The checks read mode bits, so they are tested with made-up
// users and no root.
func TestOperatorFilesMustBeReadOnlyForClaudeUser(t *testing.T) {
	me := uint32(os.Getuid())
	stranger := &relay.RunAs{Name: "claude", UID: me + 4242, GID: 4242, Home: t.TempDir()}
	owner := &relay.RunAs{Name: "claude", UID: me, GID: uint32(os.Getgid()), Home: t.TempDir()}
	dir := t.TempDir()
	file := operatorFile(t, dir, "settings.json", `{}`)
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	inOpen := operatorFile(t, open, "settings.json", `{}`)
	private := operatorFile(t, dir, "private.json", `{}`)
	if err := os.Chmod(private, 0o600); err != nil {
		t.Fatal(err)
	}
	shared := operatorFile(t, dir, "shared.json", `{}`)
	if err := os.Chmod(shared, 0o666); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		u    *relay.RunAs
		want string
	}{
		{"another user's file in another user's directory", file, stranger, ""},
		{"the user's own file", file, owner, "can write it"},
		{"a file others may write", shared, stranger, "can write it"},
		{"a directory others may write", inOpen, stranger, "can write the directory"},
		{"a file the user cannot read", private, stranger, "cannot read it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig([]string{"CLAUDE_WORKDIR=" + t.TempDir(), "CLAUDE_SETTINGS=" + tt.path})
			if err != nil {
				t.Fatal(err)
			}
			err = checkClaudeFiles(cfg, tt.u, nil)
			if tt.want == "" && err != nil {
				t.Fatalf("checkClaudeFiles: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("checkClaudeFiles = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// `slackgate run` checks the operator's files before any session, against
// every working directory it knows of, and stops saying which.
func TestRunRefusesASettingsFileClaudeCouldRewrite(t *testing.T) {
	channelDir := t.TempDir()
	settings := operatorFile(t, channelDir, ".claude/operator.json", `{"permissions":{"deny":["WebFetch"]}}`)
	base := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken,
		"SLACK_API_URL=" + fakeslack.New(t).APIURL(), "APPROVERS=*", "DATA_DIR=" + t.TempDir(), "CLAUDE_WORKDIR=" + t.TempDir()}
	_, err := runProgram(t, append(base, "CHANNEL_WORKDIRS=C1="+channelDir, "CLAUDE_SETTINGS="+settings), "run")
	if err == nil || !strings.Contains(err.Error(), "CLAUDE_SETTINGS="+settings+": lies in the working directory ("+channelDir+")") {
		t.Fatalf("run = %v; want a refusal naming CLAUDE_SETTINGS and the channel's working directory", err)
	}
	_, err = runProgram(t, append(base, "CLAUDE_ARGS=--dangerously-skip-permissions"), "run")
	if err == nil || !strings.Contains(err.Error(), "CLAUDE_ARGS: --dangerously-skip-permissions is slackgate's to set") {
		t.Fatalf("run = %v; want a refusal naming the flag", err)
	}
}
