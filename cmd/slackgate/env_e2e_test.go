package main

// End-to-end proofs that what slackgate holds does not reach what Claude
// runs: an approved command looks for slackgate's secrets the way an
// attacker would, and the next request still waits for a person.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// approve waits for the card showing text, approves it as lee and returns
// what the model got back for toolUseID.
func (a *app) approve(thread, text, toolUseID string) relaytest.ToolResult {
	a.tb.Helper()
	card := a.card(thread, text)
	a.click(lee, card.Ref(), "Approve")
	res := a.toolResult(toolUseID)
	a.settled(card.Ref(), "Approved")
	return res
}

// stillAsks proves the request after an escape attempt waits for a person:
// its card is posted and its command has not run until the card is approved.
func (a *app) stillAsks(thread, dir string) {
	a.tb.Helper()
	card := a.card(thread, "touch after.txt")
	if _, err := os.Stat(filepath.Join(dir, "after.txt")); !os.IsNotExist(err) {
		a.tb.Fatalf("after.txt exists before anyone approved (err %v)", err)
	}
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_after"); res.IsError {
		a.tb.Fatalf("the approved command failed: %q", res.Content)
	}
	if _, err := os.Stat(filepath.Join(dir, "after.txt")); err != nil {
		a.tb.Fatalf("the approved command did not run: %v", err)
	}
}

func TestApprovedEnvShowsNoneOfSlackgatesSecrets(t *testing.T) {
	t.Parallel()
	// The settings are in slackgate's environment, as in production: what
	// the test proves is that none leaves it.
	a := startApp(t, options{transport: httpMode, backend: redisBackend, approvers: lee, fromEnvironment: true,
		configure: func(c *Config) { c.ClaudeEnv = "SLACKGATE_E2E_PASSED" },
		environ: []string{
			"SLACKGATE_E2E_PASSED=passed-by-choice",
			"SLACKGATE_E2E_UNLISTED=unlisted-stays-behind",
			"SLACK_USER_TOKEN=xoxp-e2e-beside-slackgate",
		}},
		relaytest.ToolUse("toolu_env", "Bash", bash("env | sort", "Show the environment")),
		relaytest.ToolUse("toolu_after", "Bash", bash("touch after.txt", "Mark")),
		relaytest.Text("done"))
	thread := a.mention("what is in your environment?")

	res := a.approve(thread, "env | sort", "toolu_env")
	if res.IsError {
		t.Fatalf("env failed: %q", res.Content)
	}
	secrets := map[string]string{
		"SLACK_BOT_TOKEN": fakeslack.BotToken, "SLACK_SIGNING_SECRET": signingSecret,
		"REDIS_URL": a.cfg.RedisURL, "SLACK_USER_TOKEN": "xoxp-e2e-beside-slackgate",
		"SLACKGATE_E2E_UNLISTED": "unlisted-stays-behind",
	}
	for name, value := range secrets {
		if value == "" || strings.Contains(res.Content, value) {
			t.Errorf("%s's value %q is in what the command printed", name, value)
		}
	}
	for _, line := range strings.Split(res.Content, "\n") {
		if strings.HasPrefix(line, "SLACK_") || strings.HasPrefix(line, "REDIS_") || strings.HasPrefix(line, "APPROVERS=") {
			t.Errorf("a setting of slackgate's reached Claude: %s", line)
		}
	}
	for _, want := range []string{"PATH=", "ANTHROPIC_BASE_URL=", "SLACKGATE_E2E_PASSED=passed-by-choice"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("the environment lacks %q, which must pass:\n%s", want, res.Content)
		}
	}
	a.stillAsks(thread, a.workdir)
}

func TestClaudeUserCannotReadSlackgatesEnvironOrDataDir(t *testing.T) {
	t.Parallel()
	name := relaytest.OSUser(t)
	work := sharedDir(t, name)
	// DATA_DIR sits where the user could look and starts open to all:
	// only slackgate closing it keeps the store out of reach.
	parent := sharedDir(t, name)
	data := filepath.Join(parent, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(data, 0o755); err != nil {
		t.Fatal(err)
	}
	environ := fmt.Sprintf("/proc/%d/environ", os.Getpid()) // slackgate runs in this test process
	a := startApp(t, options{approvers: lee, configure: func(c *Config) { c.ClaudeUser, c.WorkDir, c.DataDir = name, work, data }},
		relaytest.ToolUse("toolu_who", "Bash", bash("id -un > who.txt; echo home=$HOME >> who.txt; cat who.txt", "Who am I")),
		relaytest.ToolUse("toolu_environ", "Bash", bash("cat "+environ, "Read slackgate's environment")),
		relaytest.ToolUse("toolu_data", "Bash", bash("ls -la "+data+"; cat "+data+"/slackgate.db", "Read slackgate's store")),
		relaytest.ToolUse("toolu_after", "Bash", bash("touch after.txt", "Mark")),
		relaytest.Text("done"))
	thread := a.mention("who are you?")

	who := a.approve(thread, "who.txt", "toolu_who")
	if who.IsError || !strings.Contains(who.Content, name) || !strings.Contains(who.Content, "home=/home/"+name) {
		t.Fatalf("the command did not run as %s with its home: %q (is_error %v)", name, who.Content, who.IsError)
	}
	if fi, err := os.Stat(filepath.Join(work, "who.txt")); err != nil || fi.Sys().(*syscall.Stat_t).Uid == 0 {
		t.Errorf("who.txt is not the test user's: %v", err)
	}
	for _, step := range []struct{ id, text string }{{"toolu_environ", environ}, {"toolu_data", "slackgate.db"}} {
		res := a.approve(thread, step.text, step.id)
		if !res.IsError || !strings.Contains(res.Content, "Permission denied") {
			t.Errorf("%s: want permission denied, the model got %q (is_error %v)", step.id, res.Content, res.IsError)
		}
		if strings.Contains(res.Content, fakeslack.BotToken) || strings.Contains(res.Content, "slackgate.db\n") {
			t.Errorf("%s: the command saw what it must not:\n%s", step.id, res.Content)
		}
	}
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("DATA_DIR: %v, %v; want mode 0700", fi.Mode(), err)
	}
	a.stillAsks(thread, work)
}
