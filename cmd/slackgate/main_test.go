package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store/boltstore"
)

func TestMain(m *testing.M) {
	runHookIfAsked()
	runMCPIfAsked()
	runWorkerIfAsked()
	runElicitServerIfAsked()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { removeBuiltBinary() }))
}

// runProgram runs slackgate with args and environ and returns its error and
// what it printed.
func runProgram(t *testing.T, environ []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	// First, so a test's own HEALTH_ADDR wins; Claude runs as whoever
	// runs the tests, as testConfig says.
	environ = append([]string{"HEALTH_ADDR=127.0.0.1:0", claudeAsRoot()}, environ...)
	err := program{environ: environ, stdout: &out, stderr: &out}.run(ctx, args)
	return out.String(), err
}

func TestStartupFailuresSayWhatToFix(t *testing.T) {
	slack := []string{"SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1"}
	tests := []struct {
		name    string
		environ []string
		args    []string
		want    []string // substrings of the error
		notWant string
	}{
		{name: "no command", args: nil, want: []string{"no command"}},
		{name: "unknown command", args: []string{"serve"}, want: []string{`unknown command "serve"`}},
		{name: "no bot token", args: []string{"run"}, environ: []string{"SLACK_APP_TOKEN=xapp-1"},
			want: []string{"SLACK_BOT_TOKEN", "deploy/slack/manifest.yaml"}},
		{name: "no transport", args: []string{"run"}, environ: []string{"SLACK_BOT_TOKEN=xoxb-1"},
			want: []string{"SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"}},
		{name: "bad approvers", args: []string{"run"}, environ: append([]string{"APPROVERS=dana"}, slack...),
			want: []string{"APPROVERS", `"dana"`}},
		{name: "no approvers", args: []string{"run"}, environ: slack,
			want: []string{"APPROVERS is required", "user ids (U…)", "user group ids (S…)", "APPROVERS=*"}},
		{name: "star and ids as approvers", args: []string{"run"}, environ: append([]string{"APPROVERS=*,U1"}, slack...),
			want: []string{"APPROVERS", "choose one"}},
		{name: "bad starters", args: []string{"run"}, environ: append([]string{"APPROVERS=*", "STARTERS=dana"}, slack...),
			want: []string{"STARTERS", `"dana"`}},
		{name: "bad allowed teams", args: []string{"run"}, environ: append([]string{"APPROVERS=*", "ALLOWED_TEAMS=T1,acme"}, slack...),
			want: []string{"ALLOWED_TEAMS", `"acme"`}},
		{name: "bad allowed channels", args: []string{"run"}, environ: append([]string{"APPROVERS=*", "ALLOWED_CHANNELS=#general"}, slack...),
			want: []string{"ALLOWED_CHANNELS", `"#general"`}},
		{name: "DMs without their workdir", args: []string{"run"}, environ: append([]string{"APPROVERS=*", "ALLOW_DMS=true"}, slack...),
			want: []string{"ALLOW_DMS", "DM_WORKDIR"}},
		{name: "bad channel workdirs", args: []string{"run"}, environ: append([]string{"APPROVERS=*", "CHANNEL_WORKDIRS=C1"}, slack...),
			want: []string{"CHANNEL_WORKDIRS"}},
		{name: "bot needs redis", args: []string{"bot"}, environ: append([]string{"APPROVERS=*"}, slack...), want: []string{"REDIS_URL", "slackgate run"}},
		{name: "worker needs redis", args: []string{"worker"}, want: []string{"REDIS_URL"}},
		{name: "bot needs the signing key", args: []string{"bot"}, environ: append([]string{"REDIS_URL=redis://127.0.0.1:1/0"}, slack...),
			want: []string{"DECISION_SIGNING_KEY", "slackgate keygen"}},
		{name: "worker needs the verify key", args: []string{"worker"}, environ: []string{"REDIS_URL=redis://127.0.0.1:1/0"},
			want: []string{"DECISION_VERIFY_KEY", "slackgate keygen"}},
		{name: "a signing key that is not one", args: []string{"run"}, environ: append([]string{"DECISION_SIGNING_KEY=c2hvcnQ="}, slack...),
			want: []string{"DECISION_SIGNING_KEY", "32-byte", "slackgate keygen"}},
		{name: "run with keys that are not a pair", args: []string{"run"},
			environ: append([]string{"DECISION_SIGNING_KEY=" + testKeys.sign, "DECISION_VERIFY_KEY=" + otherKeys.verify}, slack...),
			want:    []string{"DECISION_VERIFY_KEY is not the public half of DECISION_SIGNING_KEY"}},
		{name: "run with only the verify key", args: []string{"run"},
			environ: append([]string{"DECISION_VERIFY_KEY=" + testKeys.verify}, slack...), want: []string{"DECISION_SIGNING_KEY"}},
		{name: "redis unreachable fails fast with the password masked", args: []string{"worker"},
			environ: []string{"REDIS_URL=redis://:hunter2@127.0.0.1:1/0", "DECISION_VERIFY_KEY=" + testKeys.verify},
			want:    []string{"REDIS_URL", "redis://:***@127.0.0.1:1/0", "cannot reach"}, notWant: "hunter2"},
		{name: "redis cluster unreachable fails fast with the password masked", args: []string{"worker"},
			environ: []string{"REDIS_URL=redis+cluster://:hunter2@127.0.0.1:1,127.0.0.1:2/", "DECISION_VERIFY_KEY=" + testKeys.verify},
			want:    []string{"REDIS_URL", "redis+cluster://:***@127.0.0.1:1,127.0.0.1:2/", "cannot reach"}, notWant: "hunter2"},
		{name: "a cluster has no database 3", args: []string{"worker"},
			environ: []string{"REDIS_URL=redis+cluster://:hunter2@127.0.0.1:1/3", "DECISION_VERIFY_KEY=" + testKeys.verify},
			want:    []string{"REDIS_URL", "only database 0"}, notWant: "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := runProgram(t, tt.environ, tt.args...)
			if err == nil {
				t.Fatal("run succeeded; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("error %q leaks %q", err, tt.notWant)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s to fail; want fast", d)
			}
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	out, err := runProgram(t, nil, "help")
	if err != nil || !strings.Contains(out, "slackgate <command>") || !strings.Contains(out, "worker") {
		t.Fatalf("help: err %v, output %q", err, out)
	}
}

func TestSecondInstanceOnOneDataDirSaysWhoHasIt(t *testing.T) {
	dir := t.TempDir()
	held, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	f := fakeslack.New(t)
	_, err = runProgram(t, []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken,
		"SLACK_API_URL=" + f.APIURL(), "DATA_DIR=" + dir, "APPROVERS=*"}, "run")
	if err == nil || !strings.Contains(err.Error(), "DATA_DIR="+dir) || !strings.Contains(err.Error(), "another slackgate") {
		t.Fatalf("run on a locked DATA_DIR = %v; want an error naming DATA_DIR and the likely cause", err)
	}
}

// keyPair is a decision key pair as `slackgate keygen` prints it.
type keyPair struct{ sign, verify string }

// newKeyPair runs keygen and parses its two lines.
func newKeyPair() keyPair {
	var out bytes.Buffer
	if err := keygen(&out); err != nil {
		panic(err)
	}
	var k keyPair
	for line := range strings.Lines(out.String()) {
		name, value, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch name {
		case "DECISION_SIGNING_KEY":
			k.sign = value
		case "DECISION_VERIFY_KEY":
			k.verify = value
		}
	}
	return k
}

// testKeys is the pair split-mode tests give their bots and workers.
var testKeys, otherKeys = newKeyPair(), newKeyPair()

func TestKeygenPrintsAPairTheCommandsAccept(t *testing.T) {
	out, err := runProgram(t, nil, "keygen")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "DECISION_SIGNING_KEY=") || !strings.HasPrefix(lines[1], "DECISION_VERIFY_KEY=") {
		t.Fatalf("keygen printed %q, want the two variables, one a line", out)
	}
	cfg := Config{DecisionSigningKey: strings.TrimPrefix(lines[0], "DECISION_SIGNING_KEY="),
		DecisionVerifyKey: strings.TrimPrefix(lines[1], "DECISION_VERIFY_KEY=")}
	k, err := resolveKeys("run", cfg)
	if err != nil || k.generated {
		t.Fatalf("run does not take keygen's pair: %v (generated %v)", err, k.generated)
	}
	if again := newKeyPair(); again == (keyPair{cfg.DecisionSigningKey, cfg.DecisionVerifyKey}) {
		t.Error("keygen printed the same pair twice")
	}
	bot, err := resolveKeys("bot", Config{DecisionSigningKey: cfg.DecisionSigningKey})
	if err != nil || bot.sign == nil {
		t.Errorf("bot with the signing key: %v", err)
	}
	worker, err := resolveKeys("worker", Config{DecisionVerifyKey: cfg.DecisionVerifyKey})
	if err != nil || worker.verify == nil {
		t.Errorf("worker with the verify key: %v", err)
	}
	if !k.verify.Equal(worker.verify) || !k.sign.Equal(bot.sign) {
		t.Error("the halves parsed apart differ from the pair")
	}
}

