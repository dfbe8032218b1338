package main

// The fault suite: slackgate's bot and worker run as real child processes
// (one binary, built once, with -race under -race), on a redis-server of
// each test's own that writes an fsynced append-only file, against
// bot/fakeslack and the real Claude Code CLI on relay/relaytest's scripted
// model, both in the test process. Each test breaks one thing at one moment
// (SIGKILL; SIGSTOP then SIGKILL for "just before"; Redis killed; Slack's
// connection dropped; a Web API call held, failed or its answer lost) and
// then checks the same promises: no decision lost, none applied twice (the
// approved command appends a line to a file: one line), no second card,
// every card ends in a final state, and the next reply is answered.
//
//	CLAUDE_BIN=$(make -s claude-code) SLACKGATE_REQUIRE_INTEGRATION=1 go test -race -run TestFault ./cmd/slackgate
//
// Each fault, what happens, and the test that pins it:
//
//   - Worker (and its Claude) SIGKILLed while a card waits: the worker
//     started again under its WORKER_ID ends the request ("the slackgate
//     worker restarted"), says Claude was stopped, and the next reply
//     resumes; the command never runs. TestFaultWorkerKilledWithACardPending.
//   - Worker SIGKILLed after a person decided, before Claude got the
//     answer: the card shows the decision; the restarted worker says an
//     answer given in the last moments may not have reached Claude; the
//     command runs at most once. TestFaultWorkerKilledWhileTheDecisionIsBeingWritten.
//   - Bot SIGKILLed with the card's post in flight, and Slack posts it: the
//     first click adopts the card, decides, and shows the outcome on it; no
//     second card. TestFaultBotKilledWhileACardIsBeingPosted.
//   - `slackgate run` SIGKILLed there, Slack posting the card: the
//     restarted process ends the request, finds the card in the thread
//     and shows the end on it; no card keeps live buttons (embedded store
//     and Redis). TestFaultRunKilledAfterSlackTookTheCard.
//   - The same, and Slack never got it: the next bot's reconciler posts the
//     card once the dead bot's claim lapses, within 90 s (a 60 s claim and
//     a pass every 30 s). TestFaultCardPostNeverAnswered/killed_before_Slack_had_the_card.
//   - Bot SIGKILLed while a click is on its way to it: nothing is decided
//     and the card keeps its buttons (Slack tells the person the app did
//     not respond); the same click on the restarted bot decides it, once.
//     TestFaultBotKilledWhileAClickIsInFlight.
//   - Bot SIGKILLed between the click and the card's update: the decision
//     stands and the command runs once; a settled event is acknowledged only
//     once its edit is in Slack, so the next bot makes the edit.
//     TestFaultBotKilledBetweenClickAndCardUpdate.
//   - Redis SIGKILLed and restarted while a card waits: the append-only file
//     keeps the request; bot and worker reconnect; the click decides it.
//     TestFaultRedisRestartedWithACardPending.
//   - Redis down during a click: the person is told the answer could not be
//     recorded and to try again; the card keeps its buttons; the same click
//     decides once Redis is back. TestFaultRedisDownDuringAClick.
//   - Redis down during the card's post: Slack shows the card but the store
//     cannot record where; the first click once Redis is back adopts it.
//     TestFaultRedisDownDuringAPost.
//   - Socket Mode connection dropped: the bot reconnects; the click decides.
//     TestFaultSocketModeDropped.
//   - Web API 5xx on posts or edits: retried with backoff (0.5 s doubling,
//     8 attempts); one card, settled. TestFaultSlackWebAPIErrors/503_on_posts
//     and /502_on_edits.
//   - A post or edit Slack carried out whose answer is lost: before a card is
//     posted again the bot reads the thread (conversations.replies) for its
//     card and records it instead; an edit is simply sent again.
//     TestFaultSlackWebAPIErrors/the_card_posted_and_its_answer_lost and
//     /the_outcome_edited_and_its_answer_lost.
//   - SIGTERM to a worker with a card pending: it ends the request
//     ("slackgate stopped before anyone answered"), stops Claude, releases
//     the session and exits 0; the next worker resumes the session.
//     TestFaultSIGTERMWorkerEndsItsRequestsAndExits.
//   - SIGTERM to a full worker with a session queued behind its running one:
//     it claims nothing more; the queued session waits for another worker.
//     TestStoppingWorkerLeavesTheQueuedSessionForOthers (relay).
//   - SIGTERM to a bot with a card's post in flight: it takes no new
//     events, finishes the post, records the card and exits 0.
//     TestFaultSIGTERMBotFinishesTheCardInFlight.
//   - SIGTERM to a bot while Slack does not answer the card's post: the call
//     gives up after 15 s and the bot exits 0; when Slack posts the card
//     after all, the next bot's reconciler finds it in the thread (no second
//     card). TestFaultCardPostNeverAnswered/SIGTERM_while_Slack_hangs,_then_Slack_posts_it.
//   - SIGTERM to `slackgate run` with a card pending: both of the above in
//     one process. TestFaultSIGTERMRunEndsItsRequestsAndExits.
//
// Stopping is bounded, and each SIGTERM test asserts its bound
// (faults_stop_test.go): a worker within 12 s (each Claude gets 5 s after
// its stdin closes, then SIGTERM and 5 s more before SIGKILL, then the
// requests are ended), a bot and `slackgate run` within 20 s (a Slack call
// in flight gets up to 15 s, then the store write recording it). At the
// signal a process logs "stopping: taking no new work, finishing what is in
// flight"; a second SIGTERM ends it at once.
//
// What the faults still cost:
//
//   - A card whose post never reached Slack because its bot died shows up
//     to 90 s late: the reconciler waits out the dead bot's claim, so that a
//     live replica still posting it is not doubled.
//   - An answer stored just before its worker died may never reach Claude;
//     the card still shows the decision and the thread notice says so.
//   - A bot killed after it acknowledged a click but before it stored the
//     decision leaves the person without an ephemeral; a second click
//     decides.
//   - An outcome edit still waiting for Slack's update budget after every
//     redelivery of its event (five, about 15 s) is lost if its bot then
//     dies: the card keeps its buttons until the next click, which says who
//     decided and refreshes it.
//   - Posts other than cards whose answer is lost are sent again and may
//     show twice.
//   - A worker killed before Claude Code wrote its first turn to its session
//     file leaves a session nothing can resume: the next reply says so and a
//     new mention starts afresh. The kill tests wait for that write, so that
//     they test the fault they name.
//   - A worker killed while an approved command runs (not in the suite): the
//     command may have run, or half of it; Claude resumes without its result
//     and may ask again, which is a new card.
//   - The two TestFaultCardPostNeverAnswered cases wait out the dead bot's
//     claim, set to its least (CARD_CLAIM_TIMEOUT=20s) with a pass every
//     2 s so that they take about 30 s each; every other fault test takes
//     seconds.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// build is a slackgate binary the tests run, built on first use.
type build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

