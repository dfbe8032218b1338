package bot

import (
	"context"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

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
