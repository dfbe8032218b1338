package bot

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/slackgate/slackgate/store"
)

// parseMention is the app_mention event_callback Slack would deliver, as
// the transports hand it on.
func parseMention(t *testing.T, eventID, ts string) slackevents.EventsAPIEvent {
	t.Helper()
	ev, err := slackevents.ParseEvent(json.RawMessage(mentionBody(eventID, ts)), slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestEventSeenByAnotherReplicaIsSkipped: replicas share the store's memory
// of event ids, so a delivery another replica already took does nothing
// here, while a new one runs.
func TestEventSeenByAnotherReplicaIsSkipped(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{})
	ctx := testCtx(t)
	// The other replica's bot records the id through the same store.
	if first, err := h.st.FirstSeen(ctx, "slack-event:EvOther", time.Hour); err != nil || !first {
		t.Fatalf("FirstSeen = %v, %v", first, err)
	}
	tests := []struct {
		name, eventID, ts string
		runs              bool
	}{
		{"delivery taken by another replica is skipped", "EvOther", "1700000101.000001", false},
		{"new delivery runs", "EvNew", "1700000102.000001", true},
		{"its redelivery is skipped", "EvNew", "1700000103.000001", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.bot.events.dispatch(ctx, parseMention(t, tt.eventID, tt.ts)) // returns when done
			_, err := h.st.SessionByThread(ctx, store.MessageRef{Channel: "C1", TS: tt.ts})
			switch {
			case tt.runs && err != nil:
				t.Errorf("event %s started no session: %v", tt.eventID, err)
			case !tt.runs && !errors.Is(err, store.ErrNotFound):
				t.Errorf("event %s ran again (session lookup: %v)", tt.eventID, err)
			}
		})
	}
}

// dedupDown is the real store with FirstSeen failing, as when Redis is
// unreachable for that one call.
type dedupDown struct{ store.Store }

func (dedupDown) FirstSeen(context.Context, string, time.Duration) (bool, error) {
	return false, errors.New("redisstore: first seen: connection refused")
}

// TestEventRunsWhenDedupStoreFails: if the store cannot say whether an event
// was seen, the event is handled; a lost mention is worse than a rare
// duplicate.
func TestEventRunsWhenDedupStoreFails(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{wrap: func(s store.Store) store.Store { return dedupDown{s} }})
			ts, err := h.fake.Mention(testCtx(t), "U1", "C1", "still works")
			if err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if s.Thread.TS != ts || in.Text != "still works" {
				t.Errorf("session %+v with input %+v, want the mention's", s.Thread, in)
			}
		})
	}
}