func TestRunWithoutKeysMakesAPairInMemory(t *testing.T) {
	k, err := resolveKeys("run", Config{})
	if err != nil || !k.generated || k.sign == nil || !k.verify.Equal(k.sign.Public()) {
		t.Fatalf("resolveKeys(run, no keys) = %+v, %v; want a fresh pair", k, err)
	}
}

// TestRunOnTheEmbeddedStoreKeepsItsPairInDataDir: the pair `slackgate run`
// makes is kept beside its store, so what it signed (sessions, queued
// messages, remembered answers) still verifies after a restart.
func TestRunOnTheEmbeddedStoreKeepsItsPairInDataDir(t *testing.T) {
	dir := t.TempDir()
	first, err := resolveKeys("run", Config{})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := keepKeys(first, dir)
	if err != nil || !kept.sign.Equal(first.sign) || kept.generated {
		t.Fatalf("keepKeys of a new pair = %+v, %v; want the pair, kept", kept, err)
	}
	fi, err := os.Stat(filepath.Join(dir, keptKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the kept key file: %v, %v; want mode 0600", fi, err)
	}
	second, err := resolveKeys("run", Config{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := keepKeys(second, dir)
	if err != nil || !again.sign.Equal(first.sign) || !again.verify.Equal(first.verify) {
		t.Fatalf("after a restart keepKeys = %+v, %v; want the first life's pair", again, err)
	}
	if err := os.WriteFile(filepath.Join(dir, keptKeyFile), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keepKeys(second, dir); err == nil || !strings.Contains(err.Error(), keptKeyFile) {
		t.Errorf("a damaged key file: err = %v, want one naming it", err)
	}
}

func TestWorkDirHoldingSlackgatesOwnFilesIsRefused(t *testing.T) {
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	base := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken,
		"SLACK_API_URL=" + fakeslack.New(t).APIURL(), "APPROVERS=*"}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"the default workdir is slackgate's own directory", []string{"DATA_DIR=" + data}, "where `make run` reads .env"},
		{"a parent of slackgate's directory", []string{"DATA_DIR=" + data, "CLAUDE_WORKDIR=" + filepath.Dir(here)}, "where `make run` reads .env"},
		{"DATA_DIR inside the workdir", []string{"DATA_DIR=" + filepath.Join(data, "state"), "CLAUDE_WORKDIR=" + data}, "DATA_DIR, where slackgate keeps its store"},
		{"DATA_DIR inside a channel's workdir", []string{"DATA_DIR=" + filepath.Join(data, "state"), "CLAUDE_WORKDIR=" + t.TempDir(),
			"CHANNEL_WORKDIRS=C1=" + data}, "DATA_DIR"},
		{"DATA_DIR inside the DM workdir", []string{"DATA_DIR=" + filepath.Join(data, "state"), "CLAUDE_WORKDIR=" + t.TempDir(),
			"ALLOW_DMS=true", "DM_WORKDIR=" + data}, "DATA_DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runProgram(t, append(tt.env, base...), "run")
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "CLAUDE_WORKDIR") {
				t.Fatalf("run = %v; want a refusal naming %q and CLAUDE_WORKDIR", err, tt.want)
			}
		})
	}
}

