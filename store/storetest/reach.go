package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testReach(t *testing.T) {
	t.Run("AddCopyRecordsEachCopyOnceAndTellsPending", h.testAddCopy)
	t.Run("MarkReachTakesEachStepOnce", h.testMarkReach)
	t.Run("MarkReachRaceOneWinner", h.testMarkReachRace)
	t.Run("CreateRejectsARequestThatReachedPeople", func(t *testing.T) {
		s := h.newStore(t)
		r := newRequest(uniq("sess"), 0)
		r.Reach.Reminded = base
		requireIs(t, s.CreateRequest(h.ctx(t), r), store.ErrInvalid, "CreateRequest with a reach step")
	})
}

func (h *harness) testAddCopy(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	dm := store.MessageRef{Channel: "D1", TS: "1710000000.000100"}
	ch := store.MessageRef{Channel: "C2", TS: "1710000000.000200"}
	for _, ref := range []store.MessageRef{dm, ch, dm} {
		pending, err := s.AddCopy(ctx, r.ID, ref)
		requireNoError(t, err, "AddCopy")
		if !pending {
			t.Errorf("AddCopy on a pending request reports it settled")
		}
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if want := []store.MessageRef{dm, ch}; !slices.Equal(got.Reach.Copies, want) {
		t.Errorf("copies = %v, want %v (each once, in order)", got.Reach.Copies, want)
	}
	pend, err := s.ListPending(ctx, r.SessionID)
	requireNoError(t, err, "ListPending")
	if len(pend) != 1 || len(pend[0].Reach.Copies) != 2 {
		t.Errorf("ListPending does not carry the copies: %+v", pend)
	}

	_, err = s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	late := store.MessageRef{Channel: "D3", TS: "1710000000.000300"}
	pending, err := s.AddCopy(ctx, r.ID, late)
	requireNoError(t, err, "AddCopy after Decide")
	if pending {
		t.Errorf("AddCopy on a settled request reports it pending")
	}
	got, err = s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if len(got.Reach.Copies) != 3 || got.Decision == nil {
		t.Errorf("after Decide and AddCopy: copies %v, decision %v; want 3 copies and the decision", got.Reach.Copies, got.Decision)
	}

	_, err = s.AddCopy(ctx, uniq("missing"), dm)
	requireIs(t, err, store.ErrNotFound, "AddCopy unknown")
	_, err = s.AddCopy(ctx, r.ID, store.MessageRef{})
	requireIs(t, err, store.ErrInvalid, "AddCopy empty")
}

func (h *harness) testMarkReach(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	at := base.Add(10 * time.Minute)
	mark := func(m store.ReachMark, want bool) {
		t.Helper()
		took, err := s.MarkReach(ctx, r.ID, m)
		requireNoError(t, err, "MarkReach "+string(m.Step))
		if took != want {
			t.Errorf("MarkReach %s at %v = %v, want %v", m.Step, m.At, took, want)
		}
	}
	mark(store.ReachMark{Step: store.StepReminded, At: at}, true)
	mark(store.ReachMark{Step: store.StepReminded, At: at.Add(time.Minute)}, false)
	mark(store.ReachMark{Step: store.StepEscalated, At: at.Add(20 * time.Minute), To: []string{"S0ONCALL", "U9"}}, true)
	mark(store.ReachMark{Step: store.StepEscalated, At: at.Add(30 * time.Minute), To: []string{"U8"}}, false)
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if !got.Reach.Reminded.Equal(at) || !got.Reach.Escalated.Equal(at.Add(20*time.Minute)) ||
		!slices.Equal(got.Reach.EscalatedTo, []string{"S0ONCALL", "U9"}) {
		t.Errorf("reach = %+v, want the first reminder and escalation", got.Reach)
	}

	settled := createRequest(t, ctx, s)
	_, err = s.Decide(ctx, settled.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	took, err := s.MarkReach(ctx, settled.ID, store.ReachMark{Step: store.StepReminded, At: at})
	requireNoError(t, err, "MarkReach settled")
	if took {
		t.Errorf("MarkReach took a step of a settled request")
	}

	_, err = s.MarkReach(ctx, uniq("missing"), store.ReachMark{Step: store.StepReminded, At: at})
	requireIs(t, err, store.ErrNotFound, "MarkReach unknown")
	for _, bad := range []store.ReachMark{{Step: "poked", At: at}, {Step: store.StepReminded}, {Step: store.StepReminded, At: at, To: []string{"U1"}}} {
		_, err = s.MarkReach(ctx, r.ID, bad)
		requireIs(t, err, store.ErrInvalid, "MarkReach "+string(bad.Step))
	}
}

func (h *harness) testMarkReachRace(t *testing.T) {
	const n = 20
	s1, s2 := h.pair(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s1)
	won := racing(t, n, s1, s2, func(s store.Store, i int) (bool, error) {
		return s.MarkReach(ctx, r.ID, store.ReachMark{Step: store.StepEscalated, At: base.Add(time.Duration(i) * time.Second), To: []string{"U1"}})
	}, "MarkReach")
	if won != 1 {
		t.Errorf("%d of %d racing MarkReach calls took the step, want exactly 1", won, n)
	}
}

// racing makes n calls of take at once, alternating between s1 and s2,
// and returns how many of them took what they raced for; an error fails
// t, naming the call what.
func racing(t *testing.T, n int, s1, s2 store.Store, take func(s store.Store, i int) (bool, error), what string) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range n {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			took, err := take(s, i)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			if took {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return won
}
