package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// checkTimeout bounds each of doctor's calls (Slack, the store, the CLI).
const checkTimeout = 10 * time.Second

// manifestScopes are the bot scopes deploy/slack/manifest.yaml asks for.
// groups:history is left out: the manifest says to drop it without private
// channels; so is im:write, which only API_TOKENS entries naming a person
// need (a missing one fails their first request, saying so).
var manifestScopes = []string{"app_mentions:read", "channels:history", "im:history", "chat:write",
	"commands", "files:write", "users:read", "usergroups:read"}

// finding is one line of doctor's report.
type finding struct {
	ok     bool
	name   string
	detail string // what was found
	fix    string // what to do, when not ok
}

// doctor checks what slackgate needs, as the given command (run, bot or
// worker; run by default) would use it, prints one line per check and
// fails when any check does.
func (p program) doctor(ctx context.Context, args []string, cfg Config) error {
	role := "run"
	if len(args) > 0 {
		role = args[0]
	}
	if role != "run" && role != "bot" && role != "worker" {
		return fmt.Errorf("doctor: want run, bot or worker, got %q", role)
	}
	var found []finding
	if role != "worker" {
		found = append(found, slackChecks(ctx, cfg)...)
	}
	found = append(found, storeCheck(ctx, cfg))
	if role != "bot" {
		found = append(found, cliCheck(ctx, cfg), workDirCheck(cfg), claudeReadsCheck(cfg, p.environ))
	}
	failed := 0
	for _, f := range found {
		if f.ok {
			fmt.Fprintf(p.stdout, "✓ %s: %s\n", f.name, f.detail)
			continue
		}
		failed++
		fmt.Fprintf(p.stdout, "✗ %s: %s\n    fix: %s\n", f.name, f.detail, f.fix)
	}
	if failed > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", failed, len(found))
	}
	return nil
}

// slackCall posts a Web API method with token and returns Slack's answer
// and the response headers (auth.test's X-OAuth-Scopes lists the token's
// scopes; slack-go does not expose it, hence a plain request).
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
		return nil, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, nil, fmt.Errorf("%s: HTTP %d, not Slack's JSON: %w", method, resp.StatusCode, err)
	}
	if ok, _ := out["ok"].(bool); !ok {
		return out, resp.Header, fmt.Errorf("%s: %v", method, out["error"])
	}
	return out, resp.Header, nil
}

// slackChecks: the bot token (auth.test), its scopes, and the transport.
func slackChecks(ctx context.Context, cfg Config) []finding {
	if cfg.SlackBotToken == "" {
		return []finding{{name: "Slack bot token", detail: "SLACK_BOT_TOKEN is not set",
			fix: "copy the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page"}}
	}
	auth, header, err := slackCall(ctx, cfg, "auth.test", cfg.SlackBotToken)
	if err != nil {
		return []finding{{name: "Slack bot token", detail: err.Error(),
			fix: "check SLACK_BOT_TOKEN (reinstall the app to get a new one) and that this host reaches " + cmp.Or(cfg.SlackAPIURL, "slack.com")}}
	}
	found := []finding{{ok: true, name: "Slack bot token", detail: fmt.Sprintf("auth.test: bot %v in team %v", auth["user_id"], auth["team"])}}
	found = append(found, scopeCheck(header.Get("X-OAuth-Scopes")))
	return append(found, transportCheck(ctx, cfg))
}

func scopeCheck(granted string) finding {
	if granted == "" {
		return finding{ok: true, name: "Slack scopes", detail: "not checked: Slack sent no X-OAuth-Scopes header"}
	}
	have := strings.Split(strings.ReplaceAll(granted, " ", ""), ",")
	var missing []string
	for _, s := range manifestScopes {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return finding{name: "Slack scopes", detail: "missing " + strings.Join(missing, ", "),
			fix: "add them under OAuth & Permissions (or reapply deploy/slack/manifest.yaml) and reinstall the app"}
	}
	return finding{ok: true, name: "Slack scopes", detail: "every scope the manifest asks for"}
}

func transportCheck(ctx context.Context, cfg Config) finding {
	switch {
	case cfg.SlackAppToken != "":
		if _, _, err := slackCall(ctx, cfg, "apps.connections.open", cfg.SlackAppToken); err != nil {
			return finding{name: "Socket Mode", detail: err.Error(),
				fix: "check SLACK_APP_TOKEN: an app-level token (xapp-…) with connections:write, and Socket Mode enabled"}
		}
		return finding{ok: true, name: "Socket Mode", detail: "apps.connections.open gave a connection URL"}
	case cfg.SlackSigningSecret != "":
		return finding{ok: true, name: "HTTP mode", detail: "SLACK_SIGNING_SECRET is set; Slack's Request URLs must reach HTTP_ADDR=" + cfg.HTTPAddr}
	}
	return finding{name: "Slack transport", detail: "neither SLACK_APP_TOKEN nor SLACK_SIGNING_SECRET is set",
		fix: "set SLACK_APP_TOKEN for Socket Mode (no public URL needed) or SLACK_SIGNING_SECRET for HTTP mode"}
}

// storeCheck opens the store and makes one write and read round trip.
func storeCheck(ctx context.Context, cfg Config) finding {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	name := "store (" + storeName(cfg) + ")"
	fix := "check REDIS_URL (host, password, TLS) and that Redis runs; for the embedded store, that DATA_DIR is writable and no other slackgate holds it"
	st, err := openStore(ctx, cfg)
	if err != nil {
		return finding{name: name, detail: err.Error(), fix: fix}
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
		return finding{name: name, detail: err.Error(), fix: fix}
	}
	return finding{ok: true, name: name, detail: "opened, wrote and read back a key"}
}

// cliCheck runs `CLAUDE_BIN --version`.
func cliCheck(ctx context.Context, cfg Config) finding {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	name := "Claude Code CLI (" + cfg.ClaudeBin + ")"
	out, err := exec.CommandContext(ctx, cfg.ClaudeBin, "--version").Output()
	if err != nil {
		return finding{name: name, detail: err.Error(),
			fix: "set CLAUDE_BIN to the claude executable (`make claude-code` installs the pinned version)"}
	}
	line, _, _ := bytes.Cut(out, []byte("\n"))
	return finding{ok: true, name: name, detail: strings.TrimSpace(string(line))}
}

// workDirCheck: every working directory exists, this user may read, write
// and enter it, and none holds slackgate's own files (keepOut).
func workDirCheck(cfg Config) finding {
	dirs := workDirs(cfg)
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return finding{name: "working directories", detail: fmt.Sprintf("%s is not a directory (%v)", d, err),
				fix: "create it, or point CLAUDE_WORKDIR / CHANNEL_WORKDIRS / DM_WORKDIR at the repositories Claude works in"}
		}
		if err := unix.Access(d, unix.R_OK|unix.W_OK|unix.X_OK); err != nil {
			return finding{name: "working directories", detail: fmt.Sprintf("%s: %v", d, err),
				fix: "give the user slackgate runs as read, write and search permission on it"}
		}
	}
	if err := keepOut(cfg); err != nil {
		return finding{name: "working directories", detail: err.Error(), fix: "move them outside slackgate's directory and DATA_DIR"}
	}
	return finding{ok: true, name: "working directories", detail: strings.Join(dirs, ", ")}
}
