package storetest

import (
	"context"
	"slices"
	"testing"

	"github.com/slackgate/slackgate/store"
)

func input(sessionID, text string) store.Input {
	return store.Input{SessionID: sessionID, Text: text, User: "U1", At: base}
}

func (h *harness) enqueue(t *testing.T, s store.Store, sessionID string, texts ...string) []store.Input {
	t.Helper()
	out := make([]store.Input, 0, len(texts))
	for _, text := range texts {
		in, err := s.Enqueue(h.ctx(t), input(sessionID, text))
		requireNoError(t, err, "Enqueue")
		if in.ID == "" {
			t.Fatal("Enqueue returned an input without an ID")
		}
		out = append(out, in)
	}
	return out
}

// claimNow claims with the suite timeout and fails if nothing is ready.
func (h *harness) claimNow(t *testing.T, s store.Store, worker string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx(t), h.cfg.timeout)
	defer cancel()
	id, err := s.Claim(ctx, worker)
	requireNoError(t, err, "Claim by "+worker)
	return id
}

func (h *harness) nextNow(t *testing.T, s store.Store, sessionID, worker string) store.Input {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx(t), h.cfg.timeout)
	defer cancel()
	in, err := s.NextInput(ctx, sessionID, worker)
	requireNoError(t, err, "NextInput")
	return in
}

// requireNothingToClaim shows that Claim blocks: it must run into its deadline.
func (h *harness) requireNothingToClaim(t *testing.T, s store.Store, worker string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx(t), blockFor)
	defer cancel()
	id, err := s.Claim(ctx, worker)
	if err == nil {
		t.Fatalf("Claim by %s returned %s; want nothing ready", worker, id)
	}
	requireIs(t, err, context.DeadlineExceeded, "Claim with nothing ready")
}

func requireInput(t *testing.T, want, got store.Input) {
	t.Helper()
	if got.ID != want.ID || got.SessionID != want.SessionID || got.Text != want.Text || got.User != want.User || !got.At.Equal(want.At) || got.Control != want.Control {
		t.Errorf("input = %+v, want %+v", got, want)
	}
}

