package bot

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// TestEventsPublishedBeforeTheBotStartsAreShown: on a fresh deployment a
// worker may publish before any bot ever ran; the bot's consumer group,
// created later, still starts at those events.
func TestEventsPublishedBeforeTheBotStartsAreShown(t *testing.T) {
	const thread = "1700000200.000001"
	seed := func(tb testing.TB, st store.Store) {
		ctx := testCtx(t)
		now := time.Now()
		s := store.Session{ID: "sess-early", Thread: store.MessageRef{Channel: "C1", TS: thread}, WorkDir: testWorkDir,
			StartedBy: "U1", State: store.SessionRunning, CreatedAt: now, UpdatedAt: now}
		if err := st.CreateSession(ctx, s); err != nil {
			tb.Fatal(err)
		}
		if _, err := st.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: s.ID, At: now, Text: "said before any bot ran"}); err != nil {
			tb.Fatal(err)
		}
	}
	h := newHarness(t, transportSocket, harnessOpts{seed: seed})
	if _, err := h.fake.WaitThread(testCtx(t), "C1", thread, fakeslack.Text("said before any bot ran")); err != nil {
		t.Error(err)
	}
}
