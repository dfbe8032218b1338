package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// RetentionBackend is a store built with a short retention, and what the
// retention suite needs to let that retention pass and to weigh the store.
type RetentionBackend struct {
	Store store.Store
	// Retention and AuditRetention the store was built with (both > 0).
	Retention, AuditRetention time.Duration
	// Pass lets d pass on the store's clock and has every record that is
	// then due expire: an embedded store advances its injected clock and
	// sweeps; Redis, whose clock cannot be moved, waits d of real time (its
	// expiry is exact, so nothing is left to chance).
	Pass func(tb testing.TB, d time.Duration)
	// Records counts what the store holds besides its capped event log and
	// its audit log: records, index entries, queues, dedup keys.
	Records func(tb testing.TB) int
}

// RunRetention runs the retention suite (see store.Store's Retention).
// newBackend is called once per subtest with a fresh, empty store.
//
// The subtests run in parallel, each on its own store, as RunWorkers'.
func RunRetention(t *testing.T, newBackend func(tb testing.TB) RetentionBackend) {
	h := &harness{cfg: config{timeout: 15 * time.Second}}
	t.Run("ExpiresOnlyWhatIsAtRest", func(t *testing.T) { t.Parallel(); h.testExpiresOnlyAtRest(t, newBackend(t)) })
	t.Run("StoreStaysBounded", func(t *testing.T) { t.Parallel(); h.testStaysBounded(t, newBackend(t)) })
	t.Run("AuditLogKeepsItsOwnRetention", func(t *testing.T) { t.Parallel(); h.testAuditRetention(t, newBackend(t)) })
}

// lifecycle drives a session the way bot and relay do: created queued, an
// input claimed by worker, running, one request created and settled, its
// transcript saved, idle.
// It stops before the release when release is false.
func (h *harness) lifecycle(t *testing.T, ctx context.Context, s store.Store, worker string, release bool) (store.Session, store.Request) {
	t.Helper()
	sess := createSession(t, ctx, s)
	_, err := s.Enqueue(ctx, input(sess.ID, "go"))
	requireNoError(t, err, "Enqueue")
	if got := h.claimNow(t, s, worker); got != sess.ID {
		t.Fatalf("Claim = %s, want %s", got, sess.ID)
	}
	h.nextNow(t, s, sess.ID, worker)
	setState(t, ctx, s, sess.ID, store.SessionRunning)
	r := newRequest(sess.ID, 0)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	_, err = s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	requireNoError(t, s.SaveTranscript(ctx, sess.ID, []byte("the session's transcript")), "SaveTranscript")
	setState(t, ctx, s, sess.ID, store.SessionIdle)
	if release {
		requireNoError(t, s.Release(ctx, sess.ID, worker), "Release")
	}
	return sess, r
}

func setState(t *testing.T, ctx context.Context, s store.Store, id string, st store.SessionState) {
	t.Helper()
	_, err := s.UpdateSession(ctx, id, func(sess *store.Session) error {
		sess.State = st
		return nil
	})
	requireNoError(t, err, "UpdateSession to "+string(st))
}

func requireGone(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("%s after its retention: err = %v, want ErrNotFound", what, err)
	}
}

func requireKept(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Errorf("%s is gone (%v); it must not expire", what, err)
	}
}

// testExpiresOnlyAtRest: settled requests and sessions at rest go; pending
// requests, and sessions queued, running, owned or waiting on a request,
// stay however long they wait, and go once they come to rest.
func (h *harness) testExpiresOnlyAtRest(t *testing.T, b RetentionBackend) {
	s, ctx := b.Store, h.ctx(t)
	done, settled := h.lifecycle(t, ctx, s, "W1", true)
	held, _ := h.lifecycle(t, ctx, s, "W2", false) // idle, not released yet
	waiting, _ := h.lifecycle(t, ctx, s, "W3", false)
	open := newRequest(waiting.ID, 1) // the worker died with a request pending
	requireNoError(t, s.CreateRequest(ctx, open), "CreateRequest")
	requireNoError(t, s.Release(ctx, waiting.ID, "W3"), "Release")
	running := createSession(t, ctx, s)
	setState(t, ctx, s, running.ID, store.SessionRunning)
	queued := createSession(t, ctx, s)
	h.enqueue(t, s, queued.ID, "nobody has claimed me")

	b.Pass(t, 2*b.Retention)
	_, err := s.GetRequest(ctx, settled.ID)
	requireGone(t, err, "a settled request")
	_, err = s.GetSession(ctx, done.ID)
	requireGone(t, err, "an idle session")
	_, err = s.SessionByThread(ctx, done.Thread)
	requireGone(t, err, "the thread of an idle session")
	_, err = s.LoadTranscript(ctx, done.ID)
	requireGone(t, err, "the transcript of an idle session")
	for _, sess := range []store.Session{held, waiting} {
		_, err = s.LoadTranscript(ctx, sess.ID)
		requireKept(t, err, "the transcript of session "+sess.ID)
	}
	for _, sess := range []store.Session{held, waiting, running, queued} {
		_, err = s.GetSession(ctx, sess.ID)
		requireKept(t, err, "session "+sess.ID)
		_, err = s.SessionByThread(ctx, sess.Thread)
		requireKept(t, err, "the thread of "+sess.ID)
	}
	got, err := s.GetRequest(ctx, open.ID)
	requireKept(t, err, "a pending request")
	if err == nil && !got.Pending() {
		t.Errorf("pending request settled by expiry: %+v", got.Decision)
	}
	// The expired session's thread is free for a new session.
	again := newSession()
	again.Thread = done.Thread
	requireNoError(t, s.CreateSession(ctx, again), "CreateSession in the expired session's thread")

	// Once at rest, the sessions held before go too.
	requireNoError(t, s.Release(ctx, held.ID, "W2"), "Release")
	_, err = s.Decide(ctx, open.ID, store.Decision{Outcome: store.OutcomeEnded, At: base})
	requireNoError(t, err, "Decide")
	b.Pass(t, 2*b.Retention)
	for _, id := range []string{held.ID, waiting.ID} {
		_, err = s.GetSession(ctx, id)
		requireGone(t, err, "session "+id+" once at rest")
		_, err = s.LoadTranscript(ctx, id)
		requireGone(t, err, "the transcript of session "+id+" once at rest")
	}
	_, err = s.GetRequest(ctx, open.ID)
	requireGone(t, err, "a request settled late")
	_, err = s.GetSession(ctx, queued.ID)
	requireKept(t, err, "a queued session")
}

