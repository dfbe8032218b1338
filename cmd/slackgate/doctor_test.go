package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// doctor runs `slackgate doctor` and returns its error and what it printed.
func doctor(t *testing.T, environ []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := program{environ: environ, stdout: &out, stderr: &out}.run(ctx, append([]string{"doctor"}, args...))
	return out.String(), err
}

// claudeAsRoot is CLAUDE_AS_ROOT as testConfig sets it: the tests run
// Claude as whoever runs them, often root in a container.
func claudeAsRoot() string { return "CLAUDE_AS_ROOT=" + strconv.FormatBool(os.Geteuid() == 0) }

// goodEnviron is a whole configuration of `slackgate run` that starts: the
// fake Slack, the real CLI with a key for the scripted model, a working
// directory and DATA_DIR of the test's own.
func goodEnviron(t *testing.T) (environ []string, slack *fakeslack.Fake) {
	t.Helper()
	slack = fakeslack.New(t)
	environ = append(cliEnviron(t),
		"SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken, "SLACK_API_URL="+slack.APIURL(),
		"APPROVERS=*", "DATA_DIR="+t.TempDir(), "CLAUDE_WORKDIR="+t.TempDir(), "HEALTH_ADDR=127.0.0.1:0", claudeAsRoot())
	return environ, slack
}

// cliEnviron is the environment of a process that runs the real CLI on a
// scripted model of its own, with a key for it: the model's, which is
// the test process's too, without slackgate's own settings there
// (REDIS_URL under with-redis.sh), plus CLAUDE_BIN.
func cliEnviron(t *testing.T) []string {
	t.Helper()
	var environ []string
	for _, kv := range relaytest.NewServer(t).Env(t) {
		if name, _, _ := strings.Cut(kv, "="); !settingNames[name] {
			environ = append(environ, kv)
		}
	}
	return append(environ, "CLAUDE_BIN="+relaytest.CLI(t))
}

