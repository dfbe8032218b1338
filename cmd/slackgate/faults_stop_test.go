package main

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// How long each process may take to end after SIGTERM (faults_test.go),
// from what it finishes first. A worker: its Claude processes, each given
// stdin's end, then SIGTERM, then SIGKILL (relay's StopGrace and
// KillGrace), and the store writes that end their requests. A bot: the
// Slack call in flight (outbox.CallTimeout, 15 s), the store write
// that records it, and a blocking store read that checks for the stop
// every second. The rest is the processes' own exit, with room for a
// loaded machine.
const (
	workerStopBound = relay.DefaultStopGrace + relay.DefaultKillGrace + 2*time.Second
	botStopBound    = 15*time.Second + time.Second + 4*time.Second
)

// pendingIn returns the pending requests of the session in thread, read
// straight from the test's Redis.
func (a *faultApp) pendingIn(thread string) []store.Request {
	a.tb.Helper()
	st := a.redisStore()
	s, err := st.SessionByThread(a.ctx, store.MessageRef{Channel: general, TS: thread})
	if err != nil {
		a.tb.Fatalf("the thread's session: %v", err)
	}
	rs, err := st.ListPending(a.ctx, s.ID)
	if err != nil {
		a.tb.Fatal(err)
	}
	return rs
}

// TestFaultSIGTERMWorkerEndsItsRequestsAndExits: SIGTERM to a worker with
// a card pending. It ends the request in its own words, stops Claude,
// releases the session and exits 0 within workerStopBound; the next worker
// resumes the session.
func TestFaultSIGTERMWorkerEndsItsRequestsAndExits(t *testing.T) {
	t.Parallel()
	a := startFaults(t, options{}, ranSteps(relaytest.Text("Resumed on the next worker."))...)
	a.bot("bot")
	w := a.worker("worker")
	thread := a.mention("record a run")
	card := a.card(thread, "echo ran")

	took, err := w.term(workerStopBound)
	if err != nil {
		t.Fatalf("the worker exited with %v after SIGTERM, want status 0\n%s", err, w.logs.String())
	}
	t.Logf("worker: SIGTERM → exit in %s (bound %s)", took.Round(time.Millisecond), workerStopBound)
	final := a.settled(card.Ref(), "Session ended")
	if !final.HasText("slackgate stopped") {
		t.Errorf("the ended card should say slackgate stopped: %s", final.AllText())
	}
	a.worker("worker, next")
	a.carriesOn(thread, "Resumed on the next worker.")
	a.keptPromises(thread, "echo ran", 0) // nobody approved it
}

// TestFaultSIGTERMBotFinishesTheCardInFlight: SIGTERM to a bot whose card
// post is in flight. The bot takes no new work, finishes the post, records
// where the card is, and exits 0 within botStopBound; the next bot settles
// that card, and there is one.
func TestFaultSIGTERMBotFinishesTheCardInFlight(t *testing.T) {
	t.Parallel()
	a := startFaults(t, options{}, ranSteps(relaytest.Text("Approved and done."))...)
	b := a.bot("bot")
	a.worker("worker")
	thread, held := a.mentionHoldingTheCard()
	done := make(chan struct{})
	var took time.Duration
	var err error
	go func() {
		defer close(done)
		took, err = b.term(botStopBound)
	}()
	b.waitLog("stopping: taking no new work")
	held.Release()
	<-done
	if err != nil {
		t.Fatalf("the bot exited with %v after SIGTERM, want status 0\n%s", err, b.logs.String())
	}
	t.Logf("bot: SIGTERM → exit in %s with a card post in flight (bound %s)", took.Round(time.Millisecond), botStopBound)
	rs := a.pendingIn(thread)
	if len(rs) != 1 || rs[0].Card.IsZero() {
		t.Fatalf("pending requests after the bot stopped: %+v; want the one, its card recorded", rs)
	}

	a.slack.DropConnections()
	a.bot("bot, next")
	card := a.card(thread, "echo ran")
	a.approvedAndDone(thread, card)
}

// TestFaultSIGTERMRunEndsItsRequestsAndExits: SIGTERM to `slackgate run`
// (bot and worker in one process) with a card pending: the card ends, the
// process exits 0 within the larger of the two bounds.
func TestFaultSIGTERMRunEndsItsRequestsAndExits(t *testing.T) {
	t.Parallel()
	a := startFaults(t, options{}, ranSteps(relaytest.Text("Resumed after the restart."))...)
	r := a.spawn("run", "run")
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatalf("slackgate run never connected: %v", err)
	}
	thread := a.mention("record a run")
	card := a.card(thread, "echo ran")
	a.threadText(thread, "Waiting for approval")

	bound := max(workerStopBound, botStopBound)
	took, err := r.term(bound)
	if err != nil {
		t.Fatalf("slackgate run exited with %v after SIGTERM, want status 0\n%s", err, r.logs.String())
	}
	t.Logf("run: SIGTERM → exit in %s (bound %s)", took.Round(time.Millisecond), bound)
	a.slack.DropConnections()
	a.spawn("run, next", "run")
	a.settled(card.Ref(), "Session ended")
	a.carriesOn(thread, "Resumed after the restart.")
	a.keptPromises(thread, "echo ran", 0)
}
