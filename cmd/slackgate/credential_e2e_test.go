package main

// End-to-end tests of a Claude Code without a working credential: the
// real CLI fails its turn ("Not logged in · Please run /login", or the
// API's 401), and the thread and the status line say what the operator
// has to do, since nobody in Slack can run /login.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// TestALostLoginReadsAsAnErrorSayingWhatToDo: the worker starts with a
// stored login, which is then removed (expired, logged out): the turn
// fails, and neither the thread nor the status line says "success".
func TestALostLoginReadsAsAnErrorSayingWhatToDo(t *testing.T) {
	t.Parallel()
	config := t.TempDir()
	if err := os.WriteFile(filepath.Join(config, ".credentials.json"), []byte(relaytest.StoredLogin), 0o600); err != nil {
		t.Fatal(err)
	}
	// The stored login is the CLI's only credential: the model's key is
	// emptied (the last value of a variable is the one a process gets).
	a := startApp(t, options{environ: []string{"ANTHROPIC_API_KEY=", "CLAUDE_CONFIG_DIR=" + config}})
	if err := os.Remove(filepath.Join(config, ".credentials.json")); err != nil {
		t.Fatal(err)
	}
	thread := a.mention("hello")
	a.failsSaying(thread, "authentication_failed", "Not logged in")
	if n := len(a.model.Requests()); n != 0 {
		t.Errorf("the model got %d calls; a CLI without a login makes none", n)
	}
}

// TestAKeyTheAPIRefusesReadsAsAnErrorSayingWhatToDo: the key passes the
// check at start (the CLI cannot know it is wrong) and the API answers
// 401.
func TestAKeyTheAPIRefusesReadsAsAnErrorSayingWhatToDo(t *testing.T) {
	t.Parallel()
	// The CLI retries a 401 ten times over minutes before it gives up;
	// the test has it give up at once. What it then says is the same.
	a := startApp(t, options{environ: []string{"CLAUDE_CODE_MAX_RETRIES=0"}},
		relaytest.APIError(401, "authentication_error", "invalid x-api-key"))
	thread := a.mention("hello")
	a.failsSaying(thread, "authentication_failed", "Invalid API key")
}

// failsSaying waits for the thread to say the turn failed for kind,
// quoting what the CLI said, and for the status line to say it failed
// in the same words; no message says the turn succeeded, and the CLI's
// advice to run /login never stands alone.
func (a *app) failsSaying(thread, kind, said string) {
	t := a.tb
	t.Helper()
	const what = "Claude Code is not logged in where the worker runs, or its credential was refused: set ANTHROPIC_API_KEY"
	line := a.threadText(thread, "❌ Turn failed (`"+kind+"`)")
	if !line.HasText(what) || !line.HasText("Claude Code said: "+said) {
		t.Errorf("the turn's line = %s; want what to do, then what Claude Code said", line.AllText())
	}
	if _, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText("❌ Failed: "+what)
	}); err != nil {
		t.Errorf("the status line never said what failed: %v\nthread: %s", err, a.dump(thread))
	}
	for _, m := range a.slack.Thread(general, thread) {
		text := m.AllText()
		if strings.Contains(text, "success") || strings.Contains(text, "✅") ||
			(strings.Contains(text, said) && !strings.Contains(text, "Claude Code said: "+said)) {
			t.Errorf("a message reads as success, or as the CLI's words alone: %s", text)
		}
	}
}