func TestDoctorPassesAGoodConfiguration(t *testing.T) {
	environ, _ := goodEnviron(t)
	out, err := doctor(t, environ)
	if err != nil {
		t.Fatalf("doctor failed a good configuration: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ configuration", "✓ decision keys: none set", "✓ Slack settings: Socket Mode; APPROVERS *",
		"✓ team policy: none", "✓ Slack bot token: auth.test: bot " + fakeslack.BotUserID, "✓ Slack scopes", "✓ Slack transport: Socket Mode",
		"✓ store: none yet in DATA_DIR", "✓ working directories", "✓ Claude Code CLI", "(Claude Code)", "✓ CLAUDE_USER: unset",
		"✓ Claude Code settings: setting sources: none", "✓ Claude Code's managed settings", "✓ Claude Code credential: api_key (ANTHROPIC_API_KEY)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "✗") {
		t.Errorf("doctor reports a failure for a good configuration:\n%s", out)
	}
}

func TestDoctorSaysWhatToFix(t *testing.T) {
	slack := fakeslack.New(t, fakeslack.AllowRejections())
	data := t.TempDir()
	settings := filepath.Join(filepath.Dir(data), "claude-settings.json") // in the working directory
	if err := os.WriteFile(settings, []byte(`{"permissions":{"deny":["WebFetch"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := doctor(t, []string{
		"SLACK_BOT_TOKEN=xoxb-revoked", "SLACK_API_URL=" + slack.APIURL(), "APPROVERS=*",
		"DATA_DIR=" + data, "CLAUDE_BIN=" + filepath.Join(t.TempDir(), "no-claude"), "CLAUDE_WORKDIR=" + filepath.Dir(data),
		"CLAUDE_SETTINGS=" + settings, claudeAsRoot(),
	})
	if err == nil || !strings.Contains(err.Error(), "6 of 14 checks failed") {
		t.Errorf("doctor = %v, want 6 of 14 checks failed", err)
	}
	for _, want := range []string{
		"✗ Slack settings: set SLACK_APP_TOKEN",
		"✗ Slack bot token: auth.test: invalid_auth", "fix: Slack refused SLACK_BOT_TOKEN",
		"- Slack scopes: not checked", "✓ store",
		"✗ working directories", "DATA_DIR, where slackgate keeps its store",
		"✗ Claude Code CLI", "fix: set CLAUDE_BIN",
		"✗ Claude Code settings: CLAUDE_SETTINGS=" + settings + ": lies in the working directory",
		"✗ Claude Code credential: CLAUDE_BIN=", "no-claude auth status",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, out)
		}
	}
}

// TestDoctorDoesNotBlameTheTokenForTheNetwork: a Slack that cannot be
// reached is the network's problem, and doctor says so.
func TestDoctorDoesNotBlameTheTokenForTheNetwork(t *testing.T) {
	out, _ := doctor(t, []string{"SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "APPROVERS=*", "DATA_DIR=" + t.TempDir(),
		"SLACK_API_URL=http://127.0.0.1:1/api/"}, "bot")
	if !strings.Contains(out, "✗ Slack bot token") || !strings.Contains(out, "cannot reach http://127.0.0.1:1/api/: check DNS") ||
		strings.Contains(out, "refused SLACK_BOT_TOKEN") {
		t.Errorf("doctor with Slack out of reach:\n%s", out)
	}
}

func TestDoctorRefusesAWrongAppToken(t *testing.T) {
	slack := fakeslack.New(t, fakeslack.AllowRejections())
	out, err := doctor(t, []string{
		"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=xapp-revoked", "SLACK_API_URL=" + slack.APIURL(), "DATA_DIR=" + t.TempDir(),
		"APPROVERS=*", "DECISION_SIGNING_KEY=" + testKeys.sign, "REDIS_URL=redis://127.0.0.1:1/0",
	}, "bot")
	if err == nil || !strings.Contains(out, "✗ Slack transport: apps.connections.open: invalid_auth") || !strings.Contains(out, "fix: check SLACK_APP_TOKEN") {
		t.Errorf("doctor bot with a wrong app token = %v:\n%s", err, out)
	}
}

func TestDoctorForAWorkerSkipsSlack(t *testing.T) {
	environ, _ := goodEnviron(t)
	out, err := doctor(t, append(environ, "DECISION_VERIFY_KEY="+testKeys.verify, "REDIS_URL=redis://127.0.0.1:1/0"), "worker")
	if err == nil || regexp.MustCompile(`(?m)^. Slack`).MatchString(out) || !strings.Contains(out, "✓ Claude Code CLI") || !strings.Contains(out, "✓ Claude Code credential") ||
		!strings.Contains(out, "✗ store: REDIS_URL") {
		t.Errorf("doctor worker = %v, want no Slack checks, the CLI's passing and the unreachable Redis failing:\n%s", err, out)
	}
}

// TestDoctorFailsWhatRunRefuses: doctor runs run's own checks, so each
// configuration run refuses to start with fails doctor, on a line saying
// what run says; and the one it passes, run starts with.
func TestDoctorFailsWhatRunRefuses(t *testing.T) {
	editDeny := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(editDeny, []byte("rules:\n  - name: no-ci-edits\n    match: [\"Edit(.github/**)\"]\n    channels: [C0OPS]\n    deny: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(broken, []byte("rules:\n  - name: x\n    match: [\"Bash(\"]\n    allow: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		drop    string   // a variable of the good configuration left out
		environ []string // more, or instead
		want    string   // what run's refusal says
	}{
		{name: "no APPROVERS", drop: "APPROVERS", want: "APPROVERS is required"},
		{name: "no Slack app token", drop: "SLACK_APP_TOKEN", want: "SLACK_APP_TOKEN"},
		{name: "a value out of range", environ: []string{"MAX_SESSIONS=0"}, want: "MAX_SESSIONS=0"},
		{name: "a broken POLICY_FILE", environ: []string{"POLICY_FILE=" + broken}, want: "POLICY_FILE=" + broken},
		{name: "a mode that skips what a rule denies", environ: []string{"POLICY_FILE=" + editDeny, "CLAUDE_PERMISSION_MODE=acceptEdits"},
			want: `CLAUDE_PERMISSION_MODE=acceptEdits lets Claude Code run what it covers without asking, past the policy's rules "no-ci-edits" (line 2)`},
		{name: "keys that are not a pair", environ: []string{"DECISION_SIGNING_KEY=" + testKeys.sign, "DECISION_VERIFY_KEY=" + otherKeys.verify},
			want: "not the public half"},
		{name: "a CLAUDE_USER that does not exist", environ: []string{"CLAUDE_USER=no-such-user-slackgate"}, want: `no such user "no-such-user-slackgate"`},
		{name: "a CLAUDE_WORKDIR that does not exist", environ: []string{"CLAUDE_WORKDIR=/srv/no-such-repo"},
			want: "the working directory /srv/no-such-repo does not exist"},
		{name: "no credential for Claude Code", drop: "ANTHROPIC_API_KEY", want: "has no credential: set ANTHROPIC_API_KEY"},
		{name: "no Claude Code CLI", environ: []string{"CLAUDE_BIN=/nonexistent/claude"}, want: "CLAUDE_BIN=/nonexistent/claude"},
		{name: "CLAUDE_SETTINGS that is not there", environ: []string{"CLAUDE_SETTINGS=/nonexistent/settings.json"},
			want: "CLAUDE_SETTINGS=/nonexistent/settings.json: cannot be read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			good, _ := goodEnviron(t)
			environ := slices.DeleteFunc(good, func(kv string) bool { return tc.drop != "" && strings.HasPrefix(kv, tc.drop+"=") })
			environ = append(environ, tc.environ...)
			_, runErr := runProgram(t, environ, "run")
			out, docErr := doctor(t, environ)
			if runErr == nil || !strings.Contains(runErr.Error(), tc.want) {
				t.Fatalf("run = %v; want a refusal saying %q", runErr, tc.want)
			}
			said := strings.TrimPrefix(runErr.Error(), "config: ")
			if docErr == nil || !strings.Contains(out, "✗ ") || !strings.Contains(out, said) {
				t.Errorf("run refuses with %q, but doctor = %v:\n%s", said, docErr, out)
			}
		})
	}
	t.Run("a good configuration", func(t *testing.T) {
		t.Parallel()
		environ, slack := goodEnviron(t)
		if out, err := doctor(t, environ); err != nil {
			t.Fatalf("doctor = %v:\n%s", err, out)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var logs syncBuffer
		done := make(chan error, 1)
		go func() { done <- program{environ: environ, stdout: &logs, stderr: &logs}.run(ctx, []string{"run"}) }()
		if err := slack.WaitConnected(ctx); err != nil {
			t.Errorf("doctor passed, but run never connected: %v\n%s", err, logs.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run = %v\n%s", err, logs.String())
		}
	})
}

func TestDoctorChecksClaudeCannotWriteItsManagedSettings(t *testing.T) {
	name := relaytest.OSUser(t) // needs root, as CLAUDE_USER does
	cfg := Config{ClaudeUser: name}
	etc := t.TempDir()
	if err := os.Chmod(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(etc, "claude-code")
	check := func(cfg Config) (string, string, bool) {
		detail, err := managedSettingsCheck(cfg, dir)
		var fe *fixError
		if errors.As(err, &fe) {
			return err.Error(), fe.fix, false
		}
		return detail, "", err == nil
	}
	if detail, _, ok := check(cfg); !ok {
		t.Errorf("a missing directory in a root-owned one: %s", detail)
	}
	if err := os.Chmod(etc, 0o777); err != nil {
		t.Fatal(err)
	}
	if detail, _, ok := check(cfg); ok || !strings.Contains(detail, "would be made") {
		t.Errorf("a missing directory %s may make: %s", name, detail)
	}
	if err := os.Chmod(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "managed-settings.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if detail, _, ok := check(cfg); !ok {
		t.Errorf("root-owned settings: %s", detail)
	}
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	if detail, fix, ok := check(cfg); ok || !strings.Contains(detail, file) || !strings.Contains(fix, "CLAUDE_USER") {
		t.Errorf("settings %s may write: %s (fix %s)", name, detail, fix)
	}
	if detail, _, ok := check(Config{}); ok || !strings.Contains(detail, "slackgate's own user") {
		t.Errorf("Claude as root (no CLAUDE_USER): %s", detail)
	}
	if detail, _, ok := check(Config{ClaudeAsRoot: true}); !ok || !strings.Contains(detail, "CLAUDE_AS_ROOT") {
		t.Errorf("Claude as root, accepted: %s", detail)
	}
}

func TestClaudeAsRootWithoutClaudeUserIsRefused(t *testing.T) {
	root := program{geteuid: func() int { return 0 }}
	if _, err := root.claudeUser(context.Background(), Config{}); err == nil ||
		!strings.Contains(err.Error(), "CLAUDE_USER") || !strings.Contains(err.Error(), "/etc/claude-code") {
		t.Errorf("root without CLAUDE_USER: %v, want a refusal naming CLAUDE_USER and /etc/claude-code", err)
	}
	if _, err := root.claudeUser(context.Background(), Config{ClaudeAsRoot: true}); err != nil {
		t.Errorf("root with CLAUDE_AS_ROOT: %v", err)
	}
	plain := program{geteuid: func() int { return 1000 }}
	if _, err := plain.claudeUser(context.Background(), Config{}); err != nil {
		t.Errorf("a plain user without CLAUDE_USER: %v", err)
	}
}
