package bot

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

const (
	transportSocket = "socket mode"
	transportHTTP   = "http"
	testSecret      = "8f742231b10e8888abcd99yyyzzz85a5"
	testWorkDir     = "/srv/work"
	testDMWorkDir   = "/srv/dm"
)

var transports = []string{transportSocket, transportHTTP}

// harness is a Bot running in-process against fakeslack and a real bbolt
// store, in either transport.
type harness struct {
	fake  *fakeslack.Fake
	st    store.Store
	bot   *Bot
	base  string // HTTP mode: the bot's base URL
	clock *storetest.Clock
	stop  func() // stops the bot and waits for Run to return; idempotent
}

type harnessOpts struct {
	cfg      func(*Config)
	fake     []fakeslack.Option
	useClock bool // drive the bot with a fake clock
	// wrap, when set, is the store the bot sees, built around the real one
	// (h.st stays the real one), to inject faults.
	wrap func(store.Store) store.Store
	// seed, when set, runs on the store before the bot starts.
	seed func(testing.TB, store.Store)
	// before, when set, runs on the bot before it starts.
	before func(*Bot)
}

func newHarness(t testing.TB, transport string, o harnessOpts) *harness {
	t.Helper()
	h := &harness{}
	fakeOpts := o.fake
	if o.useClock {
		// Slack's budgets are kept on the bot's clock too, so a step the
		// test moves the clock for is not refused for real time's sake.
		h.clock = newFakeClock()
		fakeOpts = append([]fakeslack.Option{fakeslack.WithClock(h.clock)}, fakeOpts...)
	}
	h.fake = fakeslack.New(t, fakeOpts...)
	h.fake.AddUser("U1", "alice")
	h.fake.AddUser("U2", "bob")
	h.fake.AddUser("U3", "carol")
	h.fake.AddChannel("C1", "general")

	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync(), boltstore.WithRedeliveryDelay(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h.st = st

	cfg := Config{
		BotToken:     fakeslack.BotToken,
		APIURL:       h.fake.APIURL(),
		WorkDir:      testWorkDir,
		ConsumerName: "bot-test",
		SigningKey:   testSigningKey,
		// The rules on who may act have tests of their own; elsewhere
		// anyone may, and DMs are on.
		Approvers: People{Anyone: true},
		AllowDMs:  true,
		DMWorkDir: testDMWorkDir,
	}
	if o.useClock {
		cfg.Clock = h.clock
		// A clock that moves only by hand would hold every write behind
		// its budget; these tests pin deadlines, not Slack's pacing.
		cfg.Budgets.Unlimited = true
	}
	switch transport {
	case transportSocket:
		cfg.AppToken = fakeslack.AppToken
	case transportHTTP:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cfg.SigningSecret = testSecret
		cfg.Listener = ln
		h.base = "http://" + ln.Addr().String()
		h.fake.UseHTTP(h.base, testSecret)
	}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	if _, bench := t.(*testing.B); bench {
		log = zerolog.Nop()
	}
	if o.seed != nil {
		o.seed(t, st)
	}
	var botStore store.Store = st
	if o.wrap != nil {
		botStore = o.wrap(st)
	}
	b, err := New(cfg, botStore, log)
	if err != nil {
		t.Fatal(err)
	}
	h.bot = b
	if o.before != nil {
		o.before(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	h.stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	})
	t.Cleanup(h.stop)
	// Ready: Socket Mode is connected, or HTTP mode serves (the listener
	// is bound already, so this request waits until Run serves it).
	if err := h.fake.WaitConnected(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if transport == transportHTTP {
		resp, err := http.Get(h.base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("healthz = %d", resp.StatusCode)
		}
	}
	return h
}

// testCtx bounds a test's blocking waits, so a broken behaviour fails the
// test instead of hanging it.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// claim waits for the session a Slack message queued, as a worker would,
// and returns it with its first input. Like a worker, it requires both
// signed by the bot.
func (h *harness) claim(t testing.TB) (store.Session, store.Input) {
	t.Helper()
	ctx := testCtx(t)
	id, err := h.st.Claim(ctx, "worker-test")
	if err != nil {
		t.Fatalf("no session was queued: %v", err)
	}
	s, err := h.st.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.VerifySession(testSigningKey.Public().(ed25519.PublicKey), s); err != nil || s.API {
		t.Errorf("session %+v: %v; want one signed by the bot, for a worker to run", s, err)
	}
	return s, h.next(t, s.ID)
}

// next takes the session's next input, as a worker would, and requires
// it signed by the bot.
func (h *harness) next(t testing.TB, sessionID string) store.Input {
	t.Helper()
	in, err := h.st.NextInput(testCtx(t), sessionID, "worker-test")
	if err != nil {
		t.Fatalf("no input for session %s: %v", sessionID, err)
	}
	if err := store.VerifyInput(testSigningKey.Public().(ed25519.PublicKey), in); err != nil || in.SessionID != sessionID {
		t.Errorf("input %+v of %s: %v; want one signed by the bot", in, sessionID, err)
	}
	return in
}

func TestMentionStartsASessionInItsThread(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.ChannelWorkDirs = map[string]string{"C1": "/srv/c1"} }})
			ts, err := h.fake.Mention(testCtx(t), "U1", "C1", "fix the failing test")
			if err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if s.Thread != (store.MessageRef{Channel: "C1", TS: ts}) {
				t.Errorf("thread = %+v, want C1/%s", s.Thread, ts)
			}
			if s.StartedBy != "U1" || s.WorkDir != "/srv/c1" || s.State == "" {
				t.Errorf("session = %+v, want started by U1 in /srv/c1", s)
			}
			if in.Text != "fix the failing test" || in.User != "U1" {
				t.Errorf("input = %+v, want the prompt without the bot's mention", in)
			}
			// The status line appears in the thread.
			if _, err := h.fake.WaitThread(testCtx(t), "C1", ts, fakeslack.Text("Queued")); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestThreadRepliesContinueTheSessionOnce(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			ctx := testCtx(t)
			ts, err := h.fake.Mention(ctx, "U1", "C1", "start")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := h.claim(t)

			if _, err := h.fake.Reply(ctx, "U2", "C1", ts, "also run the linter"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "also run the linter" || in.User != "U2" {
				t.Errorf("follow-up = %+v", in)
			}
			// A reply that mentions the bot arrives as app_mention and as a
			// message; it must be queued once.
			if _, err := h.fake.Reply(ctx, "U1", "C1", ts, "<@"+fakeslack.BotUserID+"> and the docs"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "and the docs" {
				t.Errorf("mention follow-up = %+v", in)
			}
			if _, err := h.fake.Reply(ctx, "U1", "C1", ts, "sentinel"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "sentinel" {
				t.Errorf("after a mention reply the next input is %q, want sentinel (the reply was queued twice)", in.Text)
			}
		})
	}
}

