package main

import (
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// The command every fault test asks Claude to run: each run appends a line,
// so a decision applied twice shows as two.
const (
	ranCmd  = "echo ran >> ran.txt"
	ranFile = "ran.txt"
)

// ranSteps scripts the model: ask to run ranCmd, then after (the rest of
// the turn, or a resumed turn's answer), then stillHere for keptPromises.
func ranSteps(after ...relaytest.Step) []relaytest.Step {
	steps := append([]relaytest.Step{relaytest.ToolUse("toolu_1", "Bash", bash(ranCmd, "Record a run"))}, after...)
	return append(steps, relaytest.Text(stillHere))
}

// isCardPost matches the chat.postMessage of the card for ranCmd.
func isCardPost(c fakeslack.Call) bool {
	b := c.Params.Get("blocks")
	// The tool's progress line names the command too, and may reach Slack
	// first; only the card carries an Approve button.
	return strings.Contains(b, "echo ran") && strings.Contains(b, string(blocks.ActionApprove))
}

// startWithAResumableCard starts a bot, a worker and a session whose card
// for ranCmd shows, and returns the worker once the CLI has written the
// session's file, so a session it leaves can be resumed at all; after the
// command, the model says "Resumed after the crash.".
func startWithAResumableCard(t *testing.T) (a *faultApp, w *child, thread string, card fakeslack.Message) {
	t.Helper()
	a = startFaults(t, options{}, ranSteps(relaytest.Text("Resumed after the crash."))...)
	a.bot("bot")
	w = a.worker("worker")
	thread = a.mention("record a run")
	card = a.card(thread, "echo ran")
	a.recorded("toolu_1")
	return a, w, thread, card
}

// TestFaultWorkerKilledWithACardPending: the worker (and its Claude) dies
// while a card waits. The worker started again under its name ends the
// request, the card says so, nothing runs, and the next reply resumes the
// session.
func TestFaultWorkerKilledWithACardPending(t *testing.T) {
	t.Parallel()
	a, w, thread, card := startWithAResumableCard(t)

	w.kill()
	a.worker("worker, restarted")
	final := a.settled(card.Ref(), "Session ended")
	if !final.HasText("worker restarted") {
		t.Errorf("the ended card should say the worker restarted: %s", final.AllText())
	}
	a.threadText(thread, "worker restarted and stopped Claude")
	a.carriesOn(thread, "Resumed after the crash.")
	a.keptPromises(thread, "echo ran", 0) // nobody approved it
}

// TestFaultWorkerKilledWhileTheDecisionIsBeingWritten: the approval is
// stored, but the worker dies before it reaches Claude (frozen, then
// killed). The card keeps the person's decision, the command runs at most
// once, and the session goes on.
func TestFaultWorkerKilledWhileTheDecisionIsBeingWritten(t *testing.T) {
	t.Parallel()
	a, w, thread, card := startWithAResumableCard(t)

	w.freeze()
	a.click(lee, card.Ref(), "Approve")
	a.settled(card.Ref(), "Approved")
	w.kill()
	a.worker("worker, restarted")
	// The card says what was decided, not that it ran: the thread says
	// that Claude may not have got it.
	a.threadText(thread, "may not have reached Claude")
	a.carriesOn(thread, "Resumed after the crash.")
	// At most once; frozen before it read the answer, the worker never
	// passed it on, so here never.
	a.keptPromises(thread, "echo ran", 0)
}

// TestFaultBotKilledWhileACardIsBeingPosted: the bot dies with the card's
// chat.postMessage in flight, and Slack carries it out. The restarted bot
// must not post a second card, and the card must still settle.
func TestFaultBotKilledWhileACardIsBeingPosted(t *testing.T) {
	t.Parallel()
	a := startFaults(t, options{}, ranSteps(relaytest.Text("Approved and done."))...)
	b := a.bot("bot")
	a.worker("worker")
	thread, held := a.mentionHoldingTheCard()
	a.killBot(b)
	held.Release()
	card := a.card(thread, "echo ran")
	a.bot("bot, restarted")

	a.approvedAndDone(thread, card)
}

// TestFaultBotKilledWhileAClickIsInFlight: the click reaches a bot that
// dies before it handles it (frozen, then killed). Nothing is decided; the
// person clicks again on the restarted bot and the command runs once.
func TestFaultBotKilledWhileAClickIsInFlight(t *testing.T) {
	t.Parallel()
	a, b, thread, card := startWithACard(t)

	b.freeze()
	if err := a.slack.Click(a.ctx, lee, card.Ref(), "Approve"); err == nil {
		t.Fatal("a frozen bot acknowledged the click")
	}
	a.killBot(b)
	a.bot("bot, restarted")
	if now, _ := a.slack.Message(card.Ref()); len(now.Buttons()) == 0 {
		t.Fatalf("the card changed though no bot handled the click: %s", now.AllText())
	}
	a.approvedAndDone(thread, card)
}

// TestFaultBotKilledBetweenClickAndCardUpdate: the decision is stored and
// the bot dies with the card's outcome edit in flight, which never reaches
// Slack. The command runs once, and the restarted bot still shows the
// outcome on the card. The click's response_url fails first, so the
// outcome is the settled event's edit.
func TestFaultBotKilledBetweenClickAndCardUpdate(t *testing.T) {
	t.Parallel()
	a, b, thread, card := startWithACard(t)

	a.slack.FailNext(fakeslack.ResponseURLMethod, 1, "used_url")
	held := a.slack.Hold("chat.update", func(c fakeslack.Call) bool {
		return c.Params.Get("ts") == card.TS && strings.Contains(c.Params.Get("blocks"), "Approved")
	})
	a.click(lee, card.Ref(), "Approve")
	if _, err := held.Wait(a.ctx); err != nil {
		t.Fatal(err)
	}
	// The worst moment: the bot has left the edit to its outbox and gone
	// on to the next event.
	b.waitLog("the card's outcome is not in slack yet")
	a.killedWithTheOutcomeHeld(b, held, thread, card)
}

// killedWithTheOutcomeHeld kills b while Slack holds the write showing
// card's outcome, drops that write, and checks that the command ran once
// and a restarted bot shows the outcome.
func (a *faultApp) killedWithTheOutcomeHeld(b *child, held *fakeslack.Held, thread string, card fakeslack.Message) {
	a.killBot(b)
	held.Drop()
	a.toolResult("toolu_1")
	a.bot("bot, restarted")
	a.settled(card.Ref(), "Approved")
	a.threadText(thread, "Approved and done.")
	a.keptPromises(thread, "echo ran", 1)
}

// TestFaultBotKilledBetweenClickAndItsResponse: the decision is stored and
// the bot dies with the click's response_url call in flight, which never
// reaches Slack. The restarted bot's settled event waits out the click's
// grace, then edits the card itself.
func TestFaultBotKilledBetweenClickAndItsResponse(t *testing.T) {
	t.Parallel()
	a, b, thread, card := startWithACard(t)

	held := a.slack.Hold(fakeslack.ResponseURLMethod, nil)
	a.click(lee, card.Ref(), "Approve")
	if _, err := held.Wait(a.ctx); err != nil {
		t.Fatal(err)
	}
	a.killedWithTheOutcomeHeld(b, held, thread, card)
}

// The card-loss tests shorten how long a dead bot's claim stands and how
// often the reconciler looks (CARD_CLAIM_TIMEOUT, RECONCILE_INTERVAL) to
// their least and to 2 s: what they test is the claim lapsing and a pass
// then posting or recording the card, not the defaults' length, which
// would hold two of go test's slots for 90 s each. reconcileWait bounds
// how long the card takes to appear: the claim, a pass, and a minute for
// the Claude turn and the clicks.
const (
	testCardClaim     = minCardClaim
	testReconcileTick = 2 * time.Second
	reconcileWait     = testCardClaim + testReconcileTick + time.Minute
)

// TestFaultCardPostNeverAnswered: the bot stops with the card's post
// unanswered, and only the reconciler of the next bot can show the card.
// Killed before Slack had it: the reconciler posts it. Stopped (SIGTERM)
// while Slack hangs past the bot's call timeout, and Slack posts it
// afterwards: the bot still exits within botStopBound, and the reconciler
// finds the card in the thread and records it instead of posting another.
// These wait out the dead bot's claim, the suite's longest tests.
func TestFaultCardPostNeverAnswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(a *faultApp, b *child, held *fakeslack.Held)
	}{
		{"killed before Slack had the card", func(a *faultApp, b *child, held *fakeslack.Held) {
			a.killBot(b)
			held.Drop()
		}},
		{"SIGTERM while Slack hangs, then Slack posts it", func(a *faultApp, b *child, held *fakeslack.Held) {
			took, err := b.term(botStopBound)
			if err != nil {
				a.tb.Fatalf("the bot exited with %v after SIGTERM, want status 0", err)
			}
			a.tb.Logf("bot: SIGTERM → exit in %s with Slack not answering (bound %s)", took.Round(time.Millisecond), botStopBound)
			held.Release()
			a.slack.DropConnections()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startFaults(t, options{timeout: reconcileWait, configure: func(c *Config) {
				c.CardClaimTimeout, c.ReconcileInterval = testCardClaim, testReconcileTick
			}}, ranSteps(relaytest.Text("Approved and done."))...)
			b := a.bot("bot")
			a.worker("worker")
			held := a.slack.Hold("chat.postMessage", isCardPost)
			thread := a.mention("record a run")
			if _, err := held.Wait(a.ctx); err != nil {
				t.Fatal(err)
			}
			tc.stop(a, b, held)
			a.bot("bot, next")
			a.threadText(thread, "Waiting for approval") // the card is recorded
			card := a.card(thread, "echo ran")
			a.click(lee, card.Ref(), "Approve")
			a.settled(card.Ref(), "Approved")
			a.threadText(thread, "Approved and done.")
			a.keptPromises(thread, "echo ran", 1)
		})
	}
}

