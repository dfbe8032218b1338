package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// checkTimeout bounds each of doctor's calls (Slack, the store, the CLI).
const checkTimeout = 10 * time.Second

// manifestScopes are the bot scopes deploy/slack/manifest.yaml asks for.
// groups:history is left out: the manifest says to drop it without private
// channels; so is im:write, which only API_TOKENS entries naming a person
// need (a missing one fails their first request, saying so).
var manifestScopes = []string{"app_mentions:read", "channels:history", "im:history", "chat:write",
	"commands", "files:write", "users:read", "usergroups:read"}

// doctor runs the checks the given command (run, bot or worker; run by
// default) makes at start, and its own beside them, and prints one line
// per check: ✓ what was found, or ✗ what is wrong and what to do. It
// fails when any check does. A configuration that does not parse stops
// it at the first line. -offline leaves out what needs the network or the
// CLI.
func (p program) doctor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	offline := fs.Bool("offline", false, "only the checks that need neither the network nor the CLI")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	role := cmp.Or(fs.Arg(0), "run")
	if fs.NArg() > 1 || !slices.Contains(anyCmd, role) {
		return fmt.Errorf("doctor: want run, bot or worker, got %q (slackgate doctor -h)", strings.Join(fs.Args(), " "))
	}
	cfg, cfgErr := p.configuration()
	s := &preflight{cmd: role, cfg: cfg, cfgErr: cfgErr, environ: p.environ}
	redis.SetLogger(redisLogger{zerolog.Nop()}) // the store's line says why it failed
	p.noteDotEnv()
	for _, w := range misspeltSettings(p.environ) {
		fmt.Fprintln(p.stdout, "! "+w)
	}
	checks, failed := 0, 0
	for _, c := range startChecks {
		if !slices.Contains(c.cmds, role) || (*offline && c.online) {
			continue
		}
		checks++
		detail, err := c.check(ctx, p, s)
		switch {
		case errors.Is(err, errNotChecked):
			fmt.Fprintf(p.stdout, "- %s: not checked (see above)\n", c.name)
		case err != nil:
			failed++
			fmt.Fprintf(p.stdout, "✗ %s: %s\n", c.name, strings.TrimPrefix(err.Error(), "config: "))
			var fe *fixError
			if errors.As(err, &fe) {
				fmt.Fprintf(p.stdout, "    fix: %s\n", fe.fix)
			}
		default:
			fmt.Fprintf(p.stdout, "✓ %s: %s\n", c.name, detail)
		}
		if c.name == "configuration" && cfg == (Config{}) {
			break // nothing parsed: nothing else to check
		}
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed; slackgate %s would not start, or not work, until each ✗ is fixed", failed, checks, role)
	}
	return nil
}

// noteDotEnv says so when the directory holds a .env this process did
// not get: make run and make doctor read it, slackgate does not.
func (p program) noteDotEnv() {
	raw, err := os.ReadFile(".env")
	if err != nil {
		return
	}
	set := map[string]bool{}
	for _, kv := range p.environ {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	for line := range strings.Lines(string(raw)) {
		name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "export "), "=")
		if ok && !strings.HasPrefix(name, "#") && settingNames[name] && !set[name] {
			fmt.Fprintf(p.stdout, "! .env sets %s, which this environment lacks: make doctor and make run read .env; slackgate itself does not\n", name)
			return
		}
	}
}

// slackCall posts a Web API method with token and returns Slack's answer
// and the response headers (auth.test's X-OAuth-Scopes lists the token's
// scopes; slack-go does not expose it, hence a plain request). An error
// of Slack's is a *slackError; any other never reached Slack.
func slackCall(ctx context.Context, cfg Config, method, token string) (map[string]any, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	base := cmp.Or(cfg.SlackAPIURL, "https://slack.com/api/")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/"+method, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, withFix(err, "this host cannot reach "+base+": check DNS, the network and any proxy (HTTPS_PROXY); the token was not tried")
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, nil, withFix(fmt.Errorf("%s: HTTP %d, not Slack's JSON: %w", method, resp.StatusCode, err),
			"something between this host and Slack answered instead (a proxy?); check SLACK_API_URL and HTTPS_PROXY")
	}
	if ok, _ := out["ok"].(bool); !ok {
		return out, resp.Header, &slackError{method, fmt.Sprint(out["error"])}
	}
	return out, resp.Header, nil
}

// slackError is an error Slack answered with (invalid_auth, …).
type slackError struct{ method, code string }

func (e *slackError) Error() string { return e.method + ": " + e.code }

