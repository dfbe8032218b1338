package bot

import (
	"context"
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

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// startOutbox runs an outbox against fake until the test ends.
func startOutbox(t *testing.T, fake *fakeslack.Fake, budgets Budgets, clock store.Clock) *outbox {
	t.Helper()
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(fake.APIURL()))
	o := newOutbox(api, budgets, clock, zerolog.Nop())
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

func textMsg(s string) outMsg { return outMsg{Text: s} }

// recv takes an op's result, failing the test instead of hanging when the
// outbox never delivers one.
func recv(t *testing.T, res <-chan opResult) opResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result from the outbox within 10s")
		return opResult{}
	}
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

	ts, err := o.Post(t.Context(), log, "C1", "", textMsg("v0"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	if err := o.Update(t.Context(), log, ref, textMsg("v1")); err != nil {
		t.Fatal(err)
	}
	// Three edits queue up while the workspace's edit budget refills.
	var results []<-chan opResult
	for _, v := range []string{"v2", "v3", "v4"} {
		results = append(results, o.enqueue(&op{kind: opUpdate, channel: ref.Channel, ts: ref.TS, msg: textMsg(v), log: log}, true))
	}
	waitTimers(t, clock, 1)
	clock.Advance(time.Second)
	for i, res := range results {
		if r := recv(t, res); r.err != nil {
			t.Errorf("edit %d: %v", i+2, r.err)
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
	if err := o.Update(t.Context(), log, ref, textMsg("v4")); err != nil {
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

	if _, err := o.Post(t.Context(), log, "C1", "", textMsg("first")); err != nil {
		t.Fatal(err)
	}
	second := o.post(log, laneResult, "C1", "", textMsg("second"))
	waitTimers(t, clock, 1)
	// Another channel is not held up by C1's budget.
	if _, err := o.Post(t.Context(), log, "C2", "", textMsg("elsewhere")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(900 * time.Millisecond)
	select {
	case r := <-second:
		t.Fatalf("second post to C1 went out before its second was up: %+v", r)
	default:
	}
	clock.Advance(100 * time.Millisecond)
	if r := recv(t, second); r.err != nil || r.ts == "" {
		t.Fatalf("second post: ts %q, err %v", r.ts, r.err)
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
	var progress []<-chan opResult
	for i := range 4 {
		progress = append(progress, o.post(log, laneProgress, "C1", "", textMsg(fmt.Sprint("progress ", i))))
	}
	waitTimers(t, clock, 1)
	if n := len(fake.CallsTo("chat.postMessage")); n != 2 {
		t.Fatalf("progress posts sent at once = %d, want 2 of 4", n)
	}
	// A result, and then a card, still go out at once.
	if r := recv(t, o.post(log, laneResult, "C1", "", textMsg("result"))); r.err != nil {
		t.Fatal(r.err)
	}
	if r := recv(t, o.post(log, laneCard, "C1", "", textMsg("card"))); r.err != nil {
		t.Fatal(r.err)
	}
	// Nothing is dropped: the progress posts go out as the budget refills.
	for i, res := range progress {
		for n := 0; ; n++ {
			select {
			case r := <-res:
				if r.err != nil {
					t.Errorf("progress %d: %v", i, r.err)
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
	spec := liveSpec{key: "progress:s1:0", channel: "C1", delay: time.Second}
	o.Live(zerolog.Nop(), spec, textMsg("🔧 Bash"))
	waitTimers(t, clock, 1)
	// The call got a card: the fold has nothing left to show.
	o.Live(zerolog.Nop(), spec, outMsg{})
	clock.Advance(2 * time.Second)
	if r := recv(t, o.post(zerolog.Nop(), laneCard, "C1", "", textMsg("card"))); r.err != nil {
		t.Fatal(r.err)
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

	res := o.enqueue(&op{kind: opPost, channel: "C1", msg: textMsg("through the storm"), log: zerolog.Nop()}, true)
	for i := range 2 {
		asked := waitTimers(t, clock, 1)
		if got := asked[len(asked)-1]; got != 3*time.Second {
			t.Fatalf("wait %d after 429 = %v, want Retry-After 3s", i+1, got)
		}
		clock.Advance(3 * time.Second)
	}
	r := recv(t, res)
	if r.err != nil {
		t.Fatalf("post: %v", r.err)
	}
	calls := fake.CallsTo("chat.postMessage")
	if len(calls) != 3 || calls[0].Status != 429 || calls[1].Status != 429 {
		t.Errorf("calls = %+v, want 429, 429, ok", calls)
	}
	if msgs := fake.Messages("C1"); len(msgs) != 1 || msgs[0].Text != "through the storm" || msgs[0].TS != r.ts {
		t.Errorf("channel holds %+v, want the one message with ts %s", msgs, r.ts)
	}
}

func TestOutboxKeepsOrderWithinAThread(t *testing.T) {
	fake := fakeslack.New(t, fakeslack.WithoutRateModel()) // 20 posts at once: the subject is order, not pacing
	fake.AddChannel("C1", "general")
	o := startOutbox(t, fake, Budgets{Unlimited: true}, newFakeClock()) // the subject is order, not pacing
	log := zerolog.Nop()
	root, err := o.Post(t.Context(), log, "C1", "", textMsg("root"))
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var results []<-chan opResult
	for i := range n {
		results = append(results, o.enqueue(&op{kind: opPost, channel: "C1", threadTS: root, msg: textMsg(fmt.Sprint(i)), log: log}, true))
	}
	for _, res := range results {
		if r := recv(t, res); r.err != nil {
			t.Fatal(r.err)
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

	_, err := o.Post(t.Context(), zerolog.Nop(), "C1", "", outMsg{Text: "fallback", Blocks: []slack.Block{tooLong}})
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
	o := newOutbox(api, oneAtATime, clock, zerolog.Nop())
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })

	if _, err := o.Post(t.Context(), zerolog.Nop(), "C1", "", textMsg("one")); err != nil {
		t.Fatal(err)
	}
	held := o.enqueue(&op{kind: opPost, channel: "C1", msg: textMsg("two"), log: zerolog.Nop()}, true)
	waitTimers(t, clock, 1)
	cancel()
	wg.Wait()
	if r := recv(t, held); !errors.Is(r.err, errOutboxClosed) {
		t.Errorf("held post err = %v, want ErrOutboxClosed", r.err)
	}
	if _, err := o.Post(t.Context(), zerolog.Nop(), "C1", "", textMsg("late")); !errors.Is(err, errOutboxClosed) {
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
			if got := permanent(tt.err); got != tt.want {
				t.Errorf("permanent(%v) = %v, want %v", tt.err, got, tt.want)
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
	o := newOutbox(slack.New("xoxb-test", slack.OptionAPIURL(srv.URL+"/")), Budgets{}, clock, zerolog.Nop())
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { _ = o.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	res := o.enqueue(&op{kind: opPost, channel: "C1", msg: textMsg("eventually"), log: zerolog.Nop()}, true)
	for _, want := range []time.Duration{backoffBase, 2 * backoffBase} {
		asked := waitTimers(t, clock, 1)
		if got := asked[len(asked)-1]; got != want {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
		clock.Advance(want)
	}
	if r := recv(t, res); r.err != nil || r.ts != "1700000000.000042" {
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
	ts, err := o.Post(t.Context(), log, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	if err := o.Update(t.Context(), log, ref, textMsg("buttons, refreshed")); err != nil {
		t.Fatal(err)
	}
	older := o.update(log, laneCard, ref, textMsg("buttons, again")) // waits for the budget
	waitTimers(t, clock, 1)
	url := fake.ResponseURLFor("U1", fakeslack.MessageRef{Channel: "C1", TS: ts})
	if r := recv(t, o.respondPending(log, ref, url, textMsg("approved"), true).res); r.err != nil {
		t.Fatalf("respond: %v", r.err)
	}
	if r := recv(t, older); r.err != nil {
		t.Errorf("the replaced edit's caller got %v, want the response's success", r.err)
	}
	clock.Advance(time.Minute)
	// A later edit with the same content is not sent either.
	if err := o.Update(t.Context(), log, ref, textMsg("approved")); err != nil {
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
	ts, err := o.Post(t.Context(), log, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	held := fake.Hold("chat.update", nil)
	inFlight := o.update(log, laneCard, ref, textMsg("buttons, refreshed"))
	if _, err := held.Wait(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	url := fake.ResponseURLFor("U1", fakeslack.MessageRef{Channel: "C1", TS: ts})
	res := o.respondPending(log, ref, url, textMsg("approved"), true)
	// A post queued after the response is sent in the same dispatch pass
	// that considered the response, or a later one.
	if _, err := o.Post(t.Context(), log, "C1", "", textMsg("barrier")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-res.started:
		t.Fatal("the response started while an edit of the message was in flight")
	case <-inFlight:
		t.Fatal("the held edit finished before it was released")
	default:
	}
	held.Release()
	if r := recv(t, inFlight); r.err != nil {
		t.Fatal(r.err)
	}
	if r := recv(t, res.res); r.err != nil {
		t.Fatal(r.err)
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
	ts, err := o.Post(t.Context(), log, "C1", "", textMsg("buttons"))
	if err != nil {
		t.Fatal(err)
	}
	ref := store.MessageRef{Channel: "C1", TS: ts}
	fref := fakeslack.MessageRef{Channel: "C1", TS: ts}
	fake.FailNext(fakeslack.ResponseURLMethod, 1, "used_url")
	if r := recv(t, o.respondPending(log, ref, fake.ResponseURLFor("U1", fref), textMsg("denied"), false).res); r.err == nil {
		t.Fatal("a failed response without fallback reported success")
	}
	if m, _ := fake.Message(fref); m.Text != "buttons" || len(fake.CallsTo(fakeslack.ResponseURLMethod)) != 1 {
		t.Errorf("message %q after a failed response without fallback; want it untouched, one attempt", m.Text)
	}
	fake.FailNext(fakeslack.ResponseURLMethod, 1, "expired_url")
	if r := recv(t, o.respondPending(log, ref, fake.ResponseURLFor("U1", fref), textMsg("approved"), true).res); r.err != nil {
		t.Fatalf("fallback: %v", r.err)
	}
	if m, _ := fake.Message(fref); m.Text != "approved" || m.Updated != 1 || m.Replaced != 0 {
		t.Errorf("message %q updated %d replaced %d; want the outcome by chat.update", m.Text, m.Updated, m.Replaced)
	}
}
