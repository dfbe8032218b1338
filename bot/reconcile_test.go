package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

const lostCardThread = "1700000300.000001"

// seedAcknowledgedRequest stores a session and a pending request whose
// creation event a bot that died afterwards has acknowledged: the event
// path will never show it again, as after a crash inside handOff.
func seedAcknowledgedRequest(t testing.TB, st store.Store, requestID string) {
	ctx := testCtx(t)
	old := time.Now().Add(-time.Minute)
	s := store.Session{ID: "sess-" + requestID, Thread: store.MessageRef{Channel: "C1", TS: lostCardThread}, WorkDir: testWorkDir,
		StartedBy: "U1", State: store.SessionRunning, CreatedAt: old, UpdatedAt: old}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	r := store.Request{ID: requestID, SessionID: s.ID, CLIRequestID: "cli-" + requestID, Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
	}, CreatedAt: old}
	if err := st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	// The marker comes after the request in the log: once the dead bot
	// sees it, the request's event is acknowledged.
	if _, err := st.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: s.ID, Text: "last words of the old bot"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	err := st.Consume(cctx, consumerGroup, "bot-dead", func(_ context.Context, e store.Event) error {
		if e.Type == store.EventAssistantText {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the dead bot never saw its events")
	}
}

func countCards(h *harness, channel, thread string) int {
	n := 0
	for _, m := range h.fake.Thread(channel, thread) {
		if m.FromBot() && hasButton(m, "Approve") {
			n++
		}
	}
	return n
}

func TestPendingRequestWhoseCardWasLostGetsItWhenTheBotStarts(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{seed: func(tb testing.TB, st store.Store) {
		seedAcknowledgedRequest(tb, st, "req-lost")
	}})
	if _, err := h.fake.WaitThread(testCtx(t), "C1", lostCardThread, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, "Approve")
	}); err != nil {
		t.Fatalf("no card for the pending request: %v", err)
	}
	// The reconciler brings the session's status line up to date once,
	// counting from the list it read.
	if _, err := h.fake.WaitThread(testCtx(t), "C1", lostCardThread, fakeslack.All(fakeslack.Message.FromBot, fakeslack.Text("Waiting for approval (1)"))); err != nil {
		t.Fatalf("the status line does not say one request waits: %v", err)
	}
}

// startSecondBot runs another replica on h's store and Slack.
func startSecondBot(t *testing.T, h *harness, afterReconcile func(), tune func(*Config)) {
	t.Helper()
	cfg := Config{BotToken: fakeslack.BotToken, AppToken: fakeslack.AppToken, APIURL: h.fake.APIURL(),
		WorkDir: testWorkDir, ConsumerName: "bot-test-2", Approvers: People{Anyone: true}, SigningKey: testSigningKey}
	if tune != nil {
		tune(&cfg)
	}
	b, err := New(cfg, h.st, zerolog.New(zerolog.NewTestWriter(t)).With().Str("bot", "2").Logger())
	if err != nil {
		t.Fatal(err)
	}
	b.afterReconcile = afterReconcile
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("second bot: Run returned %v after cancel, want nil", err)
		}
	})
}

func TestTwoBotsReconcilingAtOncePostOneCard(t *testing.T) {
	var passes sync.WaitGroup
	passes.Add(2)
	once := func() func() { o := sync.OnceFunc(passes.Done); return o }
	h := newHarness(t, transportSocket, harnessOpts{
		seed:   func(tb testing.TB, st store.Store) { seedAcknowledgedRequest(tb, st, "req-twice") },
		before: func(b *Bot) { b.afterReconcile = once() },
	})
	startSecondBot(t, h, once(), nil)
	passes.Wait() // both bots looked at the pending request and claimed or left it
	_, err := h.fake.WaitThread(testCtx(t), "C1", lostCardThread, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, "Approve")
	})
	if err != nil {
		t.Fatalf("no card for the pending request: %v", err)
	}
	if n := countCards(h, "C1", lostCardThread); n != 1 {
		t.Errorf("%d cards for one request, want 1", n)
	}
}

// TestCardLostInACrashAfterItsEventWasAcknowledgedIsPostedByTheNextBot:
// the card waits in the outbox (Slack said 429), the event is acknowledged
// after handOff, and the bot stops before the card goes out. The next bot
// posts it once the dead bot's claim lapses.
func TestCardLostInACrashAfterItsEventWasAcknowledgedIsPostedByTheNextBot(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.CardClaimTTL = time.Second }})
	h.fake.AddChannel("C2", "random")
	ctx := testCtx(t)
	s := h.newSession(t, "sess-crash")
	h.fake.RateLimit("chat.postMessage", 1, 30*time.Second)
	old := time.Now().Add(-time.Minute) // the reconciler leaves young requests to the event path
	r := store.Request{ID: "req-crash", SessionID: s.ID, CLIRequestID: "cli-crash", Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
	}, CreatedAt: old}
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitCall(ctx, func(c fakeslack.Call) bool {
		return c.Method == "chat.postMessage" && c.Status == http.StatusTooManyRequests
	}); err != nil {
		t.Fatal(err)
	}
	// An event of another channel shown means the request's event was
	// acknowledged: the consumer has moved on.
	h.consumerMovedOn(t)
	h.stop()
	if n := countCards(h, "C1", s.Thread.TS); n != 0 {
		t.Fatalf("%d cards before the restart; the test needs the card lost", n)
	}

	startSecondBot(t, h, nil, func(c *Config) { c.ReconcileInterval = 100 * time.Millisecond })
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, "Approve")
	}); err != nil {
		t.Fatalf("the lost card was never posted: %v", err)
	}
	if n := countCards(h, "C1", s.Thread.TS); n != 1 {
		t.Errorf("%d cards for one request, want 1", n)
	}
}

// consumerMovedOn returns once an event of another session, in channel C2,
// is in Slack: the consumer has gone past the events published before it.
func (h *harness) consumerMovedOn(t *testing.T) {
	t.Helper()
	ctx := testCtx(t)
	other := store.Session{ID: "sess-other", Thread: store.MessageRef{Channel: "C2", TS: "1700000400.000001"}, WorkDir: testWorkDir,
		StartedBy: "U1", State: store.SessionRunning}
	if err := h.st.CreateSession(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: other.ID, Text: "the consumer moved on"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, "C2", other.Thread.TS, fakeslack.Text("the consumer moved on")); err != nil {
		t.Fatal(err)
	}
}
