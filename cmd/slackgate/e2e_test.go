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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
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
	extraEnv        []string
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
}

// app is one running `slackgate run` with its fake Slack and fake model.
type app struct {
	t       testing.TB
	ctx     context.Context
	slack   *fakeslack.Fake
	model   *relaytest.Server
	workdir string
	logs    *syncBuffer
	// ops is the base URL of /healthz, /readyz and /metrics.
	ops string
	// prog is the program as configured, for launch to start more like it.
	prog program
	// stop stops the app's program and waits for it (once; the cleanup
	// calls it too).
	stop func()
}

// startApp runs slackgate with the model scripted by steps and returns once
// Slack sees it connected (Socket Mode) or serving (HTTP).
func startApp(t testing.TB, o options, steps ...relaytest.Step) *app {
	t.Helper()
	if o.transport == "" {
		o.transport = socketMode
	}
	if o.backend == "" {
		o.backend = boltBackend
	}
	claude := relaytest.CLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.timeout, e2eTimeout))

	a := &app{t: t, ctx: ctx, workdir: t.TempDir(), logs: &syncBuffer{}}
	a.slack = fakeslack.New(t, o.slackOpts...)
	for id, name := range map[string]string{dana: "dana", lee: "lee", kim: "kim", sam: "sam"} {
		a.slack.AddUser(id, name)
	}
	a.slack.AddChannel(general, "general")
	a.slack.AddUserGroup("S0LEADS", lee, kim)
	a.model = relaytest.NewServer(t, steps...)

	// The model's environment is the process's minus Claude's variables; drop
	// slackgate's own too so only what the test sets below counts.
	var env []string
	for _, kv := range a.model.Env(t) {
		if name, _, _ := strings.Cut(kv, "="); !slackgateVars[name] {
			env = append(env, kv)
		}
	}
	env = append(env,
		"SLACK_BOT_TOKEN="+fakeslack.BotToken,
		"SLACK_API_URL="+a.slack.APIURL(),
		"CLAUDE_BIN="+claude,
		"CLAUDE_WORKDIR="+a.workdir,
		"APPROVERS="+cmp.Or(o.approvers, "*"),
		"WORKER_ID=e2e-"+strings.ReplaceAll(t.Name(), "/", "-"),
		"LOG_LEVEL=debug",
		"LOG_FORMAT=console",
		"HEALTH_ADDR=127.0.0.1:0", // processes launch starts beside it get a port each
	)
	if !o.defaultStarters {
		env = append(env, "STARTERS="+cmp.Or(o.starters, "*"))
	}
	switch o.backend {
	case boltBackend:
		env = append(env, "DATA_DIR="+t.TempDir())
	case redisBackend:
		url := o.redisURL
		if url == "" {
			url = redistest.URL(t)
		}
		env = append(env, "REDIS_URL="+url, "REDIS_KEY_PREFIX="+testPrefix("e2e"))
	case clusterBackend:
		env = append(env, "REDIS_URL="+redistest.ClusterURL(t), "REDIS_KEY_PREFIX="+testPrefix("e2e"))
	}
	if o.command != "" && o.command != "run" {
		// Split mode: bots and workers launched beside them share one pair,
		// as an operator gives them keygen's two lines. `slackgate run`
		// makes its own.
		env = append(env, "DECISION_SIGNING_KEY="+testKeys.sign, "DECISION_VERIFY_KEY="+testKeys.verify)
	}
	p := program{environ: append(env, o.extraEnv...), stdout: a.logs, stderr: a.logs}
	switch o.transport {
	case socketMode:
		p.environ = append(p.environ, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	case httpMode:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.listener = ln
		p.environ = append(p.environ, "SLACK_SIGNING_SECRET="+signingSecret)
		a.slack.UseHTTP("http://"+ln.Addr().String(), signingSecret)
	}

	cmd := cmp.Or(o.command, "run")
	a.prog = p
	if cmd == "none" {
		// The test runs the programs itself (as child processes).
		a.stop = cancel
		t.Cleanup(cancel)
		return a
	}
	// Set after a.prog is copied: the listener is this process's alone.
	health, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.healthListener = health
	a.ops = "http://" + health.Addr().String()
	pctx, pcancel := context.WithCancel(ctx)
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

	switch o.transport {
	case socketMode:
		if err := a.slack.WaitConnected(ctx); err != nil {
			t.Fatalf("slackgate never connected over Socket Mode: %v", err)
		}
	case httpMode:
		if err := a.slack.VerifyURL(ctx); err != nil {
			t.Fatalf("slackgate did not answer url_verification: %v", err)
		}
	}
	return a
}

// mention starts a session: dana mentions the bot in #general.
func (a *app) mention(text string) (thread string) {
	a.t.Helper()
	ts, err := a.slack.Mention(a.ctx, dana, general, text)
	if err != nil {
		a.t.Fatalf("mention: %v", err)
	}
	return ts
}

// card waits for a bot message in the thread that contains text.
func (a *app) card(thread, text string) fakeslack.Message {
	a.t.Helper()
	m, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text) && len(m.Buttons()) > 0
	})
	if err != nil {
		a.t.Fatalf("no card with %q in the thread: %v\nthread: %s", text, err, a.dump(thread))
	}
	return m
}

// settled waits until the card at ref shows text (its final state) and has
// no buttons left.
func (a *app) settled(ref fakeslack.MessageRef, text string) fakeslack.Message {
	a.t.Helper()
	m, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == ref && m.HasText(text) && len(m.Buttons()) == 0
	})
	if err != nil {
		cur, _ := a.slack.Message(ref)
		a.t.Fatalf("card never settled showing %q: %v\ncard now: %s", text, err, cur.AllText())
	}
	return m
}

// threadText waits until some bot message in the thread contains text.
func (a *app) threadText(thread, text string) fakeslack.Message {
	a.t.Helper()
	m, err := a.slack.WaitThread(a.ctx, general, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text)
	})
	if err != nil {
		a.t.Fatalf("nothing in the thread says %q: %v\nthread: %s", text, err, a.dump(thread))
	}
	return m
}

func (a *app) click(user string, ref fakeslack.MessageRef, label string) {
	a.t.Helper()
	if err := a.slack.Click(a.ctx, user, ref, label); err != nil {
		a.t.Fatalf("%s clicking %q: %v", user, label, err)
	}
}

func (a *app) toolResult(id string) relaytest.ToolResult {
	a.t.Helper()
	tr, err := a.model.WaitToolResult(a.ctx, id)
	if err != nil {
		a.t.Fatalf("the model never got a result for %s: %v", id, err)
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
	a.t.Helper()
	b, err := os.ReadFile(filepath.Join(a.workdir, name))
	if err != nil {
		a.t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

func (a *app) noFile(name string) {
	a.t.Helper()
	if _, err := os.Stat(filepath.Join(a.workdir, name)); !os.IsNotExist(err) {
		a.t.Fatalf("%s exists (err %v); the command must not have run", name, err)
	}
}

func bash(command, description string) map[string]any {
	return map[string]any{"command": command, "description": description}
}

// slackgateVars are the variables loadConfig reads, derived from Config's tags.
var slackgateVars = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		m[t.Field(i).Tag.Get("env")] = true
	}
	return m
}()

// testPrefix is a Redis key prefix no other test uses: subtests started
// together can read the same nanosecond from the clock, and two tests
// sharing a prefix see each other's sessions.
func testPrefix(kind string) string { return kind + "-" + rand.Text()[:12] }

// syncBuffer collects the program's logs from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