func TestRepliesInOtherThreadsAreIgnored(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	// A thread without a session: the bot stays out of it.
	if _, err := h.fake.Reply(ctx, "U1", "C1", "1600000000.000100", "just chatting"); err != nil {
		t.Fatal(err)
	}
	ts, err := h.fake.Mention(ctx, "U2", "C1", "real work")
	if err != nil {
		t.Fatal(err)
	}
	s, in := h.claim(t)
	if s.Thread.TS != ts || in.Text != "real work" {
		t.Errorf("claimed %+v / %+v, want only the mention's session", s, in)
	}
	if _, err := h.st.SessionByThread(ctx, store.MessageRef{Channel: "C1", TS: "1600000000.000100"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a chat thread got a session: %v", err)
	}
}

func TestDirectMessageStartsASession(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			ts, err := h.fake.DM(testCtx(t), "U3", "summarise the README")
			if err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if s.Thread != (store.MessageRef{Channel: fakeslack.DMChannel("U3"), TS: ts}) || in.Text != "summarise the README" {
				t.Errorf("session %+v input %+v, want the DM's thread and text", s.Thread, in)
			}
			if s.WorkDir != testDMWorkDir {
				t.Errorf("DM session workdir = %q, want DM_WORKDIR %q", s.WorkDir, testDMWorkDir)
			}
			if _, err := h.fake.DMReply(testCtx(t), "U3", ts, "in French"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "in French" {
				t.Errorf("DM thread reply = %+v", in)
			}
		})
	}
}