var (
	// built is the binary the fault tests run (with -race when the tests
	// run with it).
	built build
	// builtStatic is built as deploy/Dockerfile builds it (CGO_ENABLED=0):
	// what runs with capabilities.
	builtStatic build
	// builtCgo links cgo, as a plain `go build` on a machine with a C
	// compiler does.
	builtCgo build
)

// get builds cmd/slackgate once, with env added to the go command's, and
// returns its path.
func (b *build) get(t testing.TB, env []string, args ...string) string {
	t.Helper()
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "slackgate-faults-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "slackgate")
		cmd := exec.Command("go", append(append([]string{"build", "-o", b.path}, args...), ".")...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("building slackgate: %v", b.err)
	}
	return b.path
}

// slackgateBinary builds cmd/slackgate once per test binary (with -race
// when the tests run with it) and returns its path.
func slackgateBinary(t testing.TB) string {
	t.Helper()
	var args []string
	if raceBuild {
		args = append(args, "-race")
	}
	return built.get(t, nil, args...)
}

// removeBuiltBinary deletes the binaries once the tests are done (TestMain).
func removeBuiltBinary() {
	for _, b := range []*build{&built, &builtStatic, &builtCgo} {
		if b.dir != "" {
			_ = os.RemoveAll(b.dir)
		}
	}
}

// child is one slackgate program running as a process of its own, in its
// own process group (a worker's Claude processes with it, as in a
// container).
type child struct {
	tb     testing.TB
	name   string
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{} // closed once the process has been waited for
	err    error         // cmd.Wait's result, once exited is closed
}

// spawn starts `slackgate command` as a child process with the app's
// configuration and environment (see processEnv). The test's cleanup
// kills it if it still runs and shows its logs when the test failed.
func (a *app) spawn(name, command string) *child {
	a.tb.Helper()
	cmd := exec.Command(slackgateBinary(a.tb), command)
	cmd.Env = a.processEnv(nil)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return a.start(name, cmd)
}

