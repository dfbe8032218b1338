package bot

// What the bot does when it (or its store) dies between Slack taking a
// write and the store recording it.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// setCardDown is a store that cannot record where a card went, as when
// Redis goes away between Slack taking the card and SetCard.
type setCardDown struct{ store.Store }

func (setCardDown) SetCard(context.Context, string, store.MessageRef) (bool, error) {
	return false, errors.New("redisstore: set card: connection refused")
}

func deployRequest(id string, s store.Session) store.Request {
	return store.Request{ID: id, SessionID: s.ID, CLIRequestID: "cli-" + id, Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
	},
		CreatedAt: time.Now().Add(-time.Minute)} // the reconciler leaves young requests to the event path
}

// recordedCard waits until request id has a card in the store, polling:
// the store has no change notification for SetCard.
func recordedCard(t *testing.T, h *harness, id string) store.Request {
	t.Helper()
	ctx := testCtx(t)
	for {
		r, err := h.st.GetRequest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Card.IsZero() {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("request %s never got its card recorded", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestReconcilerRecordsACardAlreadyInTheThread: a card Slack took but the
// store never recorded (its bot could not, then died) is found in the
// thread by the next bot's reconciler and recorded, not posted again.
func TestReconcilerRecordsACardAlreadyInTheThread(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{
		cfg:  func(c *Config) { c.CardClaimTTL = time.Second },
		wrap: func(s store.Store) store.Store { return setCardDown{s} },
	})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-unrecorded")
	r := deployRequest("req-unrecorded", s)
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.FromBot() && hasButton(m, "Approve")
	}); err != nil {
		t.Fatalf("no card: %v", err)
	}
	h.stop()

	startSecondBot(t, h, nil, func(c *Config) { c.ReconcileInterval = 100 * time.Millisecond })
	recordedCard(t, h, r.ID)
	if n := countCards(h, "C1", s.Thread.TS); n != 1 {
		t.Errorf("%d cards for one request, want 1", n)
	}
}

// TestCardPostWhoseAnswerWasLostIsNotSentTwice: Slack posts the card but
// the answer never arrives; before sending it again the bot finds it in
// the thread and records it.
func TestCardPostWhoseAnswerWasLostIsNotSentTwice(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	s := h.newSession(t, "sess-lost-answer")
	h.fake.LoseAnswer("chat.postMessage", func(c fakeslack.Call) bool { return c.Params.Get("thread_ts") == s.Thread.TS })
	card := h.createRequest(t, s, deployRequest("req-lost-answer", s), "Approve")
	if r := recordedCard(t, h, "req-lost-answer"); r.Card.TS != card.TS {
		t.Errorf("recorded card %v, want the one Slack took (%s)", r.Card, card.TS)
	}
	if n := countCards(h, "C1", s.Thread.TS); n != 1 {
		t.Errorf("%d cards for one request, want 1", n)
	}
}

// TestAClickAdoptsACardTheStoreHasNoRecordOf: the first click on a card
// that Slack shows but the store never recorded makes it the request's
// card, so the outcome is shown on it.
func TestAClickAdoptsACardTheStoreHasNoRecordOf(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{wrap: func(s store.Store) store.Store { return setCardDown{s} }})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-adopt")
	card := h.createRequest(t, s, deployRequest("req-adopt", s), "Approve")
	h.stop()

	startSecondBot(t, h, nil, nil)
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Approved") && len(m.Buttons()) == 0
	}); err != nil {
		now, _ := h.fake.Message(card.Ref())
		t.Fatalf("the clicked card never showed its outcome: %v\n%s", err, now.AllText())
	}
	r, err := h.st.GetRequest(ctx, "req-adopt")
	if err != nil {
		t.Fatal(err)
	}
	if r.Card != (store.MessageRef{Channel: card.Channel, TS: card.TS}) || r.Pending() {
		t.Errorf("request now %+v, want decided with the clicked card recorded", r)
	}
}

// TestOutcomeEditLeftInTheOutboxIsMadeByTheNextBot: the card's outcome
// edit waits in the outbox (Slack said 429) while the consumer moves on,
// and the bot stops before it goes out. The settled event was left
// unacknowledged, so the bot started again makes the edit.
func TestOutcomeEditLeftInTheOutboxIsMadeByTheNextBot(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	h.fake.AddChannel("C2", "random")
	ctx := testCtx(t)
	s := h.newSession(t, "sess-outcome")
	card := h.createRequest(t, s, deployRequest("req-outcome", s), "Approve")
	// Clicked only once the card is recorded: a click before that adopts
	// the card (another test's fault), and the event showing it would
	// then edit it into the rate limit below.
	recordedCard(t, h, "req-outcome")
	// The click's response_url fails, so the outcome is the settled
	// event's chat.update, which the rate limit keeps in the outbox.
	h.fake.FailNext(fakeslack.ResponseURLMethod, 1, "used_url")
	h.fake.RateLimit("chat.update", 1, 30*time.Second)
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitCall(ctx, func(c fakeslack.Call) bool {
		return c.Method == "chat.update" && c.Status == http.StatusTooManyRequests
	}); err != nil {
		t.Fatal(err)
	}
	// An event of another channel shown means the consumer has moved on
	// from the settled one.
	h.consumerMovedOn(t)
	h.stop()
	if now, _ := h.fake.Message(card.Ref()); len(now.Buttons()) == 0 {
		t.Fatalf("the outcome reached the card before the stop; the test needs it left in the outbox: %s", now.AllText())
	}

	startSecondBot(t, h, nil, func(c *Config) { c.ConsumerName = "bot-test" }) // the same bot, restarted
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Approved") && len(m.Buttons()) == 0
	}); err != nil {
		now, _ := h.fake.Message(card.Ref())
		t.Fatalf("the restarted bot never showed the outcome: %v\n%s", err, now.AllText())
	}
}