func (h *harness) testQueue(t *testing.T) {
	t.Run("EnqueueThenClaimAndInputsInOrder", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		ins := h.enqueue(t, s, sid, "first", "second", "third")
		if ins[0].ID == ins[1].ID || ins[1].ID == ins[2].ID {
			t.Fatalf("Enqueue gave duplicate ids: %v", ins)
		}
		if got := h.claimNow(t, s, "w1"); got != sid {
			t.Fatalf("Claim = %s, want %s", got, sid)
		}
		for _, want := range ins {
			requireInput(t, want, h.nextNow(t, s, sid, "w1"))
		}
		// Several inputs made the session ready once, not once per input.
		h.requireNothingToClaim(t, s, "w2")
	})
	t.Run("EnqueueKeepsAGivenID", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		in := input(sid, "hello")
		in.ID = uniq("in")
		got, err := s.Enqueue(h.ctx(t), in)
		requireNoError(t, err, "Enqueue")
		if got.ID != in.ID {
			t.Fatalf("Enqueue changed the id to %s, want %s", got.ID, in.ID)
		}
		h.claimNow(t, s, "w1")
		requireInput(t, in, h.nextNow(t, s, sid, "w1"))
	})
	t.Run("OwnedSessionIsNotClaimableAndInputsGoToOwner", func(t *testing.T) {
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		first := h.enqueue(t, s1, sid, "first")[0]
		if got := h.claimNow(t, s1, "A"); got != sid {
			t.Fatalf("Claim = %s, want %s", got, sid)
		}
		requireInput(t, first, h.nextNow(t, s1, sid, "A"))
		// While A owns it, new input goes to A's NextInput, not to the ready queue.
		later := h.enqueue(t, s2, sid, "follow-up")[0]
		h.requireNothingToClaim(t, s2, "B")
		requireInput(t, later, h.nextNow(t, s1, sid, "A"))
	})
	t.Run("NextInputBlocksUntilEnqueued", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		h.enqueue(t, s1, sid, "first")
		h.claimNow(t, s1, "A")
		h.nextNow(t, s1, sid, "A")
		next := goCall(t, ctx, func(ctx context.Context) (store.Input, error) { return s1.NextInput(ctx, sid, "A") })
		requireBlocked(t, next, "NextInput on an empty inbox")
		want := h.enqueue(t, s2, sid, "second")[0]
		res := await(t, h, next, "NextInput after Enqueue")
		requireNoError(t, res.err, "NextInput")
		requireInput(t, want, res.value)
	})
	t.Run("ControlInputKeepsItsKindInOrderAndThroughRequeue", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		prompt := h.enqueue(t, s1, sid, "run the tests")[0]
		stop, err := s2.Enqueue(ctx, store.Input{SessionID: sid, Control: store.ControlInterrupt, User: "U2", At: base})
		requireNoError(t, err, "Enqueue control input")
		if stop.ID == "" || stop.ID == prompt.ID {
			t.Fatalf("Enqueue gave the control input id %q (prompt's is %q)", stop.ID, prompt.ID)
		}
		h.claimNow(t, s1, "A")
		requireInput(t, prompt, h.nextNow(t, s1, sid, "A"))
		got := h.nextNow(t, s1, sid, "A")
		if got.Control != store.ControlInterrupt || got.Text != "" {
			t.Fatalf("control input came out as Control=%q Text=%q, want Control=%q and no text", got.Control, got.Text, store.ControlInterrupt)
		}
		requireInput(t, stop, got)
		// Put back and taken again by the next owner, it is still a control input.
		requireNoError(t, s1.Requeue(ctx, got, "A"), "Requeue control input")
		requireNoError(t, s1.Release(ctx, sid, "A"), "Release")
		h.claimNow(t, s2, "B")
		requireInput(t, stop, h.nextNow(t, s2, sid, "B"))
	})
	t.Run("NextInputHonoursContext", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		h.enqueue(t, s, sid, "first")
		h.claimNow(t, s, "A")
		h.nextNow(t, s, sid, "A")
		ctx, cancel := context.WithCancel(h.ctx(t))
		next := goCall(t, ctx, func(ctx context.Context) (store.Input, error) { return s.NextInput(ctx, sid, "A") })
		requireBlocked(t, next, "NextInput on an empty inbox")
		cancel()
		res := await(t, h, next, "NextInput after cancel")
		requireIs(t, res.err, context.Canceled, "NextInput after cancel")
	})
	t.Run("ReleaseWithInputsLeftMakesClaimableAgain", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		ins := h.enqueue(t, s, sid, "one", "two")
		h.claimNow(t, s, "A")
		requireInput(t, ins[0], h.nextNow(t, s, sid, "A"))
		requireNoError(t, s.Release(h.ctx(t), sid, "A"), "Release")
		if got := h.claimNow(t, s, "B"); got != sid {
			t.Fatalf("Claim by B = %s, want %s", got, sid)
		}
		requireInput(t, ins[1], h.nextNow(t, s, sid, "B"))
	})
	t.Run("RequeuedInputComesOutFirstForTheNextOwner", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		ins := h.enqueue(t, s1, sid, "one", "two")
		h.claimNow(t, s1, "A")
		taken := h.nextNow(t, s1, sid, "A")
		requireInput(t, ins[0], taken)
		requireIs(t, s2.Requeue(ctx, taken, "B"), store.ErrNotOwner, "Requeue by a non-owner")
		requireNoError(t, s2.Requeue(ctx, taken, "A"), "Requeue")
		requireNoError(t, s1.Release(ctx, sid, "A"), "Release")
		if got := h.claimNow(t, s2, "B"); got != sid {
			t.Fatalf("Claim by B = %s, want %s", got, sid)
		}
		requireInput(t, ins[0], h.nextNow(t, s2, sid, "B"))
		requireInput(t, ins[1], h.nextNow(t, s2, sid, "B"))
	})
	t.Run("RequeueIntoAnEmptyInboxWorksTwice", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		in := h.enqueue(t, s, sid, "only")[0]
		h.claimNow(t, s, "A")
		for range 2 {
			requireInput(t, in, h.nextNow(t, s, sid, "A"))
			requireNoError(t, s.Requeue(ctx, in, "A"), "Requeue")
		}
		requireInput(t, in, h.nextNow(t, s, sid, "A"))
	})
	t.Run("ReleaseWithEmptyInboxIsNotReady", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		h.enqueue(t, s, sid, "one")
		h.claimNow(t, s, "A")
		h.nextNow(t, s, sid, "A")
		requireNoError(t, s.Release(h.ctx(t), sid, "A"), "Release")
		h.requireNothingToClaim(t, s, "B")
		// The next input makes it ready again.
		in := h.enqueue(t, s, sid, "two")[0]
		if got := h.claimNow(t, s, "B"); got != sid {
			t.Fatalf("Claim by B = %s, want %s", got, sid)
		}
		requireInput(t, in, h.nextNow(t, s, sid, "B"))
	})
	t.Run("NonOwnerIsRefused", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		h.enqueue(t, s, sid, "one", "two")
		h.claimNow(t, s, "A")
		_, err := s.NextInput(ctx, sid, "B")
		requireIs(t, err, store.ErrNotOwner, "NextInput by a non-owner")
		requireIs(t, s.Release(ctx, sid, "B"), store.ErrNotOwner, "Release by a non-owner")
		requireIs(t, s.Release(ctx, uniq("never-claimed"), "A"), store.ErrNotOwner, "Release of an unclaimed session")
		_, err = s.NextInput(ctx, uniq("never-claimed"), "A")
		requireIs(t, err, store.ErrNotOwner, "NextInput of an unclaimed session")
		// The refusals changed nothing: A still owns it and gets its input.
		if got := h.nextNow(t, s, sid, "A"); got.Text != "one" {
			t.Errorf("NextInput by the owner = %q, want %q", got.Text, "one")
		}
		requireNoError(t, s.Release(ctx, sid, "A"), "Release")
		_, err = s.NextInput(ctx, sid, "A")
		requireIs(t, err, store.ErrNotOwner, "NextInput after Release")
		requireIs(t, s.Release(ctx, sid, "A"), store.ErrNotOwner, "second Release")
	})
	t.Run("ClaimBlocksUntilEnqueued", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		claim := goCall(t, ctx, func(ctx context.Context) (string, error) { return s1.Claim(ctx, "A") })
		requireBlocked(t, claim, "Claim with nothing ready")
		sid := uniq("sess")
		h.enqueue(t, s2, sid, "wake up")
		res := await(t, h, claim, "Claim after Enqueue")
		requireNoError(t, res.err, "Claim")
		if res.value != sid {
			t.Fatalf("Claim = %s, want %s", res.value, sid)
		}
	})
	t.Run("ClaimHonoursContext", func(t *testing.T) {
		s := h.newStore(t)
		ctx, cancel := context.WithCancel(h.ctx(t))
		claim := goCall(t, ctx, func(ctx context.Context) (string, error) { return s.Claim(ctx, "A") })
		requireBlocked(t, claim, "Claim with nothing ready")
		cancel()
		res := await(t, h, claim, "Claim after cancel")
		requireIs(t, res.err, context.Canceled, "Claim after cancel")
		// The cancelled claim took nothing: a later input is still claimable.
		sid := uniq("sess")
		h.enqueue(t, s, sid, "x")
		if got := h.claimNow(t, s, "B"); got != sid {
			t.Fatalf("Claim = %s, want %s", got, sid)
		}
	})
	t.Run("ConcurrentClaimsTakeEachSessionOnce", func(t *testing.T) {
		const n = 8
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		claims := make([]<-chan result[string], n)
		for i := range claims {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			worker := "w" + string(rune('a'+i))
			claims[i] = goCall(t, ctx, func(ctx context.Context) (string, error) { return s.Claim(ctx, worker) })
		}
		want := make([]string, n)
		for i := range want {
			want[i] = uniq("sess")
			h.enqueue(t, s1, want[i], "x")
		}
		var got []string
		for _, c := range claims {
			res := await(t, h, c, "Claim")
			requireNoError(t, res.err, "Claim")
			got = append(got, res.value)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want each of %v once", got, want)
		}
	})
	t.Run("OwnedListsClaimedSessions", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		worker := uniq("worker")
		got, err := s.Owned(ctx, worker)
		requireNoError(t, err, "Owned")
		if len(got) != 0 {
			t.Fatalf("Owned before any claim = %v", got)
		}
		a, b := uniq("sess-a"), uniq("sess-b")
		h.enqueue(t, s, a, "x")
		h.enqueue(t, s, b, "y")
		h.claimNow(t, s, worker)
		h.claimNow(t, s, worker)
		got, err = s.Owned(ctx, worker)
		requireNoError(t, err, "Owned")
		slices.Sort(got)
		want := []string{a, b}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("Owned = %v, want %v", got, want)
		}
		requireNoError(t, s.Release(ctx, a, worker), "Release")
		got, err = s.Owned(ctx, worker)
		requireNoError(t, err, "Owned")
		if !slices.Equal(got, []string{b}) {
			t.Fatalf("Owned after releasing %s = %v, want [%s]", a, got, b)
		}
		other, err := s.Owned(ctx, uniq("other-worker"))
		requireNoError(t, err, "Owned")
		if len(other) != 0 {
			t.Fatalf("Owned by another worker = %v", other)
		}
	})
}
