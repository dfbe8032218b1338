package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// TestFaultRedisRestartedWithACardPending: Redis is SIGKILLed and started
// again (from its append-only file) while a card waits. The click after
// the restart decides it; the command runs once and the session goes on.
func TestFaultRedisRestartedWithACardPending(t *testing.T) {
	t.Parallel()
	a, _, thread, card := startWithACard(t)

	a.redis.Kill()
	a.redis.Restart()
	a.approvedAndDone(thread, card)
}

// TestFaultRedisDownDuringAClick: a click while Redis is down is not
// recorded, and the person is told so and asked to try again; the card
// keeps its buttons. Once Redis is back the same click decides it.
func TestFaultRedisDownDuringAClick(t *testing.T) {
	t.Parallel()
	a, _, thread, card := startWithACard(t)

	a.redis.Kill()
	a.click(lee, card.Ref(), "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, lee, fakeslack.Text("could not record your answer")); err != nil {
		t.Fatalf("the person was not told the click was not recorded: %v", err)
	}
	if now, _ := a.slack.Message(card.Ref()); len(now.Buttons()) == 0 {
		t.Fatalf("the card lost its buttons though nothing was decided: %s", now.AllText())
	}
	a.redis.Restart()
	a.approvedAndDone(thread, card)
}

// TestFaultRedisDownDuringAPost: Redis dies while the card's post is in
// flight, so the bot cannot record where Slack put it. The card is still
// the one card, and a click on it (once Redis is back) decides it and
// shows the outcome.
func TestFaultRedisDownDuringAPost(t *testing.T) {
	t.Parallel()
	a := startFaults(t, options{}, ranSteps(relaytest.Text("Approved and done."))...)
	b := a.bot("bot")
	a.worker("worker")
	thread, held := a.mentionHoldingTheCard()
	a.redis.Kill()
	held.Release()
	card := a.card(thread, "echo ran")
	b.waitLog("set card")
	a.redis.Restart()

	a.approvedAndDone(thread, card)
}

// TestFaultSocketModeDropped: Slack's Socket Mode connection drops without
// warning while a card waits. The bot reconnects and the click decides it.
func TestFaultSocketModeDropped(t *testing.T) {
	t.Parallel()
	a, _, thread, card := startWithACard(t)

	before := a.slack.Connections()
	a.slack.DropConnections()
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatalf("the bot never reconnected: %v", err)
	}
	if a.slack.Connections() <= before {
		t.Fatalf("connections accepted: %d before the drop, %d after; want a new one", before, a.slack.Connections())
	}
	a.approvedAndDone(thread, card)
}

// TestFaultSlackWebAPIErrors: Slack answers 5xx, or carries a post out and
// the answer is lost (what a timeout after Slack acted looks like to the
// bot). Every write is retried; the card is posted once and settles.
func TestFaultSlackWebAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(f *fakeslack.Fake)
	}{
		{"503 on posts", func(f *fakeslack.Fake) { f.FailStatus("chat.postMessage", 2, http.StatusServiceUnavailable) }},
		{"502 on edits", func(f *fakeslack.Fake) { f.FailStatus("chat.update", 2, http.StatusBadGateway) }},
		{"502 on the click's response_url, then on edits", func(f *fakeslack.Fake) {
			f.FailStatus(fakeslack.ResponseURLMethod, 1, http.StatusBadGateway)
			f.FailStatus("chat.update", 2, http.StatusBadGateway)
		}},
		{"the card posted and its answer lost", func(f *fakeslack.Fake) { f.LoseAnswer("chat.postMessage", isCardPost) }},
		{"the outcome edited and its answer lost", func(f *fakeslack.Fake) {
			f.LoseAnswer("chat.update", func(c fakeslack.Call) bool { return strings.Contains(c.Params.Get("blocks"), "Approved") })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startFaults(t, options{}, ranSteps(relaytest.Text("Approved and done."))...)
			a.bot("bot")
			a.worker("worker")
			tc.fault(a.slack)
			thread := a.mention("record a run")
			card := a.card(thread, "echo ran")
			// The bot has dealt with the failed post: the status line
			// moves on once the card is recorded.
			a.threadText(thread, "Waiting for approval")
			a.click(lee, card.Ref(), "Approve")
			a.settled(card.Ref(), "Approved")
			a.threadText(thread, "Approved and done.")
			a.keptPromises(thread, "echo ran", 1)
		})
	}
}
