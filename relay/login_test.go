package relay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// TestCheckLoginSaysWhichCredentialTheCLIWouldUse asks the real CLI, as
// the worker runs it, about each kind of credential it accepts; and about
// two it does not use under slackgate: a key the allowlist keeps from it,
// and an apiKeyHelper in the user's settings.json, which the worker's
// --setting-sources "" does not read.
func TestCheckLoginSaysWhichCredentialTheCLIWouldUse(t *testing.T) {
	bin := relaytest.CLI(t)
	home := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
	must(t, os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(`{"apiKeyHelper":"echo sk-ant-user"}`), 0o600))
	helper := filepath.Join(t.TempDir(), "settings.json")
	must(t, os.WriteFile(helper, []byte(`{"apiKeyHelper":"echo sk-ant-operator"}`), 0o644))
	stored := t.TempDir()
	must(t, os.WriteFile(filepath.Join(stored, ".credentials.json"), []byte(relaytest.StoredLogin), 0o600))
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	tests := []struct {
		name     string
		env      []string
		settings string
		deny     func(string) bool
		want     string // Login.String()
	}{
		{"nothing", nil, "", nil, "not logged in"},
		{"the user's apiKeyHelper, unread", nil, "", nil, "not logged in"},
		{"an API key", []string{"ANTHROPIC_API_KEY=sk-ant-x"}, "", nil, "api_key (ANTHROPIC_API_KEY)"},
		{"a key slackgate keeps from Claude", []string{"ANTHROPIC_API_KEY=sk-ant-x"}, "",
			func(n string) bool { return n == "ANTHROPIC_API_KEY" }, "not logged in"},
		{"an OAuth token from claude setup-token", []string{"CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-x"}, "", nil, "oauth_token"},
		{"a bearer token for a gateway", []string{"ANTHROPIC_AUTH_TOKEN=x"}, "", nil, "oauth_token"},
		{"the operator's apiKeyHelper", nil, helper, nil, "api_key_helper (apiKeyHelper)"},
		{"a stored login", []string{"CLAUDE_CONFIG_DIR=" + stored}, "", nil, "claude.ai"},
		{"Bedrock", []string{"CLAUDE_CODE_USE_BEDROCK=1"}, "", nil, "third_party via bedrock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, err := relay.CheckLogin(context.Background(), relay.Config{ClaudeBin: bin, Env: append(base, tc.env...),
				SettingsFile: tc.settings, DenyEnv: tc.deny, AllowedDirs: []string{t.TempDir()}})
			if err != nil || l.String() != tc.want || l.LoggedIn != (tc.want != "not logged in") {
				t.Errorf("CheckLogin = %+v (%q), %v; want %q", l, l.String(), err, tc.want)
			}
		})
	}
}

// TestCheckLoginAsTheCLIUserReadsThatUsersLogin: with CLAUDE_USER the CLI
// runs with that user's HOME, so slackgate's own stored login counts for
// nothing and the user's does.
func TestCheckLoginAsTheCLIUserReadsThatUsersLogin(t *testing.T) {
	bin := relaytest.CLI(t)
	u, err := relay.LookupRunAs(relaytest.OSUser(t))
	if err != nil {
		t.Fatal(err)
	}
	mine := t.TempDir() // slackgate's HOME, with a login of its own
	must(t, os.MkdirAll(filepath.Join(mine, ".claude"), 0o700))
	must(t, os.WriteFile(filepath.Join(mine, ".claude", ".credentials.json"), []byte(relaytest.StoredLogin), 0o600))
	work, err := os.MkdirTemp("", "slackgate-login-") // t.TempDir's parent is root's alone
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	must(t, os.Chown(work, int(u.UID), int(u.GID)))
	cfg := relay.Config{ClaudeBin: bin, User: u, AllowedDirs: []string{work}, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + mine}}
	if l, err := relay.CheckLogin(context.Background(), cfg); err != nil || l.LoggedIn {
		t.Errorf("as %s without a credential of its own: %+v, %v; want not logged in", u.Name, l, err)
	}
	cfg.Env = append(cfg.Env, "ANTHROPIC_API_KEY=sk-ant-x")
	if l, err := relay.CheckLogin(context.Background(), cfg); err != nil || l.String() != "api_key (ANTHROPIC_API_KEY)" {
		t.Errorf("as %s with a key in its environment: %+v, %v", u.Name, l, err)
	}
}

func TestCheckLoginSaysWhenTheCLIDoesNotRun(t *testing.T) {
	_, err := relay.CheckLogin(context.Background(), relay.Config{ClaudeBin: filepath.Join(t.TempDir(), "no-claude")})
	if err == nil || !errors.Is(err, relay.ErrCLINotRunnable) || !strings.Contains(err.Error(), "no-claude") {
		t.Errorf("CheckLogin of a missing binary = %v; want ErrCLINotRunnable naming it", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