// start runs cmd (a slackgate program, in a process group of its own) as
// a child: its output is its logs, and the test's cleanup kills it and
// what it started if it still runs and shows its logs when the test
// failed.
func (a *app) start(name string, cmd *exec.Cmd) *child {
	a.tb.Helper()
	c := &child{tb: a.tb, name: name, cmd: cmd, logs: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = c.logs, c.logs
	if err := c.cmd.Start(); err != nil {
		a.tb.Fatalf("start %s: %v", name, err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	a.tb.Cleanup(func() {
		c.signalGroup(syscall.SIGKILL)
		<-c.exited
		if a.tb.Failed() {
			a.tb.Logf("%s (%s) logs:\n%s", name, strings.Join(cmd.Args, " "), c.logs.String())
		}
	})
	return c
}

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// signalGroup signals the child and everything it started.
func (c *child) signalGroup(sig syscall.Signal) {
	if c.running() {
		_ = syscall.Kill(-c.cmd.Process.Pid, sig)
	}
}

// kill SIGKILLs the child and what it started, and waits for it to die.
func (c *child) kill() {
	c.tb.Helper()
	c.signalGroup(syscall.SIGKILL)
	<-c.exited
}

// freeze SIGSTOPs the child and what it started: it keeps its sockets and
// pipes but does nothing until it is killed, the moment just before a
// crash.
func (c *child) freeze() { c.signalGroup(syscall.SIGSTOP) }

// term sends the child SIGTERM, as an orchestrator stopping it does, and
// returns how long it took to exit and its error (nil: exit status 0). It
// fails the test when the child is still running after bound.
func (c *child) term(bound time.Duration) (time.Duration, error) {
	c.tb.Helper()
	start := time.Now()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-c.exited:
		return time.Since(start), c.err
	case <-timer.C:
		c.tb.Fatalf("%s still runs %s after SIGTERM", c.name, bound)
		return 0, nil
	}
}

// faultApp is the fault tests' stage: the fake Slack, the scripted model,
// a redis-server of the test's own, and the env the bot and worker
// processes get; no program runs until the test spawns it.
type faultApp struct {
	*app
	redis *redistest.Server
}

// startFaults sets the stage: o (its timeout and configuration) with the
// test's own Redis, APPROVERS=lee and no program. The fake Slack tolerates
// deliveries that were never acknowledged: a bot killed while an event or
// a click is on its way cannot acknowledge it, which is the fault itself;
// what the person then sees is what each test checks.
func startFaults(t *testing.T, o options, steps ...relaytest.Step) *faultApp {
	t.Helper()
	srv := redistest.Start(t)
	o.backend, o.redisURL, o.command, o.approvers = redisBackend, srv.URL(), "none", lee
	o.slackOpts = append(o.slackOpts, fakeslack.AllowDeliveryFailures())
	a := startApp(t, o, steps...)
	return &faultApp{app: a, redis: srv}
}

// bot starts a bot process and waits until Slack sees it connected.
func (a *faultApp) bot(name string) *child {
	a.tb.Helper()
	c := a.spawn(name, "bot")
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		a.tb.Fatalf("%s never connected over Socket Mode: %v\nlogs:\n%s", name, err, c.logs.String())
	}
	return c
}

// killBot SIGKILLs a bot and makes the fake Slack forget its connection at
// once (Slack notices a dead socket only later), so WaitConnected waits for
// the next bot.
func (a *faultApp) killBot(c *child) {
	a.tb.Helper()
	c.kill()
	a.slack.DropConnections()
}

// worker starts a worker process under the app's WORKER_ID: a restarted
// worker keeps its name, as the deploy manifests do.
func (a *faultApp) worker(name string) *child {
	a.tb.Helper()
	return a.spawn(name, "worker")
}

// cardsFor returns the bot's messages in the thread that are cards for
// the command cmd: pending ("wants to run `cmd…") or settled ("ran `cmd…",
// "did not run `cmd…").
func (a *faultApp) cardsFor(thread, cmd string) []fakeslack.Message {
	var cards []fakeslack.Message
	for _, m := range a.slack.Thread(general, thread) {
		if m.FromBot() && (m.HasText("run `"+cmd) || m.HasText("ran `"+cmd)) {
			cards = append(cards, m)
		}
	}
	return cards
}

// oneFinalCard checks the promises about cards: exactly one card for cmd
// in the thread, and it shows final (no buttons left).
func (a *faultApp) oneFinalCard(thread, cmd string) fakeslack.Message {
	a.tb.Helper()
	cards := a.cardsFor(thread, cmd)
	if len(cards) != 1 {
		a.tb.Fatalf("%d cards for `%s`, want exactly 1:%s", len(cards), cmd, a.dump(thread))
	}
	if b := cards[0].Buttons(); len(b) > 0 {
		a.tb.Fatalf("the card for `%s` still has buttons %q, want a final state:\n%s", cmd, b, cards[0].AllText())
	}
	return cards[0]
}

// ranTimes is how many times the command `echo ran >> name` ran.
func (a *faultApp) ranTimes(name string) int {
	b, err := os.ReadFile(filepath.Join(a.workdir, name))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		a.tb.Fatal(err)
	}
	return strings.Count(string(b), "ran\n")
}

