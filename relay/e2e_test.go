package relay_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
	"github.com/slackgate/slackgate/store/storetest"
)

// e2eTimeout bounds one end-to-end test; every wait inside is a blocking
// call on the store or the fake API, never a sleep.
const e2eTimeout = 90 * time.Second

// botKey stands for the bots' decision signing key; every harness's worker
// verifies with its public half.
var botKey = ed25519.NewKeyFromSeed([]byte("relay e2e tests: the bot's seed!"))

// harness runs a real Worker over a real bolt store, driving the real CLI
// against relaytest's scripted Messages API.
type harness struct {
	tb     testing.TB
	ctx    context.Context
	srv    *relaytest.Server
	st     store.Store
	worker *relay.Worker
	clock  *storetest.Clock
	cfg    relay.Config
	events chan store.Event
	seen   []store.Event
	used   map[int]bool // indexes into seen that waitEventOf returned
	dir    string       // the session's working directory
	sessID string
	// stopWorker stops the worker as a shutdown does and waits for it.
	stopWorker func()
}

type option func(*relay.Config)

// openBolt is the default store of the harness: bbolt in a temp dir.
func openBolt(t testing.TB) store.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the worker starts, so it runs after the worker
	// stopped; a second Close is harmless.
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// openRedis uses the private redis of .ci/with-redis.sh (REDIS_URL), under
// a key prefix of its own so parallel tests do not meet.
func openRedis(t testing.TB) store.Store {
	t.Helper()
	st, err := redisstore.New(context.Background(), redistest.URL(t), redisstore.WithPrefix("relaytest:"+uuid.NewString()[:8]+":"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// onEachBackend runs test in parallel against bbolt and redis, the two
// stores a worker meets in production.
func onEachBackend(t *testing.T, test func(*testing.T, func(testing.TB) store.Store)) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) store.Store{"bolt": openBolt, "redis": openRedis} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, open)
		})
	}
}

// newHarness starts a worker on bbolt; bin "" means the real CLI (relaytest.CLI).
func newHarness(t testing.TB, bin string, steps []relaytest.Step, opts ...option) *harness {
	t.Helper()
	return newHarnessOn(t, openBolt, bin, steps, opts...)
}

func newHarnessOn(t testing.TB, open func(testing.TB) store.Store, bin string, steps []relaytest.Step, opts ...option) *harness {
	t.Helper()
	st := open(t)
	return newHarnessWith(t, st, storetest.NewClock(time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)), bin, steps, opts...)
}

// livenessTimers is how many timers of the fake clock a running worker
// always holds: its heartbeat's.
const livenessTimers = 1