func slackTokenCheck(ctx context.Context, _ program, s *preflight) (string, error) {
	if s.cfg.SlackBotToken == "" {
		return "", errNotChecked
	}
	auth, header, err := slackCall(ctx, s.cfg, "auth.test", s.cfg.SlackBotToken)
	var se *slackError
	if errors.As(err, &se) {
		return "", withFix(err, "Slack refused SLACK_BOT_TOKEN: copy the Bot User OAuth Token (xoxb-…) again from OAuth & Permissions, or reinstall the app for a new one")
	}
	if err != nil {
		return "", err
	}
	s.slackAuthed, s.slackScopes = true, header.Get("X-OAuth-Scopes")
	return fmt.Sprintf("auth.test: bot %v in team %v", auth["user_id"], auth["team"]), nil
}

func scopeCheck(_ context.Context, _ program, s *preflight) (string, error) {
	switch {
	case !s.slackAuthed:
		return "", errNotChecked
	case s.slackScopes == "":
		return "not checked: Slack sent no X-OAuth-Scopes header", nil
	}
	have := strings.Split(strings.ReplaceAll(s.slackScopes, " ", ""), ",")
	var missing []string
	for _, sc := range manifestScopes {
		if !slices.Contains(have, sc) {
			missing = append(missing, sc)
		}
	}
	if len(missing) > 0 {
		return "", withFix(errors.New("missing "+strings.Join(missing, ", ")),
			"add them under OAuth & Permissions (or reapply deploy/slack/manifest.yaml) and reinstall the app")
	}
	return "every scope the manifest asks for", nil
}

func transportCheck(ctx context.Context, _ program, s *preflight) (string, error) {
	switch {
	case !s.slackAuthed:
		return "", errNotChecked
	case s.cfg.SlackAppToken != "":
		_, _, err := slackCall(ctx, s.cfg, "apps.connections.open", s.cfg.SlackAppToken)
		var se *slackError
		if errors.As(err, &se) {
			return "", withFix(err, "check SLACK_APP_TOKEN: an app-level token (xapp-…) with connections:write, and Socket Mode enabled")
		}
		if err != nil {
			return "", err
		}
		return "Socket Mode: apps.connections.open gave a connection URL", nil
	}
	return "HTTP mode: SLACK_SIGNING_SECRET is set; Slack's Request URLs must reach HTTP_ADDR=" + s.cfg.HTTPAddr, nil
}

// storeCheck opens the store and makes one write and read round trip. An
// embedded store not made yet is left so: run makes it.
func storeCheck(ctx context.Context, _ program, s *preflight) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	fix := "check REDIS_URL (host, password, TLS) and that Redis runs; for the embedded store, that DATA_DIR is writable and no other slackgate holds it"
	if s.cfg.RedisURL == "" {
		if _, err := os.Stat(filepath.Join(s.cfg.DataDir, "slackgate.db")); errors.Is(err, os.ErrNotExist) {
			return "none yet in DATA_DIR=" + s.cfg.DataDir + "; run makes it there", nil
		}
	}
	st, err := openStore(ctx, s.cfg)
	if err != nil {
		return "", withFix(err, fix)
	}
	defer st.Close()
	key := fmt.Sprintf("doctor:%d", time.Now().UnixNano())
	first, err := st.FirstSeen(ctx, key, time.Minute)
	if err == nil {
		var again bool
		again, err = st.FirstSeen(ctx, key, time.Minute)
		if err == nil && (!first || again) {
			err = fmt.Errorf("a key written was not read back (first %v, again %v)", first, again)
		}
	}
	if err != nil {
		return "", withFix(fmt.Errorf("%s: %w", storeName(s.cfg), err), fix)
	}
	return storeName(s.cfg) + ": opened, wrote and read back a key", nil
}

// cliCheck runs `CLAUDE_BIN --version`.
func cliCheck(ctx context.Context, _ program, s *preflight) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, s.cfg.ClaudeBin, "--version").Output()
	if err != nil {
		return "", withFix(fmt.Errorf("CLAUDE_BIN=%s: %w", s.cfg.ClaudeBin, err), cliFix())
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	return s.cfg.ClaudeBin + ": " + strings.TrimSpace(string(line)), nil
}

// cliFix says where a CLI is: the one make run installed, when this is a
// checkout where it did.
func cliFix() string {
	fix := "set CLAUDE_BIN to the claude executable (`npm install -g @anthropic-ai/claude-code`, or `make claude-code` installs the pinned version and prints its path)"
	found, _ := filepath.Glob(".cache/claude-code/*/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
	if len(found) > 0 {
		abs, _ := filepath.Abs(found[len(found)-1])
		fix += "; make run uses " + abs + ": make doctor finds it"
	}
	return fix
}
