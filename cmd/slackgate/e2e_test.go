package main

// End-to-end tests of `slackgate run`: the whole program in-process, driven
// the way a workspace would drive it (a mention, a click, a modal), against
// bot/fakeslack (Slack's limits enforced), the real Claude Code CLI talking to
// relay/relaytest's scripted Messages API, and a real store (bbolt on disk or
// a private redis-server).

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

const (
	// The people in the fake workspace.
	dana = "U0DANA" // starts sessions
	lee  = "U0LEE"  // an approver
	kim  = "U0KIM"  // a second approver
	sam  = "U0SAM"  // not an approver
	// general is the channel sessions run in.
	general = "C0GENERAL"

	signingSecret = "e2e-signing-secret"
	e2eTimeout    = 90 * time.Second
)

type transport string

const (
	socketMode transport = "socket"
	httpMode   transport = "http"
)

type backend string

const (
	boltBackend  backend = "bolt"
	redisBackend backend = "redis"
	// clusterBackend is the 3-node Redis Cluster .ci/with-redis.sh starts
	// (REDIS_CLUSTER_URL).
	clusterBackend backend = "redis-cluster"
)

type options struct {
	transport transport
	backend   backend
	// approvers is APPROVERS; empty means "*" (anyone), which tests about
	// something else than who may decide rely on.
	approvers string
	// starters is STARTERS; empty means "*" (anyone): most tests start as
	// dana, who is no approver, and are about what follows a start.
	// defaultStarters leaves it unset, as a user who never set it.
	starters        string
	defaultStarters bool
	// configure changes the configuration further, as an operator's
	// settings would (nil: the test's defaults).
	configure func(*Config)
	// environ is more of the process's environment beside slackgate's
	// settings: what the CLI may inherit.
	environ []string
	// fromEnvironment makes the program read its configuration from its
	// environment, as main does, instead of being given the Config: for
	// a test about what that environment holds.
	fromEnvironment bool
	// command is the subcommand the app runs: "run" (the default),
	// "bot" for a test that starts workers beside it with launch, or
	// "none" for a test that starts every program itself.
	command string
	// timeout bounds the whole app (e2eTimeout when zero): load runs wait
	// out Slack's update budget, which is longer.
	timeout time.Duration
	// redisURL, with the redis backend, is the test's own redis-server
	// instead of REDIS_URL's.
	redisURL string
	// slackOpts configure the fake Slack.
	slackOpts []fakeslack.Option
	// hup and afterReload are the program's (a SIGHUP for this app only,
	// and how each reload of POLICY_FILE ended).
	hup         chan os.Signal
	afterReload func(error)
}

// app is one running `slackgate run` with its fake Slack and fake model.
type app struct {
	tb      testing.TB
	ctx     context.Context
	slack   *fakeslack.Fake
	model   *relaytest.Server
	workdir string
	logs    *syncBuffer
	// ops is the base URL of /healthz, /readyz and /metrics.
	ops string
	// cfg is the configuration the test built and environ the process's
	// environment beside it; prog runs with both, and launch and spawn
	// start more programs from them.
	cfg     Config
	environ []string
	prog    program
	// stop stops the app's program and waits for it (once; the cleanup
	// calls it too).
	stop func()
}

// startApp runs slackgate with the model scripted by steps and returns once
// Slack sees it connected (Socket Mode) or serving (HTTP).
func startApp(t testing.TB, o options, steps ...relaytest.Step) *app {
	t.Helper()
	o.transport, o.backend = cmp.Or(o.transport, socketMode), cmp.Or(o.backend, boltBackend)
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.timeout, e2eTimeout))
	t.Cleanup(cancel)
	a := &app{tb: t, ctx: ctx, workdir: t.TempDir(), logs: &syncBuffer{}}
	a.slack = fakeslack.New(t, o.slackOpts...)
	for id, name := range map[string]string{dana: "dana", lee: "lee", kim: "kim", sam: "sam"} {
		a.slack.AddUser(id, name)
	}
	a.slack.AddChannel(general, "general")
	a.slack.AddUserGroup("S0LEADS", lee, kim)
	a.model = relaytest.NewServer(t, steps...)
	// The CLI's environment is the process's minus Claude's variables; drop
	// slackgate's own too so only the test's configuration counts.
	for _, kv := range a.model.Env(t) {
		if name, _, _ := strings.Cut(kv, "="); !settingNames[name] {
			a.environ = append(a.environ, kv)
		}
	}
	a.environ = append(a.environ, o.environ...)
	a.cfg = a.testConfig(o)
	a.prog = program{environ: a.environ, config: &a.cfg, stdout: a.logs, stderr: a.logs, hup: o.hup, afterReload: o.afterReload}
	if o.fromEnvironment {
		a.prog.environ, a.prog.config = a.processEnv(nil), nil
	}
	if o.transport == httpMode {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		a.prog.listener = ln
		a.slack.UseHTTP("http://"+ln.Addr().String(), signingSecret)
	}
	if cmd := cmp.Or(o.command, "run"); cmd != "none" {
		a.run(cmd, cancel)
		a.waitServing(o.transport)
		return a
	}
	// The test runs the programs itself (as child processes).
	a.stop = cancel
	return a
}

