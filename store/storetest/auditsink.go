package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// AuditSinksBackend is a store, a second client on its data, and what the
// audit sinks suite needs to let a claim lapse.
type AuditSinksBackend struct {
	Store store.Store
	// Second is another client on the same data (a single-process
	// backend gives Store again).
	Second store.Store
	// TTL is the claim ttl the suite uses: short on a backend whose clock
	// cannot be moved.
	TTL time.Duration
	// Pass lets d pass on the store's clock (see WorkersBackend.Pass).
	Pass func(tb testing.TB, d time.Duration)
}

// RunAuditSinks runs the suite of store.AuditSinks. newBackend is called
// once per subtest with a fresh, empty store; the subtests run in
// parallel, so a backend whose time is real waits out its lapses once.
func RunAuditSinks(t *testing.T, newBackend func(tb testing.TB) AuditSinksBackend) {
	h := &harness{cfg: config{timeout: 15 * time.Second}}
	t.Run("FirstClaimHoldsAnUnstartedSink", func(t *testing.T) { t.Parallel(); h.testSinkFirstClaim(t, newBackend(t)) })
	t.Run("OneHolderUntilItsClaimLapses", func(t *testing.T) { t.Parallel(); h.testSinkOneHolder(t, newBackend(t)) })
	t.Run("OnlyTheHolderMovesTheCursor", func(t *testing.T) { t.Parallel(); h.testSinkCursor(t, newBackend(t)) })
	t.Run("ReleaseFreesItAtOnce", func(t *testing.T) { t.Parallel(); h.testSinkRelease(t, newBackend(t)) })
	t.Run("OneOfRacingClaimantsHolds", func(t *testing.T) { t.Parallel(); h.testSinkRace(t, newBackend(t)) })
	t.Run("Validation", func(t *testing.T) { t.Parallel(); h.testSinkValidation(t, newBackend(t)) })
}

func (h *harness) claimSink(t *testing.T, s store.Store, sink, holder string, ttl time.Duration) store.AuditSink {
	t.Helper()
	got, err := s.ClaimAuditSink(h.ctx(t), sink, holder, ttl)
	requireNoError(t, err, "ClaimAuditSink "+sink+" by "+holder)
	return got
}

func (h *harness) testSinkFirstClaim(t *testing.T, b AuditSinksBackend) {
	got := h.claimSink(t, b.Store, "channel", "bot-a", b.TTL)
	if got.Holder != "bot-a" || got.Started || got.Cursor != (store.AuditCursor{}) {
		t.Fatalf("first claim = %+v, want held by bot-a, not started", got)
	}
	// Sinks are independent: another sink is free for another holder.
	if other := h.claimSink(t, b.Second, "webhook", "bot-b", b.TTL); other.Holder != "bot-b" {
		t.Fatalf("claim of another sink = %+v, want held by bot-b", other)
	}
	if again := h.claimSink(t, b.Store, "channel", "bot-a", b.TTL); again.Holder != "bot-a" {
		t.Fatalf("renewal = %+v, want still bot-a's", again)
	}
}

func (h *harness) testSinkOneHolder(t *testing.T, b AuditSinksBackend) {
	h.claimSink(t, b.Store, "channel", "bot-a", b.TTL)
	if got := h.claimSink(t, b.Second, "channel", "bot-b", b.TTL); got.Holder != "bot-a" {
		t.Fatalf("a second claimant while bot-a's claim is live got %+v, want bot-a to stay the holder", got)
	}
	// Renewing pushes the lapse out: past the first ttl bot-a still holds it.
	b.Pass(t, b.TTL/2)
	h.claimSink(t, b.Store, "channel", "bot-a", b.TTL)
	b.Pass(t, b.TTL*3/4)
	if got := h.claimSink(t, b.Second, "channel", "bot-b", b.TTL); got.Holder != "bot-a" {
		t.Fatalf("after a renewal bot-b's claim got %+v, want bot-a's renewed claim to stand", got)
	}
	b.Pass(t, b.TTL+b.TTL/4)
	if got := h.claimSink(t, b.Second, "channel", "bot-b", b.TTL); got.Holder != "bot-b" {
		t.Fatalf("after bot-a's claim lapsed bot-b's claim got %+v, want bot-b to hold it", got)
	}
	if got := h.claimSink(t, b.Store, "channel", "bot-a", b.TTL); got.Holder != "bot-b" {
		t.Fatalf("the lapsed holder's claim got %+v, want bot-b to stay the holder", got)
	}
}

