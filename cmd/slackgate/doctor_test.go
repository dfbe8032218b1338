package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// doctor runs `slackgate doctor` and returns its error and what it printed.
func doctor(t *testing.T, environ []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	err := program{environ: environ, stdout: &out, stderr: &out}.run(ctx, append([]string{"doctor"}, args...))
	return out.String(), err
}

func TestDoctorPassesAGoodConfiguration(t *testing.T) {
	slack := fakeslack.New(t)
	out, err := doctor(t, []string{
		"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "SLACK_API_URL=" + slack.APIURL(),
		"DATA_DIR=" + t.TempDir(), "CLAUDE_BIN=" + relaytest.CLI(t), "CLAUDE_WORKDIR=" + t.TempDir(),
	})
	if err != nil {
		t.Fatalf("doctor failed a good configuration: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ Slack bot token: auth.test: bot " + fakeslack.BotUserID, "✓ Slack scopes", "✓ Socket Mode",
		"✓ store (bolt ", "✓ Claude Code CLI", "(Claude Code)", "✓ working directories", "✓ Claude Code settings: setting sources: none"} {
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
		"SLACK_BOT_TOKEN=xoxb-revoked", "SLACK_API_URL=" + slack.APIURL(),
		"DATA_DIR=" + data, "CLAUDE_BIN=" + filepath.Join(t.TempDir(), "no-claude"), "CLAUDE_WORKDIR=" + filepath.Dir(data),
		"CLAUDE_SETTINGS=" + settings,
	})
	if err == nil || !strings.Contains(err.Error(), "4 of 5 checks failed") {
		t.Errorf("doctor = %v, want 4 of 5 checks failed (a bad token stops the Slack checks at the first)", err)
	}
	for _, want := range []string{
		"✗ Slack bot token: auth.test: invalid_auth", "fix: check SLACK_BOT_TOKEN",
		"✓ store (bolt ",
		"✗ Claude Code CLI", "fix: set CLAUDE_BIN",
		"✗ working directories", "DATA_DIR, where slackgate keeps its store",
		"✗ Claude Code settings: CLAUDE_SETTINGS=" + settings + ": lies in the working directory", "fix: keep the files",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorRefusesAWrongAppToken(t *testing.T) {
	slack := fakeslack.New(t, fakeslack.AllowRejections())
	out, err := doctor(t, []string{
		"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=xapp-revoked", "SLACK_API_URL=" + slack.APIURL(), "DATA_DIR=" + t.TempDir(),
	}, "bot")
	if err == nil || !strings.Contains(out, "✗ Socket Mode: apps.connections.open: invalid_auth") || !strings.Contains(out, "fix: check SLACK_APP_TOKEN") {
		t.Errorf("doctor bot with a wrong app token = %v:\n%s", err, out)
	}
}

func TestDoctorForAWorkerSkipsSlack(t *testing.T) {
	out, err := doctor(t, []string{"DATA_DIR=" + t.TempDir(), "CLAUDE_BIN=" + relaytest.CLI(t), "CLAUDE_WORKDIR=" + t.TempDir()}, "worker")
	if err != nil || strings.Contains(out, "Slack bot token") || !strings.Contains(out, "✓ Claude Code CLI") {
		t.Errorf("doctor worker = %v, want no Slack checks and no failure:\n%s", err, out)
	}
}