// testConfig is the configuration of a user who set nothing, with what a
// test needs on top: the fake Slack and model, the real CLI, a working
// directory and store of the test's own, and o's choices.
func (a *app) testConfig(o options) Config {
	t := a.tb
	t.Helper()
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SlackBotToken, cfg.SlackAPIURL = fakeslack.BotToken, a.slack.APIURL()
	cfg.ClaudeBin, cfg.WorkDir = relaytest.CLI(t), a.workdir
	cfg.Approvers = cmp.Or(o.approvers, "*")
	if !o.defaultStarters {
		cfg.Starters = cmp.Or(o.starters, "*")
	}
	// A name of the test's own: tests share REDIS_URL.
	cfg.WorkerID = "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	// Logs a failing test shows; a port of its own for every program
	// launch and spawn start beside the app.
	cfg.LogLevel, cfg.LogFormat, cfg.HealthAddr = "debug", "console", "127.0.0.1:0"
	switch o.backend {
	case boltBackend:
		cfg.DataDir = t.TempDir()
	case redisBackend:
		cfg.RedisURL = o.redisURL
		if cfg.RedisURL == "" {
			cfg.RedisURL = redistest.URL(t)
		}
	case clusterBackend:
		cfg.RedisURL = redistest.ClusterURL(t)
	}
	if cfg.RedisURL != "" {
		cfg.RedisKeyPrefix = testPrefix("e2e")
	}
	if o.command != "" && o.command != "run" {
		// Split mode: bots and workers launched beside them share one pair,
		// as an operator gives them keygen's two lines. `slackgate run`
		// makes its own.
		cfg.DecisionSigningKey, cfg.DecisionVerifyKey = testKeys.sign, testKeys.verify
	}
	switch o.transport {
	case socketMode:
		cfg.SlackAppToken = fakeslack.AppToken
	case httpMode:
		cfg.SlackSigningSecret = signingSecret
	}
	// Claude runs as whoever runs the tests, often root in a container,
	// which production refuses without CLAUDE_USER: here the machine is
	// Claude's alone. Tests of CLAUDE_USER run Claude as another user.
	cfg.ClaudeAsRoot = os.Geteuid() == 0
	if o.configure != nil {
		o.configure(&cfg)
	}
	return cfg
}

// run runs the app's program as cmd until the test ends or a.stop is
// called; cancel ends the app's context after it stopped.
func (a *app) run(cmd string, cancel context.CancelFunc) {
	t := a.tb
	t.Helper()
	p := a.prog // the health listener is this program's alone, not launch's
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.healthListener = health
	a.ops = "http://" + health.Addr().String()
	pctx, pcancel := context.WithCancel(a.ctx)
	done := make(chan error, 1)
	go func() { done <- p.run(pctx, []string{cmd}) }()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			pcancel()
			if err := <-done; err != nil {
				t.Errorf("slackgate %s returned %v", cmd, err)
			}
		})
	}
	t.Cleanup(func() {
		a.stop()
		cancel()
		if t.Failed() {
			t.Logf("slackgate logs:\n%s", a.logs.String())
		}
	})
}