func (h *harness) testSinkCursor(t *testing.T, b AuditSinksBackend) {
	ctx := h.ctx(t)
	h.claimSink(t, b.Store, "webhook", "bot-a", b.TTL)
	cur := store.AuditCursor{Entry: "entry-7", Seq: 7, At: base, Note: "1700000000.000100"}
	requireNoError(t, b.Store.AdvanceAuditSink(ctx, "webhook", "bot-a", cur), "AdvanceAuditSink by the holder")
	err := b.Second.AdvanceAuditSink(ctx, "webhook", "bot-b", store.AuditCursor{Entry: "entry-9", Seq: 9})
	requireIs(t, err, store.ErrNotOwner, "AdvanceAuditSink by another")

	got := h.claimSink(t, b.Second, "webhook", "bot-a", b.TTL)
	if !got.Started || got.Cursor.Entry != cur.Entry || got.Cursor.Seq != cur.Seq || !got.Cursor.At.Equal(cur.At) || got.Cursor.Note != cur.Note {
		t.Fatalf("cursor read back through another client = %+v, want %+v, started", got, cur)
	}
	// A holder whose claim lapsed moves nothing, even before anyone else
	// claims: it may have been cut off while another took over.
	b.Pass(t, b.TTL+b.TTL/4)
	err = b.Store.AdvanceAuditSink(ctx, "webhook", "bot-a", store.AuditCursor{Entry: "entry-8", Seq: 8})
	requireIs(t, err, store.ErrNotOwner, "AdvanceAuditSink after the claim lapsed")
	got = h.claimSink(t, b.Second, "webhook", "bot-b", b.TTL)
	if got.Holder != "bot-b" || got.Cursor.Seq != 7 {
		t.Fatalf("the next holder found %+v, want the cursor at 7", got)
	}
}

func (h *harness) testSinkRelease(t *testing.T, b AuditSinksBackend) {
	ctx := h.ctx(t)
	h.claimSink(t, b.Store, "channel", "bot-a", b.TTL)
	requireNoError(t, b.Second.ReleaseAuditSink(ctx, "channel", "bot-b"), "ReleaseAuditSink by another")
	if got := h.claimSink(t, b.Second, "channel", "bot-b", b.TTL); got.Holder != "bot-a" {
		t.Fatalf("someone else's release freed bot-a's claim: %+v", got)
	}
	requireNoError(t, b.Store.ReleaseAuditSink(ctx, "channel", "bot-a"), "ReleaseAuditSink")
	if got := h.claimSink(t, b.Second, "channel", "bot-b", b.TTL); got.Holder != "bot-b" {
		t.Fatalf("after bot-a released it bot-b's claim got %+v", got)
	}
	err := b.Store.AdvanceAuditSink(ctx, "channel", "bot-a", store.AuditCursor{Entry: "x"})
	requireIs(t, err, store.ErrNotOwner, "AdvanceAuditSink after releasing")
}

func (h *harness) testSinkRace(t *testing.T, b AuditSinksBackend) {
	const claimants = 20
	ctx := h.ctx(t)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders = map[string]int{}
		errs    []error
	)
	start := make(chan struct{})
	for i := range claimants {
		s := b.Store
		if i%2 == 1 {
			s = b.Second
		}
		me := "bot-" + string(rune('a'+i))
		wg.Go(func() {
			<-start
			got, err := s.ClaimAuditSink(ctx, "webhook", me, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			holders[got.Holder]++
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("ClaimAuditSink failed: %v", errs)
	}
	if len(holders) != 1 {
		t.Fatalf("racing claimants were told of holders %v, want one holder for all", holders)
	}
}

func (h *harness) testSinkValidation(t *testing.T, b AuditSinksBackend) {
	ctx := h.ctx(t)
	for _, tc := range []struct {
		name string
		call func(context.Context) error
	}{
		{"claim of an empty name", func(ctx context.Context) error {
			_, err := b.Store.ClaimAuditSink(ctx, "", "bot-a", time.Minute)
			return err
		}},
		{"claim of a name with a brace", func(ctx context.Context) error {
			_, err := b.Store.ClaimAuditSink(ctx, "web}hook", "bot-a", time.Minute)
			return err
		}},
		{"claim by nobody", func(ctx context.Context) error {
			_, err := b.Store.ClaimAuditSink(ctx, "webhook", "", time.Minute)
			return err
		}},
		{"claim for no time", func(ctx context.Context) error {
			_, err := b.Store.ClaimAuditSink(ctx, "webhook", "bot-a", 0)
			return err
		}},
		{"advance by nobody", func(ctx context.Context) error {
			return b.Store.AdvanceAuditSink(ctx, "webhook", "", store.AuditCursor{})
		}},
		{"advance with a long note", func(ctx context.Context) error {
			long := make([]byte, store.MaxAuditCursorNote+1)
			return b.Store.AdvanceAuditSink(ctx, "webhook", "bot-a", store.AuditCursor{Note: string(long)})
		}},
		{"release of a bad name", func(ctx context.Context) error {
			return b.Store.ReleaseAuditSink(ctx, "Web Hook", "bot-a")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireIs(t, tc.call(ctx), store.ErrInvalid, tc.name)
		})
	}
	if got := h.claimSink(t, b.Store, "webhook", "bot-a", time.Minute); got.Started {
		t.Fatalf("refused calls stored a cursor: %+v", got)
	}
}