func TestSlashCommandStartsASessionUnderTheBotsMessage(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			if err := h.fake.SlashCommand(testCtx(t), "U2", "C1", "/claude", "write <release> notes"); err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			root, ok := h.fake.Message(fakeslack.MessageRef{Channel: "C1", TS: s.Thread.TS})
			if !ok || !root.FromBot() {
				t.Fatalf("session thread %+v is not a bot message", s.Thread)
			}
			if want := "<@U2> started a Claude session: write &lt;release&gt; notes"; root.Text != want {
				t.Errorf("root text = %q, want %q", root.Text, want)
			}
			if in.Text != "write <release> notes" || s.StartedBy != "U2" {
				t.Errorf("input %+v session %+v", in, s)
			}
		})
	}
}

func TestSlashCommandWithoutPromptExplainsUsage(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	if err := h.fake.SlashCommand(testCtx(t), "U2", "C1", "/claude", "  "); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(testCtx(t), "U2", fakeslack.Text("Usage")); err != nil {
		t.Error(err)
	}
}

func TestRetriedEventRunsOnce(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			ctx := testCtx(t)
			ts, err := h.fake.DM(ctx, "U1", "once please")
			if err != nil {
				t.Fatal(err)
			}
			if err := h.fake.RetryLastEvent(ctx, "http_timeout"); err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if in.Text != "once please" {
				t.Fatalf("first input = %+v", in)
			}
			if _, err := h.fake.DMReply(ctx, "U1", ts, "sentinel"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "sentinel" {
				t.Errorf("next input = %q, want sentinel: the retried event ran twice", in.Text)
			}
		})
	}
}

func TestURLVerificationEchoesTheChallenge(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{})
	if err := h.fake.VerifyURL(testCtx(t)); err != nil {
		t.Error(err)
	}
}

// newSession creates a session living in a fresh thread of C1, as if
// someone had started it there (signed, as the bot signs it).
func (h *harness) newSession(t testing.TB, id string) store.Session {
	t.Helper()
	return h.newSessionIn(t, id, "C1")
}

// newSessionIn is newSession in channel.
func (h *harness) newSessionIn(t testing.TB, id, channel string) store.Session {
	t.Helper()
	ctx := testCtx(t)
	_, rootTS, err := h.bot.api.PostMessageContext(ctx, channel, slack.MsgOptionText("thread root "+id, false))
	if err != nil {
		t.Fatal(err)
	}
	s := store.Session{ID: id, Thread: store.MessageRef{Channel: channel, TS: rootTS}, WorkDir: testWorkDir,
		StartedBy: "U1", State: store.SessionRunning, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := store.SignSession(testSigningKey, &s); err != nil {
		t.Fatal(err)
	}
	if err := h.st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// createRequest stores r (as the worker would) and waits for its card,
// recognised by one of its buttons.
func (h *harness) createRequest(t testing.TB, s store.Session, r store.Request, button string) fakeslack.Message {
	t.Helper()
	ctx := testCtx(t)
	r.SessionID = s.ID
	if r.CLIRequestID == "" {
		r.CLIRequestID = "cli-" + r.ID
	}
	r.CreatedAt = time.Now()
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	card, err := h.fake.WaitThread(ctx, s.Thread.Channel, s.Thread.TS, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, button)
	})
	if err != nil {
		t.Fatalf("card not posted: %v", err)
	}
	return card
}

// sessionWithRequest creates a session and a pending Bash request in it,
// and waits for the bot to post the card.
func (h *harness) sessionWithRequest(t testing.TB, requestID string) (store.Request, fakeslack.Message) {
	t.Helper()
	s := h.newSession(t, "sess-"+requestID)
	r := store.Request{ID: requestID, Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
	}}
	card := h.createRequest(t, s, r, "Approve")
	r.SessionID = s.ID
	return r, card
}

func hasButton(m fakeslack.Message, label string) bool {
	for _, b := range m.Buttons() {
		if b == label {
			return true
		}
	}
	return false
}