// waitServing returns once Slack sees the app connected (Socket Mode) or
// serving (HTTP).
func (a *app) waitServing(tr transport) {
	a.tb.Helper()
	switch tr {
	case socketMode:
		if err := a.slack.WaitConnected(a.ctx); err != nil {
			a.tb.Fatalf("slackgate never connected over Socket Mode: %v", err)
		}
	case httpMode:
		// Slack verifies the URL of an app that runs, within 3 s; this
		// one serves once its start checks pass (the CLI asked for its
		// credential among them: seconds on a loaded machine). The ops
		// listener is bound already, so /healthz waits in its backlog
		// until then.
		req, err := http.NewRequestWithContext(a.ctx, http.MethodGet, a.ops+"/healthz", nil)
		if err != nil {
			a.tb.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			a.tb.Fatalf("slackgate never served /healthz: %v", err)
		}
		_ = resp.Body.Close()
		if err := a.slack.VerifyURL(a.ctx); err != nil {
			a.tb.Fatalf("slackgate did not answer url_verification: %v", err)
		}
	}
}

// processEnv is the environment of a slackgate process started beside the
// app (a child process reads its configuration there, as in production):
// the app's environment, its configuration changed by configure (nil: as
// is), and env.
func (a *app) processEnv(configure func(*Config), env ...string) []string {
	cfg := a.cfg
	if configure != nil {
		configure(&cfg)
	}
	return slices.Concat(a.environ, cfg.environ(), env)
}

// launch starts another slackgate program in this process beside the
// app's: the app's configuration changed by configure (nil: as is) and
// its environment plus env, running cmd, until the test ends or the
// returned stop is called (stop waits for it to return). Its logs go to
// their own buffer, shown when the test fails.
func (a *app) launch(name, cmd string, configure func(*Config), env ...string) (stop func()) {
	a.tb.Helper()
	t := a.tb
	p := a.prog
	if p.listener != nil && cmd != "worker" {
		t.Fatalf("launch %s: HTTP mode serves on the app's one listener; launch bots in Socket Mode only", name)
	}
	cfg := a.cfg
	if configure != nil {
		configure(&cfg)
	}
	p.listener, p.config = nil, &cfg
	p.environ = slices.Concat(a.environ, env)
	if a.prog.config == nil { // the app reads its environment: so does this one
		p.environ, p.config = a.processEnv(configure, env...), nil
	}
	logs := &syncBuffer{}
	p.stdout, p.stderr = logs, logs
	ctx, cancel := context.WithCancel(a.ctx)
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, []string{cmd}) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s (slackgate %s) returned %v", name, cmd, err)
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s (slackgate %s) logs:\n%s", name, cmd, logs.String())
		}
	})
	return stop
}

// withWorkerID names a worker launched or spawned beside the app.
func withWorkerID(id string) func(*Config) { return func(c *Config) { c.WorkerID = id } }

// restart stops the app's program and starts a new one on the same
// configuration (DATA_DIR, WORKER_ID, the same fake Slack and model), the
// way a redeploy or a crash-and-restart would, and returns once the new
// one is connected over Socket Mode.
func (a *app) restart() {
	a.tb.Helper()
	a.stop()
	// The old connection died with its program; make the fake forget it
	// now so WaitConnected can only see the new one.
	a.slack.DropConnections()
	a.stop = a.launch("restarted", "run", nil)
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		a.tb.Fatalf("the restarted slackgate never connected: %v", err)
	}
}

// redisStore opens a client of the app's Redis store, for a test to look at
// what the programs left there or to write into it as an attacker who
// reached it would (without a bot's key); the test's cleanup closes it.
func (a *app) redisStore() store.Store {
	a.tb.Helper()
	st, err := redisstore.New(a.ctx, a.cfg.RedisURL, redisstore.WithPrefix(a.cfg.RedisKeyPrefix))
	if err != nil {
		a.tb.Fatal(err)
	}
	a.tb.Cleanup(func() { _ = st.Close() })
	return st
}

// mention starts a session: dana mentions the bot in #general.
func (a *app) mention(text string) (thread string) {
	a.tb.Helper()
	ts, err := a.slack.Mention(a.ctx, dana, general, text)
	if err != nil {
		a.tb.Fatalf("mention: %v", err)
	}
	return ts
}

// card waits for a bot message in the thread that contains text.
func (a *app) card(thread, text string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text) && len(m.Buttons()) > 0
	})
	if err != nil {
		a.tb.Fatalf("no card with %q in the thread: %v\nthread: %s", text, err, a.dump(thread))
	}
	return m
}

// settled waits until the card at ref shows text (its final state) and has
// no buttons left.
func (a *app) settled(ref fakeslack.MessageRef, text string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == ref && m.HasText(text) && len(m.Buttons()) == 0
	})
	if err != nil {
		cur, _ := a.slack.Message(ref)
		a.tb.Fatalf("card never settled showing %q: %v\ncard now: %s", text, err, cur.AllText())
	}
	return m
}