// carriesOn replies in the thread and waits for Claude's answer, after a
// fault that ended the turn: the session resumes.
func (a *faultApp) carriesOn(thread, answer string) {
	a.tb.Helper()
	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "carry on"); err != nil {
		a.tb.Fatal(err)
	}
	a.threadText(thread, answer)
}

// stillHere is Claude's answer to the reply every fault test ends with.
const stillHere = "Still here after the fault."

// keptPromises checks what every fault test promises once the fault is
// over: exactly one card for cmd, in a final state; the approved command
// ran wantRuns times (never twice for one approval); and the session goes
// on: a reply in the thread is answered.
func (a *faultApp) keptPromises(thread, cmd string, wantRuns int) {
	a.tb.Helper()
	a.oneFinalCard(thread, cmd)
	if n := a.ranTimes(ranFile); n != wantRuns {
		a.tb.Errorf("the command ran %d times, want %d", n, wantRuns)
	}
	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "still there?"); err != nil {
		a.tb.Fatal(err)
	}
	a.threadText(thread, stillHere)
}

// waitLog waits until the child has logged text: for a moment inside it
// that nothing outside shows. The logs have no change notification, so it
// polls them.
func (c *child) waitLog(text string) {
	c.tb.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.NewTimer(e2eTimeout)
	defer timeout.Stop()
	for !strings.Contains(c.logs.String(), text) {
		select {
		case <-tick.C:
		case <-c.exited:
			c.tb.Fatalf("%s exited before logging %q", c.name, text)
		case <-timeout.C:
			c.tb.Fatalf("%s never logged %q", c.name, text)
		}
	}
}

// recorded waits until Claude Code has written the tool call toolUseID to
// its session file (under the model's HOME). The CLI writes that file
// asynchronously; a worker killed before it did leaves a session nobody
// can resume (the thread says so), which is not the fault under test.
// Nothing announces the write, so it polls the files.
func (a *faultApp) recorded(toolUseID string) {
	a.tb.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		files, _ := filepath.Glob(filepath.Join(a.model.Home(), ".claude", "projects", "*", "*.jsonl"))
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), toolUseID) && strings.Contains(string(b), a.workdir) {
				return
			}
		}
		select {
		case <-tick.C:
		case <-a.ctx.Done():
			a.tb.Fatalf("Claude Code never wrote %s to a session file under %s", toolUseID, a.model.Home())
		}
	}
}

// mentionHoldingTheCard starts a session ("record a run") and returns once
// its card's chat.postMessage is held in flight at the fake Slack.
func (a *faultApp) mentionHoldingTheCard() (thread string, held *fakeslack.Held) {
	a.tb.Helper()
	held = a.slack.Hold("chat.postMessage", isCardPost)
	thread = a.mention("record a run")
	if _, err := held.Wait(a.ctx); err != nil {
		a.tb.Fatal(err)
	}
	return thread, held
}

// startWithACard starts a bot and a worker and a session ("record a run")
// whose model asks to run ranCmd and, once it ran, says "Approved and
// done."; it returns the bot once the card shows and is recorded (the
// status line says the session waits for approval).
func startWithACard(t *testing.T) (a *faultApp, b *child, thread string, card fakeslack.Message) {
	t.Helper()
	a = startFaults(t, options{}, ranSteps(relaytest.Text("Approved and done."))...)
	b = a.bot("bot")
	a.worker("worker")
	thread = a.mention("record a run")
	card = a.card(thread, "echo ran")
	a.threadText(thread, "Waiting for approval")
	return a, b, thread, card
}

// approvedAndDone approves card and checks the promises kept: the card
// says so, the command ran once, and Claude finished its turn.
func (a *faultApp) approvedAndDone(thread string, card fakeslack.Message) {
	a.tb.Helper()
	a.click(lee, card.Ref(), "Approve")
	a.settled(card.Ref(), "Approved")
	a.threadText(thread, "Approved and done.")
	a.keptPromises(thread, "echo ran", 1)
}
