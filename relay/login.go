package relay

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// loginTimeout bounds `claude auth status`, which reads only local state.
const loginTimeout = 30 * time.Second

// Login is what the CLI says of the credential it would use (`claude auth
// status --json`, 2.1.197 and later): an API key, an OAuth token, a
// stored claude.ai login, an apiKeyHelper or a cloud provider. It does
// not say whether the credential is still good; only a call to the API
// does.
type Login struct {
	LoggedIn bool `json:"loggedIn"`
	// AuthMethod: api_key, oauth_token (ANTHROPIC_AUTH_TOKEN,
	// CLAUDE_CODE_OAUTH_TOKEN), claude.ai (a stored login),
	// api_key_helper, third_party (a cloud provider) or none.
	AuthMethod   string `json:"authMethod"`
	APIProvider  string `json:"apiProvider"`            // firstParty, bedrock, vertex, foundry, …
	APIKeySource string `json:"apiKeySource,omitempty"` // ANTHROPIC_API_KEY, apiKeyHelper, …
}

// String says which credential, for a log line or doctor's.
func (l Login) String() string {
	if !l.LoggedIn {
		return "not logged in"
	}
	s := cmp.Or(l.AuthMethod, "logged in")
	if l.APIKeySource != "" {
		s += " (" + l.APIKeySource + ")"
	}
	if l.APIProvider != "" && l.APIProvider != "firstParty" {
		s += " via " + l.APIProvider
	}
	return s
}

// CheckLogin asks the CLI which credential it would use, run as a
// session's process is under c: the same binary, environment (ClaudeEnv
// of c.Env), OS user (its HOME, so its stored login), setting sources and
// settings file (an apiKeyHelper there counts), in the first of
// c.AllowedDirs. The error says why the CLI could not answer; a CLI that
// answers "not logged in" is a Login, not an error.
func CheckLogin(ctx context.Context, c Config) (Login, error) {
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	environ := c.Env
	if environ == nil {
		environ = os.Environ()
	}
	args := []string{"--setting-sources", strings.Join(c.SettingSources, ",")}
	if c.SettingsFile != "" {
		args = append(args, "--settings", c.SettingsFile)
	}
	bin := cmp.Or(c.ClaudeBin, "claude")
	cmd := exec.CommandContext(ctx, bin, append(args, "auth", "status", "--json")...)
	cmd.Env = childEnv(ClaudeEnv(environ, c.PassEnv, c.DenyEnv))
	if len(c.AllowedDirs) > 0 {
		cmd.Dir = c.AllowedDirs[0]
	}
	if c.User != nil {
		cmd.Env = c.User.env(cmd.Env)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.User.credential()}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var l Login
	if jerr := json.Unmarshal(out, &l); jerr == nil && (err == nil || !l.LoggedIn) {
		return l, nil // it exits 1 when not logged in
	}
	if err == nil {
		err = errors.New("its answer is not JSON")
	}
	if msg := strings.TrimSpace(stderr.String()); msg != "" {
		err = fmt.Errorf("%w (%s)", err, capText(msg, 300))
	}
	return l, fmt.Errorf("%w: `%s auth status` failed: %w", ErrCLINotRunnable, bin, err)
}