// testStaysBounded: many sessions through their whole life leave a store
// no bigger than an empty one once their retention has passed.
func (h *harness) testStaysBounded(t *testing.T, b RetentionBackend) {
	const cycles = 300
	s, ctx := b.Store, h.ctx(t)
	empty := b.Records(t)
	for i := range cycles {
		h.lifecycle(t, ctx, s, "W", true)
		_, err := s.FirstSeen(ctx, uniq("slack-retry"), b.Retention)
		requireNoError(t, err, "FirstSeen")
		if t.Failed() {
			t.Fatalf("cycle %d failed", i)
		}
		// Records must see what a cycle leaves before it expires, or the
		// bound below could not fail.
		if i == 0 {
			if n := b.Records(t); n <= empty {
				t.Fatalf("a finished cycle left %d records, an empty store %d; want more before expiry", n, empty)
			}
		}
	}
	b.Pass(t, 2*b.Retention)
	if after := b.Records(t); after > empty {
		t.Fatalf("after %d cycles and their retention the store holds %d records, an empty one %d: it grows", cycles, after, empty)
	}
}

// testAuditRetention: audit entries outlive requests within their own
// retention and go after it, but only up to a checkpoint, which stays, so
// what is kept still verifies; before the first checkpoint nothing goes.
func (h *harness) testAuditRetention(t *testing.T, b RetentionBackend) {
	s, ctx := b.Store, h.ctx(t)
	old := createRequest(t, ctx, s)
	_, err := s.Decide(ctx, old.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	b.Pass(t, b.AuditRetention/4)
	kept := createRequest(t, ctx, s)
	entries, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(entries) != 3 || entries[0].RequestID != old.ID {
		t.Fatalf("AuditLog within the audit retention = %+v; want %s created and settled, then %s created", entries, old.ID, kept.ID)
	}
	b.Pass(t, b.AuditRetention*3/4+b.AuditRetention/2)
	createRequest(t, ctx, s) // Redis trims on append
	b.Pass(t, 0)
	all, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(all) != 4 {
		t.Fatalf("AuditLog past the audit retention, with no checkpoint = %d entries, want all 4: the log is cut only at one", len(all))
	}
	cp := seal(t, ctx, s, entries[1]) // old's settlement
	fresh := createRequest(t, ctx, s)
	b.Pass(t, 0)
	entries, err = s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	for _, e := range entries {
		if e.RequestID == old.ID {
			t.Fatalf("AuditLog after the audit retention still holds %+v", e)
		}
	}
	// kept was due too, but no checkpoint after it is: it stays.
	if len(entries) != 3 || entries[0].RequestID != kept.ID || entries[2].RequestID != fresh.ID {
		t.Fatalf("AuditLog = %+v; want the creations of %s, the one after, and %s", entries, kept.ID, fresh.ID)
	}
	cps, err := s.AuditCheckpoints(ctx, 0)
	requireNoError(t, err, "AuditCheckpoints")
	if len(cps) != 1 || cps[0].Seq != cp.Seq {
		t.Fatalf("AuditCheckpoints = %+v, want the one the cut was made at", cps)
	}
	if rep := verifyChain(t, ctx, s); rep.From != cp.Seq || rep.Entries != 3 {
		t.Errorf("the kept log verified %+v; want 3 entries from the checkpoint at %d", rep, cp.Seq)
	}
}