// TestFaultRunKilledAfterSlackTookTheCard: `slackgate run` (bot and
// worker in one process) dies after Slack took the card but before the
// store recorded where, so no record points at it. The restarted process
// ends the request, finds the card in the thread the way the reconciler
// finds a pending one's, and shows the end on it: no card is left with
// live buttons. On the embedded store and on Redis.
func TestFaultRunKilledAfterSlackTookTheCard(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Parallel()
			o := options{backend: be, command: "none", approvers: lee, slackOpts: []fakeslack.Option{fakeslack.AllowDeliveryFailures()}}
			if be == redisBackend {
				o.redisURL = redistest.Start(t).URL()
			}
			a := &faultApp{app: startApp(t, o, ranSteps(relaytest.Text("Resumed after the crash."))...)}
			r := a.spawn("run", "run")
			if err := a.slack.WaitConnected(a.ctx); err != nil {
				t.Fatalf("slackgate run never connected: %v", err)
			}
			thread, held := a.mentionHoldingTheCard()
			a.recorded("toolu_1")
			r.kill()
			a.slack.DropConnections()
			held.Release() // Slack shows the card; its answer reaches nobody
			card := a.card(thread, "echo ran")
			a.spawn("run, restarted", "run")
			final := a.settled(card.Ref(), "Session ended")
			if !final.HasText("worker restarted") {
				t.Errorf("the ended card should say the worker restarted: %s", final.AllText())
			}
			a.carriesOn(thread, "Resumed after the crash.")
			a.keptPromises(thread, "echo ran", 0)
		})
	}
}