// newHarnessWith starts a worker on st with clock, for a test that shares
// the clock with the store.
func newHarnessWith(t testing.TB, st store.Store, clock *storetest.Clock, bin string, steps []relaytest.Step, opts ...option) *harness {
	t.Helper()
	if bin == "" {
		bin = relaytest.CLI(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	srv := relaytest.NewServer(t, steps...)
	dir := t.TempDir()
	cfg := relay.Config{
		ClaudeBin: bin, Env: srv.Env(t),
		WorkerID: "worker-" + uuid.NewString()[:8], Clock: clock, MaxSessions: 2,
		IdleTimeout: time.Hour, StopGrace: 5 * time.Second, KillGrace: 2 * time.Second,
		VerifyKey: botKey.Public().(ed25519.PublicKey), AllowedDirs: []string{dir},
	}
	for _, o := range opts {
		o(&cfg)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	if _, bench := t.(*testing.B); bench {
		log = zerolog.Nop() // a benchmark's log would be kept in memory and timed
	}
	w, err := relay.NewWorker(cfg, st, log)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{tb: t, ctx: ctx, srv: srv, st: st, worker: w, clock: clock, cfg: cfg, events: make(chan store.Event, 1000), dir: dir}
	// The consumer outlives the worker, so a test that stops its worker
	// still sees what another worker on the store publishes.
	g, gctx := errgroup.WithContext(ctx)
	consumeCtx, stopConsumer := context.WithCancel(gctx)
	g.Go(func() error {
		return st.Consume(consumeCtx, "test", "c1", func(_ context.Context, e store.Event) error {
			h.events <- e
			return nil
		})
	})
	h.consumerReady()
	runCtx, stop := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(runCtx) }()
	var stopOnce sync.Once
	h.stopWorker = func() {
		stopOnce.Do(func() {
			stop()
			if err := <-workerDone; err != nil {
				t.Errorf("worker: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		h.stopWorker()
		stopConsumer()
		if err := g.Wait(); err != nil {
			t.Errorf("consumer: %v", err)
		}
		cancel()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	})
	return h
}

// consumerReady returns once the test's consumer group exists: Consume only
// delivers events published after that, so the worker starts afterwards.
// It publishes markers until one comes back (each try bounded by a timer,
// since a marker published before the group existed is never delivered).
func (h *harness) consumerReady() {
	h.tb.Helper()
	for i := 0; ; i++ {
		marker := fmt.Sprintf("ready-%d", i)
		if _, err := h.st.Publish(h.ctx, store.Event{Type: store.EventError, SessionID: "harness", Text: marker, At: time.Now()}); err != nil {
			h.tb.Fatal(err)
		}
		try := time.NewTimer(200 * time.Millisecond)
	wait:
		for {
			select {
			case e := <-h.events:
				if e.Text == marker {
					try.Stop()
					return
				}
			case <-try.C:
				break wait
			case <-h.ctx.Done():
				h.tb.Fatal("the test's event consumer never started")
			}
		}
	}
}

// startSession creates a session and queues its first prompt.
func (h *harness) startSession(prompt string) string {
	h.tb.Helper()
	return h.startSessionMode(prompt, "")
}

func (h *harness) startSessionMode(prompt, mode string) string {
	h.tb.Helper()
	id := uuid.NewString()
	h.createSession(store.Session{ID: id, Thread: store.MessageRef{Channel: "C1", TS: id}, WorkDir: h.dir,
		StartedBy: "U1", PermissionMode: mode, State: store.SessionQueued, CreatedAt: time.Now(), UpdatedAt: time.Now()}, botKey)
	h.sessID = id
	h.send(prompt)
	return id
}

// createSession plays the bot that starts a session: it signs s with key
// (nil: leaves it unsigned) and stores it.
func (h *harness) createSession(s store.Session, key ed25519.PrivateKey) {
	h.tb.Helper()
	if key != nil {
		if err := store.SignSession(key, &s); err != nil {
			h.tb.Fatal(err)
		}
	}
	if err := h.st.CreateSession(h.ctx, s); err != nil {
		h.tb.Fatal(err)
	}
}

func (h *harness) send(text string) {
	h.tb.Helper()
	h.queue(store.Input{SessionID: h.sessID, Text: text, User: "U1"}, botKey)
}

// queue plays the bot that took a message (or a stop): it gives in an id
// and a time, signs it with key (nil: leaves it unsigned) and queues it.
func (h *harness) queue(in store.Input, key ed25519.PrivateKey) store.Input {
	h.tb.Helper()
	if in.ID == "" {
		in.ID = uuid.NewString()
	}
	if in.At.IsZero() {
		in.At = time.Now()
	}
	if key != nil {
		if err := store.SignInput(key, &in); err != nil {
			h.tb.Fatal(err)
		}
	}
	if _, err := h.st.Enqueue(h.ctx, in); err != nil {
		h.tb.Fatal(err)
	}
	return in
}

// waitEvent returns the next event of the session matching match.
func (h *harness) waitEvent(what string, match func(store.Event) bool) store.Event {
	h.tb.Helper()
	for {
		select {
		case e := <-h.events:
			h.seen = append(h.seen, e)
			if e.SessionID == h.sessID && match(e) {
				return e
			}
		case <-h.ctx.Done():
			h.tb.Fatalf("timed out waiting for %s; events so far: %s", what, h.describe())
		}
	}
}

func (h *harness) describe() string {
	var sb strings.Builder
	for _, e := range h.seen {
		fmt.Fprintf(&sb, "\n  %s %s %q", e.Type, e.Tool, e.Text)
		if e.Result != nil {
			fmt.Fprintf(&sb, " %+v", *e.Result)
		}
		if e.Exit != nil {
			fmt.Fprintf(&sb, " %+v", *e.Exit)
		}
	}
	return sb.String()
}

func ofType(t store.EventType) func(store.Event) bool {
	return func(e store.Event) bool { return e.Type == t }
}

// waitRequest returns the next request Claude asked for.
func (h *harness) waitRequest() store.Request {
	h.tb.Helper()
	e := h.waitEvent("a request", ofType(store.EventRequestCreated))
	r, err := h.st.GetRequest(h.ctx, e.RequestID)
	if err != nil {
		h.tb.Fatal(err)
	}
	return r
}

// decide plays the person and the bot that took their click: it signs d
// over the request as the store has it, with the key whose public half the
// worker verifies, and decides it.
func (h *harness) decide(id string, d store.Decision) {
	h.tb.Helper()
	if d.At.IsZero() {
		d.At = time.Now()
	}
	r, err := h.st.GetRequest(h.ctx, id)
	if err != nil {
		h.tb.Fatalf("decide: %v", err)
	}
	if err := store.SignDecision(botKey, r, &d); err != nil {
		h.tb.Fatalf("decide: %v", err)
	}
	if _, err := h.st.Decide(h.ctx, id, d); err != nil {
		h.tb.Fatalf("decide: %v", err)
	}
}

func (h *harness) waitResult() *store.Result {
	h.tb.Helper()
	return h.waitEvent("the turn's result", ofType(store.EventResult)).Result
}

func (h *harness) toolResult(toolUseID string) relaytest.ToolResult {
	h.tb.Helper()
	tr, err := h.srv.WaitToolResult(h.ctx, toolUseID)
	if err != nil {
		h.tb.Fatalf("tool result %s never reached the model: %v; events: %s", toolUseID, err, h.describe())
	}
	return tr
}

func (h *harness) exists(name string) bool {
	_, err := os.Stat(filepath.Join(h.dir, name))
	return err == nil
}

func bash(id, command string) relaytest.Reply {
	return relaytest.ToolUse(id, "Bash", map[string]any{"command": command, "description": "run " + command})
}

var alice = store.Decision{By: "U1", ByName: "Alice"}

func with(d store.Decision, f func(*store.Decision)) store.Decision {
	f(&d)
	return d
}

func TestE2EApprovedBashCommandRuns(t *testing.T) {
	onEachBackend(t, testApprovedBashCommandRuns)
}

func testApprovedBashCommandRuns(t *testing.T, open func(testing.TB) store.Store) {
	h := newHarnessOn(t, open, "", []relaytest.Step{bash("toolu_1", "touch approved.txt"), relaytest.Text("all done")})
	id := h.startSession("make the file")
	h.waitEvent("session started", ofType(store.EventSessionStarted))
	r := h.waitRequest()
	if r.SessionID != id || r.Kind != store.KindTool || r.ToolName != "Bash" || r.ToolUseID != "toolu_1" || r.CLIRequestID == "" ||
		!strings.Contains(string(r.Input), "touch approved.txt") || r.CreatedAt.IsZero() || !r.Deadline.IsZero() {
		t.Errorf("request: %+v", r)
	}
	if h.exists("approved.txt") {
		t.Fatal("the command ran before approval")
	}
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	if tr := h.toolResult("toolu_1"); tr.IsError {
		t.Errorf("tool result is an error: %q", tr.Content)
	}
	res := h.waitResult()
	if res.Subtype != "success" || res.IsError || res.Text != "all done" || res.Turns < 2 {
		t.Errorf("result: %+v", res)
	}
	if !h.exists("approved.txt") {
		t.Error("approved.txt was not created")
	}
	var sawUse, sawResult, sawText bool
	for _, e := range h.seen {
		sawUse = sawUse || (e.Type == store.EventToolUse && e.Tool == "Bash" && strings.Contains(string(e.Input), "approved.txt"))
		sawResult = sawResult || (e.Type == store.EventToolResult && e.Tool == "Bash" && !e.IsError)
		sawText = sawText || (e.Type == store.EventAssistantText && e.Text == "all done")
	}
	if !sawUse || !sawResult || !sawText {
		t.Errorf("events (tool use %v, tool result %v, text %v): %s", sawUse, sawResult, sawText, h.describe())
	}
	s, err := h.st.GetSession(h.ctx, id)
	if err != nil || !s.Started || s.State != store.SessionRunning || s.Worker != h.cfg.WorkerID {
		t.Errorf("session: %+v (%v)", s, err)
	}
}

func TestE2EDeniedCommandDoesNotRunAndTheModelGetsTheReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		decision    store.Decision
		wantContent string
		wantSubtype string
	}{
		{"deny with a reason", with(alice, func(d *store.Decision) { d.Outcome, d.Message = store.OutcomeDeny, "use a different file" }),
			"use a different file", "success"},
		{"deny without a reason gets a default", with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeDeny }),
			"Denied by Alice.", "success"},
		{"deny with interrupt ends the turn", with(alice, func(d *store.Decision) { d.Outcome, d.Interrupt = store.OutcomeDeny, true }),
			"doesn't want to proceed", "error_during_execution"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch denied.txt"), relaytest.Text("ok, not doing it")})
			h.startSession("make the file")
			r := h.waitRequest()
			h.decide(r.ID, tt.decision)
			// The tool result as Claude Code recorded it (stdout), and, when
			// the turn goes on, as the model received it.
			e := h.waitEvent("tool result", ofType(store.EventToolResult))
			if !e.IsError || e.Tool != "Bash" || !strings.Contains(e.Text, tt.wantContent) {
				t.Errorf("tool result event %+v, want error containing %q", e, tt.wantContent)
			}
			if res := h.waitResult(); res.Subtype != tt.wantSubtype {
				t.Errorf("result %+v, want %s", res, tt.wantSubtype)
			}
			if tt.decision.Interrupt {
				// The turn ended: no further model call carries the result.
				if _, ok := h.srv.ToolResult("toolu_1"); ok {
					t.Error("the model was called again after deny+interrupt")
				}
			} else if tr := h.toolResult("toolu_1"); !tr.IsError || !strings.Contains(tr.Content, tt.wantContent) {
				t.Errorf("model got %+v, want error containing %q", tr, tt.wantContent)
			}
			if h.exists("denied.txt") {
				t.Error("the denied command ran")
			}
		})
	}
}

