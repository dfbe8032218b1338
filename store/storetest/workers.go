package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// WorkersBackend is a store and what the liveness suite needs to let a
// heartbeat lapse.
type WorkersBackend struct {
	Store store.Store
	// TTL is the heartbeat ttl the suite uses: short on a backend whose
	// clock cannot be moved.
	TTL time.Duration
	// Pass lets d pass on the store's clock: an embedded store advances its
	// injected clock; Redis, whose clock cannot be moved, lets d of real
	// time pass (its expiry is exact, so a ttl shorter than d has run out).
	Pass func(tb testing.TB, d time.Duration)
	// Remaining returns how long worker's heartbeat has left by the store's
	// clock (Redis: PTTL), so the suite checks Heartbeat set the ttl asked
	// for, not just "some" expiry.
	Remaining func(tb testing.TB, worker string) time.Duration
}

// RunWorkers runs the liveness suite (see store.Workers). newBackend is
// called once per subtest with a fresh, empty store.
//
// The subtests run in parallel, each on its own store: a backend whose
// time is real (Redis) waits out each lapse once, not once per subtest, so
// its TTL can leave room for a loaded machine.
func RunWorkers(t *testing.T, newBackend func(tb testing.TB) WorkersBackend) {
	h := &harness{cfg: config{timeout: 15 * time.Second}}
	t.Run("HeartbeatSetsItsTTL", func(t *testing.T) { t.Parallel(); h.testHeartbeatTTL(t, newBackend(t)) })
	t.Run("DeadOnlyWhenOwningAndLapsed", func(t *testing.T) { t.Parallel(); h.testDeadWorkers(t, newBackend(t)) })
	t.Run("TakeOverMovesOwnership", func(t *testing.T) { t.Parallel(); h.testTakeOver(t, newBackend(t)) })
	t.Run("TakeOverRefusesTheLiving", func(t *testing.T) { t.Parallel(); h.testTakeOverLiving(t, newBackend(t)) })
	t.Run("OneOfRacingTakeOversWins", func(t *testing.T) { t.Parallel(); h.testTakeOverRace(t, newBackend(t)) })
	t.Run("Validation", func(t *testing.T) { t.Parallel(); h.testWorkersValidation(t, newBackend(t)) })
}

// owning creates a session with one input and has worker claim it.
func (h *harness) owning(t *testing.T, s store.Store, worker string) string {
	t.Helper()
	sess := createSession(t, h.ctx(t), s)
	h.enqueue(t, s, sess.ID, "hello")
	if id := h.claimNow(t, s, worker); id != sess.ID {
		t.Fatalf("claimed %s, want %s", id, sess.ID)
	}
	return sess.ID
}

func (h *harness) dead(t *testing.T, s store.Store) []string {
	t.Helper()
	dead, err := s.DeadWorkers(h.ctx(t))
	requireNoError(t, err, "DeadWorkers")
	return dead
}

func (h *harness) testHeartbeatTTL(t *testing.T, b WorkersBackend) {
	ctx := h.ctx(t)
	requireNoError(t, b.Store.Heartbeat(ctx, "w1", b.TTL), "Heartbeat")
	if got := b.Remaining(t, "w1"); got <= 0 || got > b.TTL {
		t.Fatalf("heartbeat has %s left, want (0, %s]", got, b.TTL)
	}
	long := 10 * b.TTL
	requireNoError(t, b.Store.Heartbeat(ctx, "w1", long), "Heartbeat again")
	if got := b.Remaining(t, "w1"); got <= b.TTL || got > long {
		t.Fatalf("a second beat left %s, want (%s, %s]: each beat must push the lapse out", got, b.TTL, long)
	}
}

func (h *harness) testDeadWorkers(t *testing.T, b WorkersBackend) {
	s, ctx := b.Store, h.ctx(t)
	requireNoError(t, s.Heartbeat(ctx, "idle", b.TTL), "Heartbeat idle")
	requireNoError(t, s.Heartbeat(ctx, "busy", b.TTL), "Heartbeat busy")
	requireNoError(t, s.Heartbeat(ctx, "alive", 100*b.TTL), "Heartbeat alive")
	busy := h.owning(t, s, "busy")
	h.owning(t, s, "alive")
	h.owning(t, s, "silent") // never beat: dead from the start
	if got := h.dead(t, s); !slices.Equal(got, []string{"silent"}) {
		t.Fatalf("DeadWorkers before any lapse = %v, want [silent]", got)
	}
	b.Pass(t, 2*b.TTL)
	if got := h.dead(t, s); !slices.Equal(got, []string{"busy", "silent"}) {
		t.Fatalf("DeadWorkers after the lapse = %v, want [busy silent] (idle owns nothing, alive still beats)", got)
	}
	// A worker that gave back everything is no longer anyone's concern.
	requireNoError(t, s.Release(ctx, busy, "busy"), "Release")
	if got := h.dead(t, s); !slices.Equal(got, []string{"silent"}) {
		t.Fatalf("DeadWorkers after busy released = %v, want [silent]", got)
	}
	// A beat brings a worker back.
	requireNoError(t, s.Heartbeat(ctx, "silent", b.TTL), "Heartbeat silent")
	if got := h.dead(t, s); len(got) != 0 {
		t.Fatalf("DeadWorkers after silent beat = %v, want none", got)
	}
}