// waitSettled waits for the card of r to lose its buttons and returns the
// request as stored.
func (h *harness) waitSettled(t testing.TB, r store.Request, card fakeslack.Message) (store.Request, fakeslack.Message) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := h.st.WaitDecision(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	final, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0
	})
	if err != nil {
		t.Fatalf("card not updated to its final state: %v", err)
	}
	got, err := h.st.GetRequest(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Decision.Outcome; o == store.OutcomeAllow || o == store.OutcomeDeny {
		// A person's decision leaves the bot signed, or no worker acts on it.
		if err := store.VerifyDecision(testSigningKey.Public().(ed25519.PublicKey), got, *got.Decision); err != nil {
			t.Errorf("the bot stored a decision that does not verify: %v", err)
		}
	}
	return got, final
}

func TestApproverClickDecidesAndUpdatesTheCard(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"S0OPS"}} }})
			h.fake.AddUserGroup("S0OPS", "U2")
			r, card := h.sessionWithRequest(t, "req-approve")
			if err := h.fake.Click(testCtx(t), "U2", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			got, final := h.waitSettled(t, r, card)
			if d := got.Decision; d.Outcome != store.OutcomeAllow || d.By != "U2" {
				t.Errorf("decision = %+v, want allow by U2", d)
			}
			if !final.HasText("U2") {
				t.Errorf("final card does not name who decided: %s", final.AllText())
			}
			if got.Card != (store.MessageRef{Channel: card.Channel, TS: card.TS}) {
				t.Errorf("request card = %+v, want %+v", got.Card, card.Ref())
			}
		})
	}
}

func TestNonApproverClickChangesNothing(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U1", "S0OPS"}} }})
			h.fake.AddUserGroup("S0OPS", "U2")
			r, card := h.sessionWithRequest(t, "req-denied-click")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U3", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			eph, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(eph.Text, "<@U1>") {
				t.Errorf("ephemeral %q does not say who may decide", eph.Text)
			}
			got, err := h.st.GetRequest(ctx, r.ID)
			if err != nil || !got.Pending() {
				t.Errorf("request after a non-approver's click: %+v, %v; want pending", got.Decision, err)
			}
			if m, _ := h.fake.Message(card.Ref()); !hasButton(m, "Approve") {
				t.Error("the card lost its buttons after a non-approver's click")
			}
		})
	}
}

func TestClickOnDecidedCardSaysWhoDecidedAndRefreshesIt(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{useClock: true})
	r, card := h.sessionWithRequest(t, "req-late")
	ctx := testCtx(t)
	// Hold the card's update behind a rate limit, so the card still shows
	// its buttons when the late click comes.
	h.fake.RateLimit("chat.update", 1, 30*time.Second)
	// Another replica decided first, signing as every bot does.
	first := store.Decision{Outcome: store.OutcomeDeny, By: "U1", ByName: "alice", At: h.clock.Now(), Message: "no"}
	stored, err := h.st.GetRequest(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SignDecision(testSigningKey, stored, &first); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Decide(ctx, r.ID, first); err != nil {
		t.Fatal(err)
	}
	// Two waits on the clock: the reconciler's next pass and the edit's
	// Retry-After.
	h.clock.AwaitTimers(t, 2)
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("already settled: 🚫 *Denied* by <@U1>")); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(30 * time.Second)
	got, _ := h.waitSettled(t, r, card)
	if got.Decision.Outcome != store.OutcomeDeny || got.Decision.By != "U1" {
		t.Errorf("decision = %+v, want the first one (deny by U1)", got.Decision)
	}
}