func TestE2EApprovedWithEditedInputRunsTheEdit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch original.txt"), relaytest.Text("done")})
	h.startSession("make the file")
	r := h.waitRequest()
	h.decide(r.ID, with(alice, func(d *store.Decision) {
		d.Outcome = store.OutcomeAllow
		d.UpdatedInput = json.RawMessage(`{"command":"touch edited.txt","description":"edited by Alice"}`)
	}))
	if tr := h.toolResult("toolu_1"); tr.IsError {
		t.Errorf("tool result: %+v", tr)
	}
	h.waitResult()
	if !h.exists("edited.txt") || h.exists("original.txt") {
		t.Errorf("edited.txt exists %v, original.txt exists %v", h.exists("edited.txt"), h.exists("original.txt"))
	}
}

func question(q, header string, multi bool, labels ...string) map[string]any {
	var opts []map[string]any
	for _, l := range labels {
		opts = append(opts, map[string]any{"label": l, "description": "about " + l})
	}
	return map[string]any{"question": q, "header": header, "options": opts, "multiSelect": multi}
}

func TestE2EAskUserQuestionAnswersReachTheModel(t *testing.T) {
	t.Parallel()
	db := question("Which database should we use?", "Database", false, "SQLite", "Postgres")
	features := question("Which features do you want?", "Features", true, "Auth", "Export", "Search")
	tests := []struct {
		name      string
		questions []map[string]any
		answers   map[string]string
		want      []string
	}{
		{"single select", []map[string]any{db}, map[string]string{"Which database should we use?": "SQLite"},
			[]string{`"Which database should we use?"="SQLite"`}},
		{"multi select", []map[string]any{features}, map[string]string{"Which features do you want?": "Auth, Export"},
			[]string{`"Which features do you want?"="Auth, Export"`}},
		{"two questions at once", []map[string]any{db, features},
			map[string]string{"Which database should we use?": "Postgres", "Which features do you want?": "Search"},
			[]string{`"Which database should we use?"="Postgres"`, `"Which features do you want?"="Search"`}},
		{"free text", []map[string]any{db}, map[string]string{"Which database should we use?": "MongoDB please, with replicas"},
			[]string{`"Which database should we use?"="MongoDB please, with replicas"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, "", []relaytest.Step{
				relaytest.ToolUse("toolu_q", "AskUserQuestion", map[string]any{"questions": tt.questions}),
				relaytest.Text("thanks")})
			h.startSession("ask me")
			r := h.waitRequest()
			if r.Kind != store.KindQuestion || r.ToolName != "AskUserQuestion" {
				t.Fatalf("request: %+v", r)
			}
			h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome, d.Answers = store.OutcomeAllow, tt.answers }))
			tr := h.toolResult("toolu_q")
			if tr.IsError {
				t.Fatalf("tool result: %+v", tr)
			}
			for _, w := range tt.want {
				if !strings.Contains(tr.Content, w) {
					t.Errorf("tool result %q lacks %s", tr.Content, w)
				}
			}
		})
	}
}

func TestE2ETwoConcurrentRequestsInOneTurnAreIndependent(t *testing.T) {
	t.Parallel()
	outside := t.TempDir() // reads outside the working directory ask first
	a, b := filepath.Join(outside, "a.txt"), filepath.Join(outside, "b.txt")
	for p, content := range map[string]string{a: "apple-content", b: "banana-content"} {
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, "", []relaytest.Step{
		relaytest.Reply{
			relaytest.ToolUseBlock("toolu_a", "Read", map[string]any{"file_path": a}),
			relaytest.ToolUseBlock("toolu_b", "Read", map[string]any{"file_path": b}),
		},
		relaytest.Text("read both"),
	})
	h.startSession("read the files")
	first, second := h.waitRequest(), h.waitRequest() // both pending at once
	reqs := map[string]store.Request{first.ToolUseID: first, second.ToolUseID: second}
	ra, rb := reqs["toolu_a"], reqs["toolu_b"]
	if ra.ID == "" || rb.ID == "" || ra.DecisionReasonType != "workingDir" {
		t.Fatalf("requests: %+v", reqs)
	}
	// Answer the second first: each request stands alone.
	h.decide(rb.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	h.decide(ra.ID, with(alice, func(d *store.Decision) { d.Outcome, d.Message = store.OutcomeDeny, "not that one" }))
	if tr := h.toolResult("toolu_b"); tr.IsError || !strings.Contains(tr.Content, "banana-content") {
		t.Errorf("b: %+v", tr)
	}
	if tr := h.toolResult("toolu_a"); !tr.IsError || !strings.Contains(tr.Content, "not that one") || strings.Contains(tr.Content, "apple") {
		t.Errorf("a: %+v", tr)
	}
	h.waitResult()
}

func TestE2EInterruptWhileARequestIsPendingCancelsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch never.txt"), relaytest.Text("unused")})
	id := h.startSession("make the file")
	r := h.waitRequest()
	h.interrupt("U2")
	d, err := h.st.WaitDecision(h.ctx, r.ID)
	if err != nil || d.Outcome != store.OutcomeCancelled || d.By != "U2" {
		t.Fatalf("decision %+v, %v; want cancelled by U2", d, err)
	}
	if res := h.waitResult(); res.Subtype != "error_during_execution" {
		t.Errorf("result: %+v", res)
	}
	// A late decision loses: the request is settled already.
	if _, err := h.st.Decide(h.ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()}); !errors.Is(err, store.ErrAlreadyDecided) {
		t.Errorf("late decide: %v", err)
	}
	if h.exists("never.txt") {
		t.Error("the command ran")
	}
	// The process stays usable.
	if err := h.worker.SetPermissionMode(h.ctx, id, "acceptEdits"); err != nil {
		t.Errorf("set mode after interrupt: %v", err)
	}
	if err := h.worker.SetPermissionMode(h.ctx, id, "yolo"); !errors.Is(err, relay.ErrBadMode) {
		t.Errorf("bad mode: %v", err)
	}
	// Between turns (even after the mode change's status line) the idle
	// timer runs and stops the process.
	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	if exit := h.waitEvent("idle exit", ofType(store.EventExit)).Exit; exit.Reason != "idle" || exit.Cause != store.ExitIdle || exit.Failed() {
		t.Errorf("exit: %+v", exit)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionIdle })
}

func TestE2EProcessKilledWhileARequestIsPendingEndsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch never.txt")})
	id := h.startSession("make the file")
	r := h.waitRequest()
	pid, err := h.worker.PID(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d, err := h.st.WaitDecision(h.ctx, r.ID)
	if err != nil || d.Outcome != store.OutcomeEnded || !strings.Contains(d.Message, "signal: killed") {
		t.Fatalf("decision %+v, %v; want ended with the reason", d, err)
	}
	exit := h.waitEvent("exit", ofType(store.EventExit)).Exit
	if exit.Code != 128+9 || exit.Reason != "signal: killed" || exit.Cause != store.ExitCrashed || !exit.Failed() {
		t.Errorf("exit: %+v", exit)
	}
	// The session ends failed and released, so a later message resumes it.
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionFailed && s.Worker == "" && s.Started })
}

func TestE2EDeadlinePassingDeniesWithTimeoutMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_1", "touch late.txt"), relaytest.Text("fine")},
		func(c *relay.Config) { c.RequestTimeout = 5 * time.Minute })
	h.startSession("make the file")
	r := h.waitRequest()
	if want := r.CreatedAt.Add(5 * time.Minute); !r.Deadline.Equal(want) {
		t.Errorf("deadline %v, want %v", r.Deadline, want)
	}
	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(5 * time.Minute)
	d, err := h.st.WaitDecision(h.ctx, r.ID)
	if err != nil || d.Outcome != store.OutcomeExpired {
		t.Fatalf("decision %+v, %v", d, err)
	}
	tr := h.toolResult("toolu_1")
	if !tr.IsError || !strings.Contains(tr.Content, "Nobody answered") || !strings.Contains(tr.Content, "5m0s") {
		t.Errorf("tool result: %+v", tr)
	}
	// A person clicking after the deadline loses the race and learns who won.
	got, err := h.st.Decide(h.ctx, r.ID, with(alice, func(d *store.Decision) { d.Outcome, d.At = store.OutcomeAllow, time.Now() }))
	if !errors.Is(err, store.ErrAlreadyDecided) || got.Decision.Outcome != store.OutcomeExpired {
		t.Errorf("late decide: %+v, %v", got.Decision, err)
	}
	h.waitResult()
	if h.exists("late.txt") {
		t.Error("the expired command ran")
	}
}

func TestE2EFollowUpThenIdleStopThenResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{
		relaytest.Text("noted"), relaytest.Text("still here"), relaytest.Text("it was PINEAPPLE"),
	})
	id := h.startSession("remember the word PINEAPPLE")
	started := h.waitEvent("start", ofType(store.EventSessionStarted))
	if !strings.Contains(started.Text, "resume false") {
		t.Errorf("first start: %q", started.Text)
	}
	h.waitResult()
	// A follow-up goes to the same live process.
	h.send("are you there?")
	if res := h.waitResult(); res.Text != "still here" {
		t.Errorf("follow-up result: %+v", res)
	}
	// Idle timeout (injected clock): the process stops, the session is released idle.
	if err := h.clock.WaitTimers(h.ctx, livenessTimers+1); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)
	exit := h.waitEvent("idle exit", ofType(store.EventExit)).Exit
	if exit.Reason != "idle" || exit.Code != 0 {
		t.Errorf("exit: %+v", exit)
	}
	if starts := countType(h.seen, store.EventSessionStarted); starts != 1 {
		t.Errorf("%d process starts before the idle stop, want 1", starts)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionIdle && s.Worker == "" && s.Started })
	// A new message resumes the same Claude session.
	h.send("what was the word?")
	started = h.waitEvent("second start", ofType(store.EventSessionStarted))
	if !strings.Contains(started.Text, "resume true") {
		t.Errorf("second start: %q", started.Text)
	}
	if res := h.waitResult(); res.Text != "it was PINEAPPLE" || res.IsError {
		t.Errorf("resumed result: %+v", res)
	}
	reqs := h.srv.Requests()
	last := reqs[len(reqs)-1]
	texts := strings.Join(last.UserTexts(), "|")
	if !strings.Contains(texts, "remember the word PINEAPPLE") || last.LastUserText() != "what was the word?" {
		t.Errorf("the resumed model saw %q", texts)
	}
}

// checkSession asserts the session's state; the worker stores the final
// state before it publishes the exit or error event the test waited for.
func checkSession(t *testing.T, h *harness, id string, ok func(store.Session) bool) {
	t.Helper()
	s, err := h.st.GetSession(h.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !ok(s) {
		t.Errorf("session in state %+v", s)
	}
	owned, err := h.st.Owned(h.ctx, h.cfg.WorkerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range owned {
		if o == id && s.State != store.SessionRunning {
			t.Errorf("session %s still owned in state %s", id, s.State)
		}
	}
}

func countType(es []store.Event, typ store.EventType) int {
	n := 0
	for _, e := range es {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestE2EPermissionAcceptedForTheSessionIsNotAskedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{
		bash("toolu_1", "touch same.txt"), bash("toolu_2", "touch same.txt"), relaytest.Text("done twice"),
	})
	h.startSession("touch twice")
	r := h.waitRequest()
	if len(r.Suggestions) == 0 {
		t.Fatalf("no permission suggestions: %+v", r)
	}
	// "Always allow" for this session: localSettings would be ignored in an
	// untrusted workspace, so the suggestions go to the session.
	perms := make([]store.Suggestion, len(r.Suggestions))
	for i, s := range r.Suggestions {
		s.Destination = "session"
		perms[i] = s
	}
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome, d.Permissions = store.OutcomeAllow, perms }))
	if tr := h.toolResult("toolu_1"); tr.IsError {
		t.Fatalf("first: %+v", tr)
	}
	if tr := h.toolResult("toolu_2"); tr.IsError {
		t.Fatalf("second: %+v", tr)
	}
	h.waitResult()
	if n := countType(h.seen, store.EventRequestCreated); n != 1 {
		t.Errorf("%d requests, want 1 (the second command must not ask): %s", n, h.describe())
	}
}

func TestE2EMissingClaudeFailsTheSessionWithAClearError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, filepath.Join(t.TempDir(), "no-such-claude"), nil)
	id := h.startSession("hello")
	e := h.waitEvent("error", ofType(store.EventError))
	for _, want := range []string{"CLAUDE_BIN", "npm install -g @anthropic-ai/claude-code", "make claude-code"} {
		if !strings.Contains(e.Text, want) {
			t.Errorf("error %q lacks %q", e.Text, want)
		}
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionFailed && s.Worker == "" })
	// The worker goes on: another session is claimed and fails the same way.
	id2 := h.startSession("again")
	h.waitEvent("second error", ofType(store.EventError))
	checkSession(t, h, id2, func(s store.Session) bool { return s.State == store.SessionFailed })
}

func TestE2ERestartedWorkerEndsWhatItsPreviousLifeLeft(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := uuid.NewString()
	now := time.Now()
	if err := st.CreateSession(ctx, store.Session{ID: id, Thread: store.MessageRef{Channel: "C", TS: "1"}, State: store.SessionQueued, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Enqueue(ctx, store.Input{SessionID: id, Text: "hi", At: now}); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Claim(ctx, "w1"); err != nil || got != id {
		t.Fatalf("claim: %q %v", got, err)
	}
	if _, err := st.NextInput(ctx, id, "w1"); err != nil {
		t.Fatal(err)
	}
	req := store.Request{ID: uuid.NewString(), SessionID: id, CLIRequestID: "c", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: now}
	if err := st.CreateRequest(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The previous worker "w1" crashed here. A new life under the same name:
	w, err := relay.NewWorker(relay.Config{ClaudeBin: "claude-unused", WorkerID: "w1", VerifyKey: botKey.Public().(ed25519.PublicKey),
		AllowedDirs: []string{t.TempDir()}}, st, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() { defer wg.Done(); runErr = w.Run(runCtx) }()
	d, err := st.WaitDecision(ctx, req.ID)
	if err != nil || d.Outcome != store.OutcomeEnded || !strings.Contains(d.Message, "restarted") {
		t.Errorf("decision %+v, %v", d, err)
	}
	stop()
	wg.Wait()
	if runErr != nil {
		t.Errorf("Run: %v", runErr)
	}
	owned, err := st.Owned(ctx, "w1")
	if err != nil || len(owned) != 0 {
		t.Errorf("still owned: %v %v", owned, err)
	}
	s, err := st.GetSession(ctx, id)
	if err != nil || s.State != store.SessionIdle || s.Worker != "" {
		t.Errorf("session %+v %v", s, err)
	}
}

func TestE2EPlanApprovalThenStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{
		relaytest.WritePlan("toolu_w", "# Plan\n1. do X\n2. do Y\n"),
		relaytest.ToolUse("toolu_plan", "ExitPlanMode", map[string]any{}),
		relaytest.Text("planned"),
	})
	id := h.startSessionMode("plan it", "plan")
	r := h.waitRequest()
	if r.Kind != store.KindPlan || r.ToolName != "ExitPlanMode" || !strings.Contains(string(r.Input), "1. do X") {
		t.Fatalf("request: %+v", r)
	}
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	if tr := h.toolResult("toolu_plan"); tr.IsError || !strings.Contains(tr.Content, "approved") {
		t.Errorf("tool result: %+v", tr)
	}
	h.waitResult()
	if err := h.worker.StopSession(h.ctx, id); err != nil {
		t.Fatal(err)
	}
	exit := h.waitEvent("exit", ofType(store.EventExit)).Exit
	if exit.Reason != "stopped" || exit.Cause != store.ExitStopped || exit.Failed() {
		t.Errorf("exit: %+v", exit)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionIdle && s.Worker == "" })
	if _, err := h.worker.PID(id); !errors.Is(err, relay.ErrNoProcess) {
		t.Errorf("PID after stop: %v", err)
	}
}

// busyCLI is a stand-in claude that reads its input and never finishes a
// turn: its session stays busy until its stdin closes.
func busyCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nwhile read line; do :; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestWorkerClaimsOnlyWithinCapacity(t *testing.T) {
	t.Parallel()
	// Capacity is about processes, not about the CLI.
	h := newHarness(t, busyCLI(t), nil, func(c *relay.Config) { c.MaxSessions = 1 })
	a := h.startSession("first")
	h.waitEvent("first start", ofType(store.EventSessionStarted))
	b := h.startSession("second")
	// The worker is full, so b stays ready for anyone else to claim.
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	got, err := h.st.Claim(ctx, "other-worker")
	if err != nil || got != b {
		t.Fatalf("other worker claimed %q, %v; want %s (the full worker must not take it)", got, err, b)
	}
	if err := h.st.Release(h.ctx, b, "other-worker"); err != nil {
		t.Fatal(err)
	}
	// Once a's process is stopped the worker has room and takes b. b may
	// start before a's exit event is out, so each is looked for among all
	// the events, in either order.
	if err := h.worker.StopSession(h.ctx, a); err != nil {
		t.Fatal(err)
	}
	h.waitEventOf(a, "first exit", ofType(store.EventExit))
	h.waitEventOf(b, "second start", ofType(store.EventSessionStarted))
}

func TestWorkerCountsMalformedLinesAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	// A stand-in claude that prints garbage between valid lines.
	bin := filepath.Join(t.TempDir(), "claude")
	body := `#!/bin/sh
read line
echo 'this is not json'
echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"duration_ms":3,"result":"still fine","session_id":"s","total_cost_usd":0}'
while read line; do :; done
`
	if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, bin, nil)
	id := h.startSession("hello")
	if res := h.waitResult(); res.Text != "still fine" {
		t.Errorf("result: %+v", res)
	}
	if n := h.worker.MalformedLines(); n != 1 {
		t.Errorf("MalformedLines() = %d while running, want 1", n)
	}
	if err := h.worker.StopSession(h.ctx, id); err != nil {
		t.Fatal(err)
	}
	h.waitEvent("exit", ofType(store.EventExit))
	if n := h.worker.MalformedLines(); n != 1 {
		t.Errorf("MalformedLines() = %d after exit, want 1", n)
	}
}