// threadText waits until some bot message in the thread contains text.
func (a *app) threadText(thread, text string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text)
	})
	if err != nil {
		a.tb.Fatalf("nothing in the thread says %q: %v\nthread: %s", text, err, a.dump(thread))
	}
	return m
}

func (a *app) click(user string, ref fakeslack.MessageRef, label string) {
	a.tb.Helper()
	if err := a.slack.Click(a.ctx, user, ref, label); err != nil {
		a.tb.Fatalf("%s clicking %q: %v", user, label, err)
	}
}

func (a *app) toolResult(id string) relaytest.ToolResult {
	a.tb.Helper()
	tr, err := a.model.WaitToolResult(a.ctx, id)
	if err != nil {
		a.tb.Fatalf("the model never got a result for %s: %v", id, err)
	}
	return tr
}

func (a *app) dump(thread string) string {
	var b strings.Builder
	for _, m := range a.slack.Thread(general, thread) {
		fmt.Fprintf(&b, "\n--- %s (bot=%v, buttons=%q)\n%s", m.TS, m.FromBot(), m.Buttons(), m.AllText())
	}
	return b.String()
}

func (a *app) file(name string) string {
	a.tb.Helper()
	b, err := os.ReadFile(filepath.Join(a.workdir, name))
	if err != nil {
		a.tb.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

func (a *app) noFile(name string) {
	a.tb.Helper()
	if _, err := os.Stat(filepath.Join(a.workdir, name)); !os.IsNotExist(err) {
		a.tb.Fatalf("%s exists (err %v); the command must not have run", name, err)
	}
}

func bash(command, description string) map[string]any {
	return map[string]any{"command": command, "description": description}
}

// testPrefix is a Redis key prefix no other test uses: subtests started
// together can read the same nanosecond from the clock, and two tests
// sharing a prefix see each other's sessions.
func testPrefix(kind string) string { return kind + "-" + rand.Text()[:12] }

// syncBuffer collects the program's logs from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestApproveRunsTheCommandAndTheCardNamesTheApprover is the product's core
// path on both transports and both stores.
func TestApproveRunsTheCommandAndTheCardNamesTheApprover(t *testing.T) {
	for _, tr := range []transport{socketMode, httpMode} {
		for _, be := range []backend{boltBackend, redisBackend} {
			t.Run(string(tr)+"/"+string(be), func(t *testing.T) {
				t.Parallel()
				a := startApp(t, options{transport: tr, backend: be, approvers: lee},
					relaytest.ToolUse("toolu_1", "Bash", bash("echo shipped > deploy.txt", "Deploy")),
					relaytest.Text("Deployed."))
				thread := a.mention("please deploy")

				card := a.card(thread, "echo shipped")
				if !card.HasText("<@" + dana + ">") {
					t.Errorf("card text does not mention the session's starter: %q", card.Text)
				}
				a.click(lee, card.Ref(), "Approve")

				if res := a.toolResult("toolu_1"); res.IsError {
					t.Fatalf("the model got an error result: %q", res.Content)
				}
				if got := a.file("deploy.txt"); got != "shipped\n" {
					t.Errorf("deploy.txt = %q, want the command's output", got)
				}
				final := a.settled(card.Ref(), "Approved")
				if !final.HasText("<@" + lee + ">") {
					t.Errorf("the settled card does not name the approver: %s", final.AllText())
				}
				a.threadText(thread, "Deployed.")
			})
		}
	}
}

// cardIn is card for any channel: it waits for a bot message with buttons
// in the thread (channel, thread) that contains text.
func (a *app) cardIn(channel, thread, text string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitThread(a.ctx, channel, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text) && len(m.Buttons()) > 0
	})
	if err != nil {
		a.tb.Fatalf("no card with %q in %s/%s: %v", text, channel, thread, err)
	}
	return m
}

// lastRequest is the newest main call the model got.
func (a *app) lastRequest() relaytest.Request {
	a.tb.Helper()
	reqs := a.model.Requests()
	if len(reqs) == 0 {
		a.tb.Fatal("the model got no request")
	}
	return reqs[len(reqs)-1]
}

// view waits for the modal the app opened for user.
func (a *app) view(user string) fakeslack.View {
	a.tb.Helper()
	v, err := a.slack.WaitView(a.ctx, user)
	if err != nil {
		a.tb.Fatalf("no modal opened for %s: %v", user, err)
	}
	return v
}
