package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// startOutbox runs an outbox against fake until the test ends.
func startOutbox(t *testing.T, fake *fakeslack.Fake, budgets Budgets, clock store.Clock) *Outbox {
	t.Helper()
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(fake.APIURL()))
	o := New(api, budgets, clock, zerolog.Nop(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := o.Run(ctx); err != nil {
			t.Errorf("outbox Run: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

func textMsg(s string) Msg { return Msg{Text: s} }

// post is a post in the results lane that waits for its outcome.
func post(o *Outbox, channel, threadTS string, m Msg) (string, error) {
	return o.Post(zerolog.Nop(), LaneResult, channel, threadTS, m).Outcome()
}

// edit is an edit in the cards lane that waits for its outcome.
func edit(ctx context.Context, o *Outbox, ref store.MessageRef, m Msg) error {
	_, err := o.Edit(zerolog.Nop(), LaneCard, ref, m).Wait(ctx)
	return err
}

// recv takes a write's result, failing the test instead of hanging when
// the outbox never delivers one.
func recv(t *testing.T, w Pending) Result {
	t.Helper()
	select {
	case r := <-w.Done():
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result from the outbox within 10s")
		return Result{}
	}
}

// newFakeClock is the clock these tests move by hand, to hold the
// outbox's pacing and backoff and release them.
func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
}

// oneAtATime is a budget of one post per channel and one edit for the
// workspace a second, without bursts: every second write waits.
var oneAtATime = Budgets{PostsPerSecond: 1, PostBurst: 1, UpdatesPerMinute: 60, UpdateBurst: 1}

func TestOutboxCoalescesQueuedEditsOfOneMessage(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	clock := newFakeClock()
	o := startOutbox(t, fake, oneAtATime, clock)
	log := zerolog.Nop()

	ts, err := post(o, "C1", "", textMsg("v0"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	if err := edit(t.Context(), o, ref, textMsg("v1")); err != nil {
		t.Fatal(err)
	}
	// Three edits queue up while the workspace's edit budget refills.
	var results []Pending
	for _, v := range []string{"v2", "v3", "v4"} {
		results = append(results, o.Edit(log, LaneCard, ref, textMsg(v)))
	}
	clock.AwaitTimers(t, 1)
	clock.Advance(time.Second)
	for i, res := range results {
		if r := recv(t, res); r.Err != nil {
			t.Errorf("edit %d: %v", i+2, r.Err)
		}
	}
	if n := len(fake.CallsTo("chat.update")); n != 2 {
		t.Errorf("chat.update calls = %d, want 2 (v1, then three queued edits coalesced)", n)
	}
	m, ok := fake.Message(fakeslack.MessageRef{Channel: "C1", TS: ts})
	if !ok || m.Text != "v4" {
		t.Errorf("message text = %q, want the newest edit v4", m.Text)
	}
	// An edit to what the message shows already costs no call.
	if err := edit(t.Context(), o, ref, textMsg("v4")); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.CallsTo("chat.update")); n != 2 {
		t.Errorf("chat.update calls = %d after an edit that changes nothing, want still 2", n)
	}
}

func TestOutboxPacesPostsPerChannelNotAcrossChannels(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "one")
	fake.AddChannel("C2", "two")
	clock := newFakeClock()
	o := startOutbox(t, fake, oneAtATime, clock)
	log := zerolog.Nop()

	if _, err := post(o, "C1", "", textMsg("first")); err != nil {
		t.Fatal(err)
	}
	second := o.Post(log, LaneResult, "C1", "", textMsg("second"))
	clock.AwaitTimers(t, 1)
	// Another channel is not held up by C1's budget.
	if _, err := post(o, "C2", "", textMsg("elsewhere")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(900 * time.Millisecond)
	select {
	case r := <-second.Done():
		t.Fatalf("second post to C1 went out before its second was up: %+v", r)
	default:
	}
	clock.Advance(100 * time.Millisecond)
	if r := recv(t, second); r.Err != nil || r.TS == "" {
		t.Fatalf("second post: ts %q, err %v", r.TS, r.Err)
	}
}

func TestOutboxLowerLanesLeaveTheBudgetToCards(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	clock := newFakeClock()
	o := startOutbox(t, fake, Budgets{}, clock) // Slack's defaults: a burst of 4
	log := zerolog.Nop()

	// Progress posts spend the burst only down to what the lanes above
	// may need; the rest wait.
	var progress []Pending
	for i := range 4 {
		progress = append(progress, o.Post(log, LaneProgress, "C1", "", textMsg(fmt.Sprint("progress ", i))))
	}
	clock.AwaitTimers(t, 1)
	if n := len(fake.CallsTo("chat.postMessage")); n != 2 {
		t.Fatalf("progress posts sent at once = %d, want 2 of 4", n)
	}
	// A result, and then a card, still go out at once.
	if r := recv(t, o.Post(log, LaneResult, "C1", "", textMsg("result"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := recv(t, o.Post(log, LaneCard, "C1", "", textMsg("card"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	// Nothing is dropped: the progress posts go out as the budget refills.
	for i, res := range progress {
		for n := 0; ; n++ {
			select {
			case r := <-res.Done():
				if r.Err != nil {
					t.Errorf("progress %d: %v", i, r.Err)
				}
			case <-time.After(10 * time.Millisecond):
				// Not out yet: let the budget refill by a second.
				if n > 100 {
					t.Fatalf("progress %d never went out", i)
				}
				clock.Advance(time.Second)
				continue
			}
			break
		}
	}
}

func TestOutboxLiveMessageWithdrawnBeforeItsFirstPostCostsNothing(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	clock := newFakeClock()
	o := startOutbox(t, fake, Budgets{ProgressDelay: time.Second}, clock)
	spec := LiveSpec{Key: "progress:s1:0", Channel: "C1", DelayFirst: true}
	o.Live(zerolog.Nop(), spec, textMsg("🔧 Bash"))
	clock.AwaitTimers(t, 1)
	// The call got a card: the fold has nothing left to show.
	o.Live(zerolog.Nop(), spec, Msg{})
	clock.Advance(2 * time.Second)
	if r := recv(t, o.Post(zerolog.Nop(), LaneCard, "C1", "", textMsg("card"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	if msgs := fake.Messages("C1"); len(msgs) != 1 || msgs[0].Text != "card" {
		t.Errorf("channel holds %+v, want only the card", msgs)
	}
}

func TestOutboxWaitsOutRateLimitsWithoutDroppingTheMessage(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	clock := newFakeClock()
	o := startOutbox(t, fake, Budgets{}, clock)
	fake.RateLimit("chat.postMessage", 2, 3*time.Second)

	res := o.Post(zerolog.Nop(), LaneCard, "C1", "", textMsg("through the storm"))
	for i := range 2 {
		asked := clock.AwaitTimers(t, 1)
		if got := asked[len(asked)-1]; got != 3*time.Second {
			t.Fatalf("wait %d after 429 = %v, want Retry-After 3s", i+1, got)
		}
		clock.Advance(3 * time.Second)
	}
	r := recv(t, res)
	if r.Err != nil {
		t.Fatalf("post: %v", r.Err)
	}
	calls := fake.CallsTo("chat.postMessage")
	if len(calls) != 3 || calls[0].Status != 429 || calls[1].Status != 429 {
		t.Errorf("calls = %+v, want 429, 429, ok", calls)
	}
	if msgs := fake.Messages("C1"); len(msgs) != 1 || msgs[0].Text != "through the storm" || msgs[0].TS != r.TS {
		t.Errorf("channel holds %+v, want the one message with ts %s", msgs, r.TS)
	}
}

func TestOutboxKeepsOrderWithinAThread(t *testing.T) {
	fake := fakeslack.New(t, fakeslack.WithoutRateModel()) // 20 posts at once: the subject is order, not pacing
	fake.AddChannel("C1", "general")
	o := startOutbox(t, fake, Budgets{Unlimited: true}, newFakeClock()) // the subject is order, not pacing
	log := zerolog.Nop()
	root, err := post(o, "C1", "", textMsg("root"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var results []Pending
	for i := range n {
		results = append(results, o.Post(log, LaneCard, "C1", root, textMsg(fmt.Sprint(i))))
	}
	for _, res := range results {
		if r := recv(t, res); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	var got []string
	for _, m := range fake.Thread("C1", root) {
		if m.TS != root {
			got = append(got, m.Text)
		}
	}
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("thread order = %v, want %v", got, want)
	}
}

func TestOutboxReportsPermanentErrorsWithoutRetrying(t *testing.T) {
	fake := fakeslack.New(t, fakeslack.AllowRejections())
	fake.AddChannel("C1", "general")
	o := startOutbox(t, fake, Budgets{}, newFakeClock())
	tooLong := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("x", 3001), false, false), nil, nil)

	_, err := post(o, "C1", "", Msg{Text: "fallback", Blocks: []slack.Block{tooLong}})
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_blocks" {
		t.Fatalf("err = %v, want invalid_blocks", err)
	}
	if n := len(fake.CallsTo("chat.postMessage")); n != 1 {
		t.Errorf("chat.postMessage calls = %d, want 1: a refused payload is not retried", n)
	}
}

func TestOutboxFailsQueuedWritesWhenStopped(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	clock := newFakeClock()
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(fake.APIURL()))
	o := New(api, oneAtATime, clock, zerolog.Nop(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })

	if _, err := post(o, "C1", "", textMsg("one")); err != nil {
		t.Fatal(err)
	}
	held := o.Post(zerolog.Nop(), LaneCard, "C1", "", textMsg("two"))
	clock.AwaitTimers(t, 1)
	cancel()
	wg.Wait()
	if r := recv(t, held); !errors.Is(r.Err, ErrClosed) {
		t.Errorf("held post err = %v, want ErrOutboxClosed", r.Err)
	}
	if _, err := post(o, "C1", "", textMsg("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("post after stop err = %v, want ErrOutboxClosed", err)
	}
}

func TestPermanentTellsRefusalsFromTransientFailures(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"invalid blocks is permanent", slack.SlackErrorResponse{Err: "invalid_blocks"}, true},
		{"message not found is permanent", fmt.Errorf("wrapped: %w", slack.SlackErrorResponse{Err: "message_not_found"}), true},
		{"internal error is transient", slack.SlackErrorResponse{Err: "internal_error"}, false},
		{"5xx is transient", slack.StatusCodeError{Code: 503, Status: "503"}, false},
		{"429 without Retry-After is transient", slack.StatusCodeError{Code: 429, Status: "429"}, false},
		{"404 is permanent", slack.StatusCodeError{Code: 404, Status: "404"}, true},
		{"network error is transient", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Permanent(tt.err); got != tt.want {
				t.Errorf("Permanent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestOutboxRetriesServerErrorsWithBackoff(t *testing.T) {
	// A Slack that fails twice with 503 before it takes the message.
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n <= 2 {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1700000000.000042"}`)
	}))
	defer srv.Close()
	clock := newFakeClock()
	o := New(slack.New("xoxb-test", slack.OptionAPIURL(srv.URL+"/")), Budgets{}, clock, zerolog.Nop(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	res := o.Post(zerolog.Nop(), LaneCard, "C1", "", textMsg("eventually"))
	for _, want := range []time.Duration{backoffBase, 2 * backoffBase} {
		asked := clock.AwaitTimers(t, 1)
		if got := asked[len(asked)-1]; got != want {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
		clock.Advance(want)
	}
	if r := recv(t, res); r.Err != nil || r.TS != "1700000000.000042" {
		t.Fatalf("post = %+v, want the ts of the third attempt", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Errorf("calls = %d, want 3", calls)
	}
}

// TestOutboxResponseReplacesAnOlderQueuedEdit: an edit of the card still
// waiting for the workspace's budget is older than the outcome a click
// shows through its response_url; it is never sent after it, and its
// caller learns the response's outcome.
func TestOutboxResponseReplacesAnOlderQueuedEdit(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	fake.AddUser("U1", "alice")
	clock := newFakeClock()
	o := startOutbox(t, fake, oneAtATime, clock)
	log := zerolog.Nop()
	ts, err := post(o, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	if err := edit(t.Context(), o, ref, textMsg("buttons, refreshed")); err != nil {
		t.Fatal(err)
	}
	older := o.Edit(log, LaneCard, ref, textMsg("buttons, again")) // waits for the budget
	clock.AwaitTimers(t, 1)
	url := fake.ResponseURLFor("U1", fakeslack.MessageRef{Channel: "C1", TS: ts})
	if r := recv(t, o.Respond(log, ref, url, textMsg("approved"), true)); r.Err != nil {
		t.Fatalf("respond: %v", r.Err)
	}
	if r := recv(t, older); r.Err != nil {
		t.Errorf("the replaced edit's caller got %v, want the response's success", r.Err)
	}
	clock.Advance(time.Minute)
	// A later edit with the same content is not sent either.
	if err := edit(t.Context(), o, ref, textMsg("approved")); err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message(fakeslack.MessageRef{Channel: "C1", TS: ts})
	if m.Text != "approved" || m.Updated != 1 || m.Replaced != 1 {
		t.Errorf("message %q updated %d replaced %d; want the response last and the older edit never sent", m.Text, m.Updated, m.Replaced)
	}
}

// TestOutboxResponseWaitsForTheEditInFlight: an edit of the card already
// on its way to Slack could land after a response sent beside it; the
// response waits for it.
func TestOutboxResponseWaitsForTheEditInFlight(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	fake.AddUser("U1", "alice")
	o := startOutbox(t, fake, Budgets{}, nil)
	log := zerolog.Nop()
	ts, err := post(o, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	held := fake.Hold("chat.update", nil)
	inFlight := o.Edit(log, LaneCard, ref, textMsg("buttons, refreshed"))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := held.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	url := fake.ResponseURLFor("U1", fakeslack.MessageRef{Channel: "C1", TS: ts})
	res := o.Respond(log, ref, url, textMsg("approved"), true)
	// A post queued after the response is sent in the same dispatch pass
	// that considered the response, or a later one.
	if _, err := post(o, "C1", "", textMsg("barrier")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-res.Started():
		t.Fatal("the response started while an edit of the message was in flight")
	case <-inFlight.Done():
		t.Fatal("the held edit finished before it was released")
	default:
	}
	held.Release()
	if r := recv(t, inFlight); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := recv(t, res); r.Err != nil {
		t.Fatal(r.Err)
	}
	if m, _ := fake.Message(fakeslack.MessageRef{Channel: "C1", TS: ts}); m.Text != "approved" {
		t.Errorf("message shows %q, want the response's outcome last", m.Text)
	}
}

// TestOutboxFailedResponseBecomesAnEditOnlyWhenAsked: the response_url is
// sent once; a failure is a chat.update of the same content with
// fallback, the caller's error without.
func TestOutboxFailedResponseBecomesAnEditOnlyWhenAsked(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddChannel("C1", "general")
	fake.AddUser("U1", "alice")
	o := startOutbox(t, fake, Budgets{}, nil)
	log := zerolog.Nop()
	ts, err := post(o, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	fref := fakeslack.MessageRef{Channel: "C1", TS: ts}
	fake.FailNext(fakeslack.ResponseURLMethod, 1, "used_url")
	if r := recv(t, o.Respond(log, ref, fake.ResponseURLFor("U1", fref), textMsg("denied"), false)); r.Err == nil {
		t.Fatal("a failed response without fallback reported success")
	}
	if m, _ := fake.Message(fref); m.Text != "buttons" || len(fake.CallsTo(fakeslack.ResponseURLMethod)) != 1 {
		t.Errorf("message %q after a failed response without fallback; want it untouched, one attempt", m.Text)
	}
	fake.FailNext(fakeslack.ResponseURLMethod, 1, "expired_url")
	if r := recv(t, o.Respond(log, ref, fake.ResponseURLFor("U1", fref), textMsg("approved"), true)); r.Err != nil {
		t.Fatalf("fallback: %v", r.Err)
	}
	if m, _ := fake.Message(fref); m.Text != "approved" || m.Updated != 1 || m.Replaced != 0 {
		t.Errorf("message %q updated %d replaced %d; want the outcome by chat.update", m.Text, m.Updated, m.Replaced)
	}
}

// TestAStoppingOutboxSendsWhatIsQueuedOnceAndRetriesNothing: once the
// bot stops (retries ends) the outbox still sends a write queued behind
// the budget, but a call that fails is not tried again: it may yet show
// in Slack, where the next bot looks for it.
func TestAStoppingOutboxSendsWhatIsQueuedOnceAndRetriesNothing(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		calls[r.Form.Get("text")]++
		mu.Unlock()
		if r.Form.Get("text") == "fails" {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1700000000.000042"}`)
	}))
	defer srv.Close()
	clock := newFakeClock()
	o := New(slack.New("xoxb-test", slack.OptionAPIURL(srv.URL+"/")), oneAtATime, clock, zerolog.Nop(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	retries, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.RunUntil(ctx, retries) })
	defer func() { cancel(); wg.Wait() }()

	if _, err := post(o, "C1", "", textMsg("first")); err != nil {
		t.Fatal(err)
	}
	queued := o.Post(zerolog.Nop(), LaneCard, "C1", "", textMsg("queued"))
	failing := o.Post(zerolog.Nop(), LaneCard, "C2", "", textMsg("fails"))
	clock.AwaitTimers(t, 1)
	stop()
	if r := recv(t, failing); !errors.Is(r.Err, ErrClosed) {
		t.Errorf("the failing post = %+v, want it given up (ErrClosed)", r)
	}
	clock.Advance(time.Second)
	if r := recv(t, queued); r.Err != nil {
		t.Errorf("the queued post = %+v, want it sent", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["fails"] != 1 || calls["queued"] != 1 {
		t.Errorf("calls = %v, want the queued post sent once and the failing one tried once", calls)
	}
}

// bashRequest is a pending request to run Bash with input.
func bashRequest(input string) store.Request {
	r := store.Request{ID: "req-d", SessionID: "s1", Kind: store.KindTool}
	r.ToolName, r.Input = "Bash", json.RawMessage(input)
	return r
}

// cardMsg is r's card as the bot sends it (without a policy).
func cardMsg(r store.Request, s store.Session) Msg {
	m := blocks.Card(r, s)
	return Msg{Text: m.Text, Blocks: m.Blocks}
}

// The digest drops an edit that would show what Slack shows already: the
// same card rendered again digests the same, and different cards do not.
func TestCardDigestsTellCardsApart(t *testing.T) {
	s := store.Session{ID: "s1", WorkDir: "/srv/repo", StartedBy: "U0"}
	pending := bashRequest(`{"command":"make deploy ENV=staging <!channel> & more"}`)
	secret := pending
	secret.Input = json.RawMessage(`{"command":"GITHUB_TOKEN=abc123 make \u202e"}`)
	settled := pending
	settled.Decision = &store.Decision{Outcome: store.OutcomeDeny, By: "U1", At: time.Now()}
	seen := map[[32]byte]bool{}
	for _, r := range []store.Request{pending, secret, settled} {
		m := cardMsg(r, s)
		if again := cardMsg(r, s); m.digest() != again.digest() {
			t.Errorf("%s: the same card rendered again digests differently", m.Text)
		}
		seen[m.digest()] = true
	}
	if len(seen) != 3 {
		t.Errorf("three different cards have %d digests", len(seen))
	}
}

func BenchmarkCardDigest(b *testing.B) {
	r := bashRequest(`{"command":"cd /srv/repo && go test -race ./store/... 2>&1 | tee /tmp/test.log"}`)
	m := cardMsg(r, store.Session{ID: "s1", WorkDir: "/srv/repo", StartedBy: "U0"})
	b.ReportAllocs()
	for b.Loop() {
		m.digest()
	}
}
