package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testCards(t *testing.T) {
	t.Run("AClaimStandsUntilItLapses", h.testCardClaimLapses)
	t.Run("OneOfRacingStepsTakes", h.testCardRace)
	t.Run("ClicksAreRecordedWhilePending", h.testCardClicks)
	t.Run("AClicksOutcomeIsSaidOnce", h.testCardShown)
	t.Run("TheEditedInputIsAttachedAndCopiesAnnouncedOnce", h.testCardInputAttached)
	t.Run("TheStateOutlivesTheDecisionAndIsListed", h.testCardStateKept)
	t.Run("Validation", h.testCardValidation)
}

// digestOf is a DecisionDigest for the suite: the decision signed with sig.
func digestOf(sig string) string {
	return store.DecisionDigest(store.Decision{Signature: []byte(sig)})
}

func (h *harness) testCardClaimLapses(t *testing.T) {
	s1, s2 := h.pair(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s1)
	const ttl = 50 * time.Millisecond
	claim := store.CardMove{Step: store.CardClaimed, TTL: ttl}
	start := time.Now()
	took, err := s1.MoveCard(ctx, r.ID, claim)
	requireNoError(t, err, "MoveCard claim")
	if !took {
		t.Fatal("the first claim of a card did not take")
	}
	got, err := s1.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if until := got.CardState.ClaimedUntil; until.Before(start.Add(ttl-time.Second)) || until.After(time.Now().Add(ttl+time.Second)) {
		t.Errorf("ClaimedUntil = %v, want about %v", until, start.Add(ttl))
	}
	again, err := s2.MoveCard(ctx, r.ID, claim)
	requireNoError(t, err, "MoveCard claim again")
	// Only meaningful while the ttl surely has not passed.
	if elapsed := time.Since(start); again && elapsed < ttl {
		t.Fatalf("a second claim after %v took, want refused within the ttl %v", elapsed, ttl)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		took, err := s2.MoveCard(ctx, r.ID, claim)
		requireNoError(t, err, "MoveCard claim")
		if took {
			// Allow a little for a server clock that counts whole milliseconds.
			if elapsed := time.Since(start); elapsed < ttl-5*time.Millisecond {
				t.Fatalf("the claim lapsed after %v, before its ttl %v", elapsed, ttl)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim still stands %v after its ttl %v", time.Since(start), ttl)
		}
		time.Sleep(5 * time.Millisecond) // polls a deadline; correctness does not depend on it
	}
}

func (h *harness) testCardRace(t *testing.T) {
	const n = 20
	for _, m := range []store.CardMove{
		{Step: store.CardClaimed, TTL: time.Hour},
		{Step: store.CardShownByClick, Decision: digestOf("sig-1")},
		{Step: store.CardInputAttached},
		{Step: store.CardAnnounced},
	} {
		t.Run(string(m.Step), func(t *testing.T) {
			s1, s2 := h.pair(t)
			ctx := h.ctx(t)
			r := createRequest(t, ctx, s1)
			won := racing(t, n, s1, s2, func(s store.Store, _ int) (bool, error) { return s.MoveCard(ctx, r.ID, m) }, "MoveCard")
			if won != 1 {
				t.Errorf("%d of %d racing %s steps took, want exactly 1", won, n, m.Step)
			}
		})
	}
}

func (h *harness) testCardClicks(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	d1, d2 := digestOf("sig-1"), digestOf("sig-2")
	for _, d := range []string{d1, d2, d1} {
		took, err := s.MoveCard(ctx, r.ID, store.CardMove{Step: store.CardClicked, Decision: d})
		requireNoError(t, err, "MoveCard clicked")
		if !took {
			t.Errorf("a click's claim on a pending request did not take")
		}
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if want := []string{d1, d2}; !slices.Equal(got.CardState.Clicks, want) {
		t.Errorf("clicks = %v, want %v (each once, in order)", got.CardState.Clicks, want)
	}
	if !got.CardState.Clicked(d2) || got.CardState.Clicked(digestOf("sig-3")) || got.CardState.Clicked("") {
		t.Errorf("Clicked does not tell the claimed decisions from others: %+v", got.CardState)
	}

	_, err = s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	d3 := digestOf("sig-3")
	took, err := s.MoveCard(ctx, r.ID, store.CardMove{Step: store.CardClicked, Decision: d3})
	requireNoError(t, err, "MoveCard clicked after Decide")
	if took {
		t.Error("a click's claim on a settled request took")
	}
	if got, _ := s.GetRequest(ctx, r.ID); got.CardState.Clicked(d3) {
		t.Errorf("a click's claim on a settled request was recorded: %+v", got.CardState)
	}
}

func (h *harness) testCardShown(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	d := digestOf("sig-1")
	_, err := s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	for i, tc := range []struct {
		step store.CardStep
		want bool
	}{
		{store.CardClickFailed, true},
		{store.CardShownByClick, false},
		{store.CardClickFailed, false},
	} {
		took, err := s.MoveCard(ctx, r.ID, store.CardMove{Step: tc.step, Decision: d})
		requireNoError(t, err, "MoveCard "+string(tc.step))
		if took != tc.want {
			t.Errorf("step %d, %s: took = %v, want %v", i, tc.step, took, tc.want)
		}
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if by := got.CardState.ShownBy(d); by != store.CardClickFailed {
		t.Errorf("ShownBy = %q, want the first word: %s", by, store.CardClickFailed)
	}
	if by := got.CardState.ShownBy(digestOf("sig-2")); by != "" {
		t.Errorf("ShownBy of another decision = %q, want none", by)
	}
}

func (h *harness) testCardInputAttached(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	for _, step := range []store.CardStep{store.CardInputAttached, store.CardAnnounced} {
		for i, want := range []bool{true, false} {
			took, err := s.MoveCard(ctx, r.ID, store.CardMove{Step: step})
			requireNoError(t, err, "MoveCard "+string(step))
			if took != want {
				t.Errorf("%s call %d: took = %v, want %v", step, i, took, want)
			}
		}
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if !got.CardState.InputAttached || !got.CardState.Announced {
		t.Errorf("card state %+v, want the input attached and the copies announced", got.CardState)
	}
}

func (h *harness) testCardStateKept(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	d := digestOf("sig-1")
	for _, m := range []store.CardMove{{Step: store.CardClaimed, TTL: time.Hour}, {Step: store.CardClicked, Decision: d}} {
		_, err := s.MoveCard(ctx, r.ID, m)
		requireNoError(t, err, "MoveCard "+string(m.Step))
	}
	_, err := s.SetCard(ctx, r.ID, store.MessageRef{Channel: "C1", TS: "1710000000.000100"})
	requireNoError(t, err, "SetCard")
	pend, err := s.ListPending(ctx, r.SessionID)
	requireNoError(t, err, "ListPending")
	if len(pend) != 1 || !pend[0].CardState.Clicked(d) || pend[0].CardState.ClaimedUntil.IsZero() {
		t.Errorf("ListPending does not carry the card's state: %+v", pend)
	}
	_, err = s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	_, err = s.MoveCard(ctx, r.ID, store.CardMove{Step: store.CardShownByClick, Decision: d})
	requireNoError(t, err, "MoveCard shown")
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if !got.CardState.Clicked(d) || got.CardState.ShownBy(d) != store.CardShownByClick || got.Card.IsZero() || got.Decision == nil {
		t.Errorf("after Decide: %+v, card %v, decision %v; want the state, the card and the decision", got.CardState, got.Card, got.Decision)
	}
}

func (h *harness) testCardValidation(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	d := digestOf("sig-1")
	for _, m := range []store.CardMove{
		{Step: store.CardClaimed, TTL: time.Minute},
		{Step: store.CardClicked, Decision: d},
		{Step: store.CardShownByClick, Decision: d},
		{Step: store.CardClickFailed, Decision: d},
		{Step: store.CardInputAttached},
		{Step: store.CardAnnounced},
	} {
		_, err := s.MoveCard(ctx, uniq("missing"), m)
		requireIs(t, err, store.ErrNotFound, "MoveCard "+string(m.Step)+" of an unknown request")
	}
	for _, m := range []store.CardMove{
		{Step: "posted"},
		{Step: store.CardClaimed},
		{Step: store.CardClaimed, TTL: -time.Second},
		{Step: store.CardClaimed, TTL: time.Minute, Decision: d},
		{Step: store.CardClicked},
		{Step: store.CardClicked, Decision: "not a digest"},
		{Step: store.CardShownByClick, Decision: d + " " + d},
		{Step: store.CardClickFailed, Decision: d, TTL: time.Minute},
		{Step: store.CardInputAttached, Decision: d},
		{Step: store.CardAnnounced, TTL: time.Minute},
	} {
		_, err := s.MoveCard(ctx, r.ID, m)
		requireIs(t, err, store.ErrInvalid, "MoveCard "+string(m.Step))
	}
	n := newRequest(uniq("sess"), 0)
	n.CardState.InputAttached = true
	requireIs(t, s.CreateRequest(ctx, n), store.ErrInvalid, "CreateRequest with a card's state")
}
