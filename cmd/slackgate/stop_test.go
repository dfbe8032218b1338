package main

import (
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// statusWithStop waits for the thread's status message while it offers Stop.
func (a *app) statusWithStop(thread string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		if !m.FromBot() {
			return false
		}
		for _, b := range m.Buttons() {
			if b == "Stop" {
				return true
			}
		}
		return false
	})
	if err != nil {
		a.tb.Fatalf("no status message with a Stop button: %v\nthread: %s", err, a.dump(thread))
	}
	return m
}

// TestStopFromSlackCancelsThePendingCardAndTheSessionGoesOn presses the
// status message's Stop while Claude waits for approval: the pending card
// ends cancelled, the thread says who stopped Claude, the command never
// runs, and the next reply in the thread is answered by the same session.
func TestStopFromSlackCancelsThePendingCardAndTheSessionGoesOn(t *testing.T) {
	for _, c := range []struct {
		tr transport
		be backend
	}{{socketMode, boltBackend}, {httpMode, redisBackend}} {
		t.Run(string(c.tr)+"/"+string(c.be), func(t *testing.T) {
			t.Parallel()
			a := startApp(t, options{transport: c.tr, backend: c.be, approvers: lee},
				relaytest.ToolUse("toolu_1", "Bash", bash("echo oops > runaway.txt", "Run away")),
				relaytest.Text("Ready for more."))
			thread := a.mention("do something long")

			card := a.card(thread, "echo oops")
			status := a.statusWithStop(thread)
			// sam is neither an approver nor the starter: refused, nothing stops.
			a.click(sam, status.Ref(), "Stop")
			if _, err := a.slack.WaitEphemeral(a.ctx, sam, fakeslack.Text("Nothing was changed")); err != nil {
				t.Fatalf("a stranger's Stop was not refused: %v", err)
			}
			a.click(lee, status.Ref(), "Stop")

			final := a.settled(card.Ref(), "Cancelled")
			if !final.HasText("<@" + lee + ">") {
				t.Errorf("the cancelled card does not say who stopped Claude: %s", final.AllText())
			}
			a.threadText(thread, "Stopped by <@"+lee+">")
			a.threadText(thread, "error_during_execution")
			a.noFile("runaway.txt")
			if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
				return m.Ref() == status.Ref() && m.HasText("Stopped") && len(m.Buttons()) == 0
			}); err != nil {
				cur, _ := a.slack.Message(status.Ref())
				t.Errorf("the status line never said stopped without its Stop button: %v\nnow: %s", err, cur.AllText())
			}

			if _, err := a.slack.Reply(a.ctx, dana, general, thread, "are you still there?"); err != nil {
				t.Fatal(err)
			}
			a.threadText(thread, "Ready for more.")
		})
	}
}
