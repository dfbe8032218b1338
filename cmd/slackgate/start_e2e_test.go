package main

// End-to-end tests of how a session starts and goes on: a direct message,
// /claude, and a reply in its thread.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

func TestDirectMessageStartsASessionInTheDM(t *testing.T) {
	t.Parallel()
	dmDir := t.TempDir()
	a := startApp(t, options{configure: func(c *Config) { c.AllowDMs, c.DMWorkDir = true, dmDir }},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo private > dm.txt", "Write dm.txt")),
		relaytest.Text("Done in the DM."))
	dm := fakeslack.DMChannel(dana)
	thread, err := a.slack.DM(a.ctx, dana, "write dm.txt please")
	if err != nil {
		t.Fatalf("DM: %v", err)
	}
	card := a.cardIn(dm, thread, "echo private")
	a.click(dana, card.Ref(), "Approve")

	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got, err := os.ReadFile(filepath.Join(dmDir, "dm.txt")); string(got) != "private\n" {
		t.Errorf("DM_WORKDIR/dm.txt = %q (%v), want the command's output: a DM session runs in DM_WORKDIR", got, err)
	}
	a.noFile("dm.txt") // never in CLAUDE_WORKDIR
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Approved") && m.HasText("<@"+dana+">") && len(m.Buttons()) == 0
	}); err != nil {
		cur, _ := a.slack.Message(card.Ref())
		t.Fatalf("the DM card never settled naming dana: %v\ncard now: %s", err, cur.AllText())
	}
	if _, err := a.slack.WaitThread(a.ctx, dm, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText("Done in the DM.")
	}); err != nil {
		t.Fatalf("Claude's answer did not reach the DM thread: %v", err)
	}
	if got := a.lastRequest().UserTexts(); !strings.Contains(strings.Join(got, "\n"), "write dm.txt please") {
		t.Errorf("the model did not get the DM's text; user texts %q", got)
	}
	for _, m := range a.slack.Messages(general) {
		if m.FromBot() {
			t.Errorf("a DM session posted in #general: %s", m.AllText())
		}
	}
}

func TestSlashCommandPostsTheSessionStartAndWorksUnderIt(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo via-slash > slash.txt", "Slash")),
		relaytest.Text("Slash done."))
	if err := a.slack.SlashCommand(a.ctx, dana, general, "/claude", "write slash.txt"); err != nil {
		t.Fatalf("/claude: %v", err)
	}
	start, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == general && m.ThreadTS == "" && m.FromBot() && m.HasText("write slash.txt")
	})
	if err != nil {
		t.Fatalf("the bot never posted the session's first message: %v", err)
	}
	if !start.HasText("<@" + dana + ">") {
		t.Errorf("the first message should say who started the session: %s", start.AllText())
	}
	card := a.card(start.TS, "echo via-slash")
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got := a.file("slash.txt"); got != "via-slash\n" {
		t.Errorf("slash.txt = %q, want the command's output", got)
	}
	a.settled(card.Ref(), "Approved")
	a.threadText(start.TS, "Slash done.")
	if got := a.lastRequest().UserTexts(); !strings.Contains(strings.Join(got, "\n"), "write slash.txt") {
		t.Errorf("the model did not get the command's text; user texts %q", got)
	}
}

func TestThreadReplyContinuesTheSession(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.Text("first answer"),
		relaytest.Text("second answer"))
	thread := a.mention("hello")
	a.threadText(thread, "first answer")

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "and now the tests"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "second answer")
	reqs := a.model.Requests()
	last := reqs[len(reqs)-1]
	texts := strings.Join(last.UserTexts(), "\n")
	if !strings.Contains(texts, "hello") || !strings.Contains(texts, "and now the tests") {
		t.Errorf("the follow-up turn should carry the whole conversation; user texts: %q", last.UserTexts())
	}
}