func (h *harness) testTakeOver(t *testing.T, b WorkersBackend) {
	s, ctx := b.Store, h.ctx(t)
	requireNoError(t, s.Heartbeat(ctx, "a", b.TTL), "Heartbeat a")
	requireNoError(t, s.Heartbeat(ctx, "b", 100*b.TTL), "Heartbeat b")
	id := h.owning(t, s, "a")
	h.enqueue(t, s, id, "next") // "hello" stays in the inbox too: a never took it
	b.Pass(t, 2*b.TTL)
	requireNoError(t, s.TakeOver(ctx, id, "a", "b"), "TakeOver")
	owned, err := s.Owned(ctx, "b")
	requireNoError(t, err, "Owned b")
	if !slices.Equal(owned, []string{id}) {
		t.Fatalf("Owned(b) = %v, want [%s]", owned, id)
	}
	owned, err = s.Owned(ctx, "a")
	requireNoError(t, err, "Owned a")
	if len(owned) != 0 {
		t.Fatalf("Owned(a) = %v after the takeover, want none", owned)
	}
	if got := h.dead(t, s); len(got) != 0 {
		t.Fatalf("DeadWorkers after the takeover = %v, want none: a owns nothing", got)
	}
	// The old owner lost every owner's right; the new one has them all.
	if err := s.Requeue(ctx, input(id, "x"), "a"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("Requeue by the dead owner = %v, want ErrNotOwner", err)
	}
	if in := h.nextNow(t, s, id, "b"); in.Text != "hello" {
		t.Fatalf("the new owner took %q first, want hello", in.Text)
	}
	// Released with input left, the session is ready for anyone.
	requireNoError(t, s.Release(ctx, id, "b"), "Release by b")
	if got := h.claimNow(t, s, "c"); got != id {
		t.Fatalf("claimed %s after the release, want %s", got, id)
	}
	// A second takeover of what moved on finds no dead owner.
	if err := s.TakeOver(ctx, id, "a", "b"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("TakeOver from a former owner = %v, want ErrNotOwner", err)
	}
}

func (h *harness) testTakeOverLiving(t *testing.T, b WorkersBackend) {
	s, ctx := b.Store, h.ctx(t)
	requireNoError(t, s.Heartbeat(ctx, "a", b.TTL), "Heartbeat a")
	id := h.owning(t, s, "a")
	if err := s.TakeOver(ctx, id, "a", "b"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("TakeOver from a living worker = %v, want ErrNotOwner", err)
	}
	b.Pass(t, 2*b.TTL)
	// Back before anyone took over: it keeps its session.
	requireNoError(t, s.Heartbeat(ctx, "a", 100*b.TTL), "Heartbeat a again")
	if err := s.TakeOver(ctx, id, "a", "b"); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("TakeOver from a worker that beats again = %v, want ErrNotOwner", err)
	}
	owned, err := s.Owned(ctx, "a")
	requireNoError(t, err, "Owned a")
	if !slices.Equal(owned, []string{id}) {
		t.Fatalf("Owned(a) = %v, want [%s]", owned, id)
	}
}

func (h *harness) testTakeOverRace(t *testing.T, b WorkersBackend) {
	s, ctx := b.Store, h.ctx(t)
	id := h.owning(t, s, "gone") // never beat
	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = s.TakeOver(ctx, id, "gone", "r"+string(rune('0'+i)))
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrNotOwner):
			t.Errorf("racer %d: %v, want nil or ErrNotOwner", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d racing takeovers succeeded, want exactly 1", won, racers)
	}
}

func (h *harness) testWorkersValidation(t *testing.T, b WorkersBackend) {
	s, ctx := b.Store, h.ctx(t)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Heartbeat empty worker", s.Heartbeat(ctx, "", time.Second)},
		{"Heartbeat zero ttl", s.Heartbeat(ctx, "w", 0)},
		{"TakeOver from itself", s.TakeOver(ctx, "sess", "w", "w")},
		{"TakeOver by nobody", s.TakeOver(ctx, "sess", "w", "")},
	} {
		if !errors.Is(tc.err, store.ErrInvalid) {
			t.Errorf("%s = %v, want ErrInvalid", tc.name, tc.err)
		}
	}
}
