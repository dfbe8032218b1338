package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
)

func TestClaudeEnvNamesAreCheckedAtStartup(t *testing.T) {
	tests := []struct {
		value string
		want  string // substring of the error; "" = accepted
	}{
		{value: " GITHUB_TOKEN , NPM_TOKEN,", want: ""},
		{value: "SLACK_BOT_TOKEN", want: "SLACK_BOT_TOKEN is one of slackgate's own settings"},
		{value: "GITHUB_TOKEN,SLACK_SIGNING_SECRET", want: "SLACK_SIGNING_SECRET is one of slackgate's own settings"},
		{value: "REDIS_URL", want: "REDIS_URL is one of slackgate's own settings"},
		{value: "REDIS_PASSWORD", want: "REDIS_PASSWORD is one of slackgate's own settings"},
		{value: "SLACK_USER_TOKEN", want: "SLACK_USER_TOKEN is one of slackgate's own settings"},
		{value: "CLAUDE_BIN", want: "CLAUDE_BIN is one of slackgate's own settings"},
		{value: "APPROVERS", want: "APPROVERS is one of slackgate's own settings"},
		{value: "CLAUDE_USER", want: "CLAUDE_USER is one of slackgate's own settings"},
		{value: "CLAUDECODE", want: "CLAUDECODE"},
		{value: "GITHUB-TOKEN", want: `"GITHUB-TOKEN" is not a variable name`},
		{value: "A=B", want: `"A=B" is not a variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			cfg, err := loadConfig([]string{"CLAUDE_ENV=" + tt.value})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("loadConfig: %v", err)
				}
				if got, _ := cfg.passEnv(); !slices.Equal(got, []string{"GITHUB_TOKEN", "NPM_TOKEN"}) {
					t.Errorf("passEnv = %q", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "CLAUDE_ENV") {
				t.Errorf("loadConfig(CLAUDE_ENV=%s) = %v, want an error saying %q", tt.value, err, tt.want)
			}
		})
	}
}

// Every variable Config reads is kept from Claude, including ones added
// after this test was written, even when CLAUDE_ENV would name it: the
// worker's configuration, as the program builds it, denies them.
func TestEverySettingIsKeptFromClaude(t *testing.T) {
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := program{}.relayConfig(cfg, nil, nil)
	ty := reflect.TypeFor[Config]()
	for i := range ty.NumField() {
		name := ty.Field(i).Tag.Get("env")
		if name == "" {
			t.Fatalf("field %s has no env tag", ty.Field(i).Name)
		}
		for _, name := range []string{name, "SLACK_OTHER_TOKEN", "REDIS_OTHER_URL"} {
			if got := relay.ClaudeEnv([]string{name + "=x", "CLAUDE_CODE_USE_BEDROCK=1"}, append(rc.PassEnv, name), rc.DenyEnv); slices.ContainsFunc(got, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
				t.Errorf("%s reaches Claude: %q", name, got)
			}
		}
	}
}

func TestClaudeUserStartupFailuresSayHowToFix(t *testing.T) {
	base := []string{"SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "APPROVERS=*", "DATA_DIR=" + t.TempDir(), "CLAUDE_WORKDIR=" + t.TempDir()}
	check := func(t *testing.T, env []string, want ...string) {
		t.Helper()
		_, err := runProgram(t, append(slices.Clone(base), env...), "run")
		if err == nil {
			t.Fatal("slackgate started; want a refusal")
		}
		for _, w := range append(want, "CLAUDE_USER=") {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	t.Run("no such user", func(t *testing.T) {
		check(t, []string{"CLAUDE_USER=slackgate-nobody"}, "no such user", "useradd --create-home slackgate-nobody")
	})
	t.Run("root", func(t *testing.T) {
		check(t, []string{"CLAUDE_USER=root"}, "unprivileged")
	})
	if os.Geteuid() != 0 {
		t.Run("not root", func(t *testing.T) {
			check(t, []string{"CLAUDE_USER=nobody", "CLAUDE_BIN=/bin/true"}, "lacks CAP_SETUID", "setcap cap_setuid,cap_setgid,cap_kill=ep", "or as root")
		})
	}
	name := relaytest.OSUser(t)
	bin := relaytest.CLI(t)
	t.Run("binary the user cannot run", func(t *testing.T) {
		private := filepath.Join(t.TempDir(), "claude") // under a 0700 directory
		if err := os.Link(bin, private); err != nil {
			if err := os.Symlink(bin, private); err != nil {
				t.Fatal(err)
			}
		}
		check(t, []string{"CLAUDE_USER=" + name, "CLAUDE_BIN=" + private}, "--version", "readable and executable by "+name)
	})
	t.Run("workdir the user cannot enter", func(t *testing.T) {
		dir := t.TempDir() // 0700, root's
		check(t, []string{"CLAUDE_USER=" + name, "CLAUDE_BIN=" + bin, "CLAUDE_WORKDIR=" + dir}, "cannot work in", "chown -R "+name+" "+dir)
	})
	t.Run("a channel's workdir the user cannot enter", func(t *testing.T) {
		open := sharedDir(t, name)
		dir := t.TempDir()
		check(t, []string{"CLAUDE_USER=" + name, "CLAUDE_BIN=" + bin, "CLAUDE_WORKDIR=" + open, "CHANNEL_WORKDIRS=C1=" + dir}, "cannot work in", dir)
	})
}

// sharedDir is a directory owned by the OS user name, under /tmp, so a
// process running as name can reach and write it.
func sharedDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "slackgate-claude-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	u, err := relay.LookupRunAs(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	return dir
}
