package bot

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// setCardDown is a store that cannot record where a card went, as when
// Redis goes away between Slack taking the card and SetCard.
type setCardDown struct{ store.Store }

func (setCardDown) SetCard(context.Context, string, store.MessageRef) error {
	return errors.New("redisstore: set card: connection refused")
}

func deployRequest(id string, s store.Session) store.Request {
	return store.Request{ID: id, SessionID: s.ID, CLIRequestID: "cli-" + id, Kind: store.KindTool, ToolName: "Bash",
		Input:     json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
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