func TestTwoApproversAtOnceDecideOnceAndTheLoserLearnsTheWinner(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	r, card := h.sessionWithRequest(t, "req-race")
	ctx := testCtx(t)
	var wg sync.WaitGroup
	for _, u := range []string{"U1", "U2"} {
		wg.Go(func() {
			if err := h.fake.Click(ctx, u, card.Ref(), "Approve"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, _ := h.waitSettled(t, r, card)
	winner := got.Decision.By
	loser := map[string]string{"U1": "U2", "U2": "U1"}[winner]
	if loser == "" {
		t.Fatalf("decided by %q, want U1 or U2", winner)
	}
	if _, err := h.fake.WaitEphemeral(ctx, loser, fakeslack.Text("already settled: ✅ *Approved* by <@"+winner+">")); err != nil {
		t.Error(err)
	}
	audit, err := h.st.AuditLog(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	settled := 0
	for _, a := range audit {
		if a.RequestID == r.ID && a.Action == "settled" {
			settled++
		}
	}
	if settled != 1 {
		t.Errorf("audit has %d settlements, want 1", settled)
	}
}

func TestDenyOpensAModalAndItsSubmissionDecides(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			r, card := h.sessionWithRequest(t, "req-deny")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U1", card.Ref(), "Deny"); err != nil {
				t.Fatal(err)
			}
			view, err := h.fake.WaitView(ctx, "U1")
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h.fake.SubmitView(ctx, "U1", view.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Action == "errors" {
				t.Fatalf("submission refused: %v", resp.Errors)
			}
			got, _ := h.waitSettled(t, r, card)
			if got.Decision.Outcome != store.OutcomeDeny || got.Decision.By != "U1" {
				t.Errorf("decision = %+v, want deny by U1", got.Decision)
			}
		})
	}
}

func TestClickOnUnknownRequestTellsThePerson(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	_, card := h.sessionWithRequest(t, "req-known")
	// Point the card's buttons at a request the store does not have.
	m, _ := h.fake.Message(card.Ref())
	var bs slack.Blocks
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(m.RawBlocks), "req-known", "req-gone")), &bs); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := h.bot.api.UpdateMessageContext(testCtx(t), "C1", card.TS, slack.MsgOptionText(m.Text, false), slack.MsgOptionBlocks(bs.BlockSet...)); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Click(testCtx(t), "U1", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(testCtx(t), "U1", fakeslack.Text("no longer exists")); err != nil {
		t.Error(err)
	}
}

func TestFailedModalOpenTellsThePerson(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	r, card := h.sessionWithRequest(t, "req-modal-fails")
	ctx := testCtx(t)
	h.fake.RateLimit("views.open", 1, time.Second)
	if err := h.fake.Click(ctx, "U1", card.Ref(), "Deny"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.Text("could not open the form")); err != nil {
		t.Error(err)
	}
	if got, err := h.st.GetRequest(ctx, r.ID); err != nil || !got.Pending() {
		t.Errorf("request after a failed modal: %+v, %v; want pending", got.Decision, err)
	}
}

func TestBotMessagesEditsAndJoinsDoNotContinueASession(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	ts, err := h.fake.Mention(ctx, "U1", "C1", "start")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.claim(t)
	ignored := []*slackevents.MessageEvent{
		{Type: "message", User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "the bot's own reply", Channel: "C1", ChannelType: "channel", ThreadTimeStamp: ts, TimeStamp: "1700000100.000001"},
		{Type: "message", User: "U7", BotID: "B7", Text: "another bot", Channel: "C1", ChannelType: "channel", ThreadTimeStamp: ts, TimeStamp: "1700000100.000002"},
		{Type: "message", SubType: "message_changed", User: "U1", Text: "an edit", Channel: "C1", ChannelType: "channel", ThreadTimeStamp: ts, TimeStamp: "1700000100.000003"},
		{Type: "message", SubType: "channel_join", User: "U2", Text: "<@U2> has joined", Channel: "C1", ChannelType: "channel", ThreadTimeStamp: ts, TimeStamp: "1700000100.000004"},
	}
	for _, e := range ignored {
		h.bot.events.onMessage(ctx, e)
	}
	if _, err := h.fake.Reply(ctx, "U2", "C1", ts, "sentinel"); err != nil {
		t.Fatal(err)
	}
	if in := h.next(t, s.ID); in.Text != "sentinel" {
		t.Errorf("next input = %q, want sentinel: a bot message, edit or join was queued", in.Text)
	}
}

func TestForgedDecisionIsShownRefusedNeverAsItsClaim(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	r, card := h.sessionWithRequest(t, "req-forged")
	ctx := testCtx(t)
	// Someone with store access but no signing key writes an approval in an
	// approver's name.
	forged := store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "alice", At: time.Now(), Message: "click here"}
	if _, err := h.st.Decide(ctx, r.ID, forged); err != nil {
		t.Fatal(err)
	}
	final, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0
	})
	if err != nil {
		t.Fatalf("card not updated: %v", err)
	}
	if !final.HasText("Refused") || final.HasText("Approved") || final.HasText("alice") || final.HasText("click here") {
		t.Errorf("forged approval shown as %q %s; want it refused, without the forger's claims", final.Text, final.RawBlocks)
	}
}