// TestAPartThatFailsIsLoggedAsAnError: a part failing after "slackgate
// started" (here Slack refusing the token) ends the process with an
// error-level line saying why, never an info one.
func TestAPartThatFailsIsLoggedAsAnError(t *testing.T) {
	slack := fakeslack.New(t, fakeslack.AllowRejections())
	environ := append(cliEnviron(t), "SLACK_BOT_TOKEN=xoxb-revoked", "SLACK_APP_TOKEN="+fakeslack.AppToken, "SLACK_API_URL="+slack.APIURL(),
		"APPROVERS=*", "DATA_DIR="+t.TempDir(), "CLAUDE_WORKDIR="+t.TempDir(), "LOG_FORMAT=json")
	out, err := runProgram(t, environ, "run")
	if err == nil || !strings.Contains(err.Error(), "Slack refused SLACK_BOT_TOKEN") {
		t.Fatalf("run with a revoked token = %v; want Slack's refusal", err)
	}
	var stopped map[string]any
	for line := range strings.Lines(out) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && strings.HasPrefix(fmt.Sprint(m["message"]), "slackgate stopped") {
			stopped = m
		}
	}
	if stopped == nil || stopped["level"] != "error" || !strings.Contains(fmt.Sprint(stopped["error"]), "Slack refused SLACK_BOT_TOKEN") {
		t.Errorf("the last line = %v; want an error-level \"slackgate stopped\" naming the cause\n%s", stopped, out)
	}
}
