package main

// End-to-end tests of a session outliving the program that ran it: a
// restart on the same DATA_DIR, one while a card is being posted, and a
// session that moves between worker programs on Redis.

import (
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

func TestRestartOnTheSameDataDirLosesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo never > never.txt", "Never approved")),
		relaytest.Text("Picked up after the restart."))
	thread := a.mention("write never.txt")
	card := a.card(thread, "echo never")
	// The status line changes once the bot has recorded where the card is;
	// stopping before that is TestRestartWhileTheCardIsBeingPosted.
	a.threadText(thread, "Waiting for approval")

	a.restart()
	final, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Session ended") && len(m.Buttons()) == 0
	})
	if err != nil {
		t.Fatalf("the card never settled showing the session ended: %v\nthread: %s", err, a.dump(thread))
	}
	if !final.HasText("before anyone answered") {
		t.Errorf("the ended card should say nobody answered: %s", final.AllText())
	}
	a.noFile("never.txt")
	// Stopping aborts the turn: Claude is not asked to carry on (and run
	// tools that need no approval) while slackgate goes away.
	if n := len(a.model.Requests()); n != 1 {
		t.Errorf("the model was called %d times before the restart, want 1 (the turn must be aborted, not continued)", n)
	}

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "carry on"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "Picked up after the restart.")
	last := a.lastRequest()
	texts := strings.Join(last.UserTexts(), "\n")
	if !strings.Contains(texts, "write never.txt") || !strings.Contains(texts, "carry on") {
		t.Errorf("the resumed turn should carry the conversation before the restart; user texts %q", last.UserTexts())
	}
	a.noFile("never.txt")
}

// TestRestartWhileTheCardIsBeingPosted stops slackgate the moment the card
// shows up in Slack, before the bot has recorded where it is. The restarted
// bot must still settle that card rather than post a second one.
func TestRestartWhileTheCardIsBeingPosted(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo never > never.txt", "Never approved")))
	thread := a.mention("write never.txt")
	card := a.card(thread, "echo never")
	a.restart()

	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Session ended") && len(m.Buttons()) == 0
	}); err != nil {
		t.Fatalf("the card never settled showing the session ended: %v\nthread: %s", err, a.dump(thread))
	}
	a.threadText(thread, "Claude exited") // the old program's last event is shown, so every card is too
	cards := 0
	for _, m := range a.slack.Thread(general, thread) {
		// Pending, the card says "wants to run `echo never…"; settled, "did not run `echo never…".
		if m.FromBot() && m.HasText("run `echo never") {
			cards++
		}
	}
	if cards != 1 {
		t.Errorf("%d cards for one request, want 1:%s", cards, a.dump(thread))
	}
}

// TestBotAndWorkersAsSeparateProgramsOnRedis runs on one Redis server and
// on a 3-node Redis Cluster, where the store's keys spread over the nodes.
func TestBotAndWorkersAsSeparateProgramsOnRedis(t *testing.T) {
	t.Parallel()
	for _, be := range []backend{redisBackend, clusterBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Parallel()
			botAndWorkersAsSeparatePrograms(t, be)
		})
	}
}

func botAndWorkersAsSeparatePrograms(t *testing.T, be backend) {
	a := startApp(t, options{backend: be, command: "bot", approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo built > build.txt", "Build")),
		relaytest.Text("Built."),
		relaytest.Text("The build wrote build.txt."))
	// Each worker's CLI has a home of its own, as on two machines: the
	// second resumes the session from the transcript the first saved to
	// Redis.
	stopFirst := a.launch("worker-1", "worker", withWorkerID("worker-1"), "HOME="+t.TempDir())
	thread := a.mention("build it")
	card := a.card(thread, "echo built")
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got := a.file("build.txt"); got != "built\n" {
		t.Errorf("build.txt = %q, want the command's output", got)
	}
	a.settled(card.Ref(), "Approved")
	a.threadText(thread, "Built.")
	a.threadText(thread, "Done: reply in this thread") // the turn has ended

	a.launch("worker-2", "worker", withWorkerID("worker-2"), "HOME="+t.TempDir())
	stopFirst() // its idle claude stops with it; the session is released
	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "what did the build write?"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "The build wrote build.txt.")
	last := a.lastRequest()
	texts := strings.Join(last.UserTexts(), "\n")
	if !strings.Contains(texts, "build it") || !strings.Contains(texts, "what did the build write?") {
		t.Errorf("the resumed turn should carry the first turn; user texts %q", last.UserTexts())
	}
	if tr, ok := last.ToolResult("toolu_1"); !ok || tr.IsError {
		t.Errorf("the resumed conversation lacks the approved command's result (found %v: %+v)", ok, tr)
	}
}
