package bot

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// readCounter is the store as the bot sees it, counting the reads that
// every event used to repeat, by method.
type readCounter struct {
	store.Store
	mu     sync.Mutex
	counts map[string]int
}

func countReads(s store.Store) *readCounter { return &readCounter{Store: s, counts: map[string]int{}} }

func (c *readCounter) count(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[method]++
}

func (c *readCounter) reads(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[method]
}

func (c *readCounter) GetSession(ctx context.Context, id string) (store.Session, error) {
	c.count("GetSession")
	return c.Store.GetSession(ctx, id)
}

func (c *readCounter) ListPending(ctx context.Context, sessionID string) ([]store.Request, error) {
	if sessionID != "" {
		c.count("ListPending(session)")
	}
	return c.Store.ListPending(ctx, sessionID)
}

func (c *readCounter) CountPending(ctx context.Context, sessionID string) (int, error) {
	c.count("CountPending")
	return c.Store.CountPending(ctx, sessionID)
}

// TestToolEventsOfAKnownThreadReadNoSession: once the bot has read a
// session, its tool uses and results (several a turn) are folded into its
// thread without reading the session again: a session's thread never
// changes.
func TestToolEventsOfAKnownThreadReadNoSession(t *testing.T) {
	var st *readCounter
	h := newHarness(t, transportSocket, harnessOpts{wrap: func(s store.Store) store.Store { st = countReads(s); return st }})
	s := h.newSession(t, "sess-fold")
	ctx := testCtx(t)
	publish := h.publisher(t, s)
	publish(store.Event{Type: store.EventSessionStarted})
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("Working")); err != nil {
		t.Fatal("no status line:", err)
	}
	before := st.reads("GetSession")
	publish(store.Event{Type: store.EventToolUse, Tool: "Bash", Input: json.RawMessage(`{"command":"make lint"}`)})
	publish(store.Event{Type: store.EventToolUse, Tool: "Read", Input: json.RawMessage(`{"file_path":"/srv/work/go.mod"}`)})
	publish(store.Event{Type: store.EventToolResult, Tool: "Bash", IsError: true, Text: "lint found 3 issues"})
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.HasText("lint found 3 issues") && m.HasText("go.mod")
	}); err != nil {
		t.Fatal("the fold does not show the tool events:", err)
	}
	if n := st.reads("GetSession") - before; n != 0 {
		t.Errorf("folding 3 tool events read the session %d times, want none", n)
	}
}

// TestStatusLineCountsPendingWithoutListingThem: the status line's count
// of waiting requests comes from CountPending; no request is read for it.
func TestStatusLineCountsPendingWithoutListingThem(t *testing.T) {
	var st *readCounter
	h := newHarness(t, transportSocket, harnessOpts{wrap: func(s store.Store) store.Store { st = countReads(s); return st }})
	r, card := h.sessionWithRequest(t, "req-count")
	ctx := testCtx(t)
	s, err := h.st.GetSession(ctx, r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("Waiting for approval (1)")); err != nil {
		t.Fatal("the status line never counted the card:", err)
	}
	if err := h.fake.Click(ctx, "U1", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	h.waitSettled(t, r, card)
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.HasText("Working") && m.HasText("Session `")
	}); err != nil {
		t.Fatal("the status line never went back to working:", err)
	}
	if n := st.reads("ListPending(session)"); n != 0 {
		t.Errorf("the status line listed the session's requests %d times, want none", n)
	}
	if n := st.reads("CountPending"); n < 2 {
		t.Errorf("CountPending read %d times, want one for the card and one for its outcome", n)
	}
}

// settledAtSetCard is a store in which every request is settled (by
// another replica, say) just before its card is recorded, once its
// settled event can no longer find a card to show the outcome on.
type settledAtSetCard struct{ store.Store }

func (s settledAtSetCard) SetCard(ctx context.Context, id string, card store.MessageRef) (bool, error) {
	d := store.Decision{Outcome: store.OutcomeCancelled, At: time.Now(), Message: "withdrawn by Claude"}
	if _, err := s.Decide(ctx, id, d); err != nil {
		return false, err
	}
	return s.Store.SetCard(ctx, id, card)
}

// TestCardSettledBeforeItWasRecordedShowsTheOutcome: SetCard reports the
// request settled, and the card shows how.
func TestCardSettledBeforeItWasRecordedShowsTheOutcome(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{wrap: func(s store.Store) store.Store { return settledAtSetCard{s} }})
	r, card := h.sessionWithRequest(t, "req-raced")
	got, final := h.waitSettled(t, r, card)
	if got.Decision.Outcome != store.OutcomeCancelled || got.Card != (store.MessageRef{Channel: card.Channel, TS: card.TS}) {
		t.Errorf("request = %+v, want cancelled with card %+v", got, card.Ref())
	}
	if !final.HasText("withdrawn by Claude") {
		t.Errorf("the card does not show the outcome:\n%s", final.AllText())
	}
}
