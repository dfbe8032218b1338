package relaytest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// CLI returns the path of the real Claude Code CLI from CLAUDE_BIN. When it
// is unset or does not run, the test is skipped, or fails when integration
// tests are required (SLACKGATE_REQUIRE_INTEGRATION=1 or CI=true).
func CLI(tb testing.TB) string {
	tb.Helper()
	return CLIFromEnv(tb, "CLAUDE_BIN")
}

// CLIFromEnv is CLI for another variable (CLAUDE_BIN_197 for the second
// pinned version).
func CLIFromEnv(tb testing.TB, name string) string {
	tb.Helper()
	path := os.Getenv(name)
	if path == "" {
		missing(tb, "set "+name+" to a Claude Code CLI binary to run tests against the real CLI (make test sets it; .ci/claude-code.sh VERSION installs one and prints its path)")
		return ""
	}
	version, err := versionOf(path)
	if err != nil {
		missing(tb, name+"="+path+" does not run ("+err.Error()+"); install it with make claude-code or npm install -g @anthropic-ai/claude-code")
		return ""
	}
	tb.Logf("relaytest: %s is %s", name, version)
	return path
}

// versions caches `--version` per binary path: the CLI is a large binary and
// every test asks.
var versions sync.Map // path -> string

func versionOf(path string) (string, error) {
	if v, ok := versions.Load(path); ok {
		return v.(string), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	versions.Store(path, v)
	return v, nil
}

// RequireIntegration reports whether tests that need real tools must fail
// rather than skip when the tools are missing.
func RequireIntegration() bool {
	return os.Getenv("SLACKGATE_REQUIRE_INTEGRATION") == "1" || os.Getenv("CI") == "true"
}

func missing(tb testing.TB, msg string) {
	tb.Helper()
	if RequireIntegration() {
		tb.Fatal(msg)
		return
	}
	tb.Skip(msg)
}

// StoredLogin is what `claude auth login` keeps in the CLI's config
// directory on Linux (.credentials.json), with made-up tokens: the CLI
// counts it as a claude.ai login without asking anyone.
const StoredLogin = `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-test","refreshToken":"sk-ant-ort01-test",` +
	`"expiresAt":9999999999999,"scopes":["user:inference"],"subscriptionType":"pro"}}`
