package storetest

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testCounts(t *testing.T) {
	t.Run("ActiveSessionsByCountsQueuedAndRunningOfThatStarter", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		user, other := uniq("U"), uniq("U")
		n, err := s1.ActiveSessionsBy(ctx, user)
		requireNoError(t, err, "ActiveSessionsBy")
		if n != 0 {
			t.Fatalf("ActiveSessionsBy of a user without sessions = %d, want 0", n)
		}
		for _, tc := range []struct {
			by    string
			state store.SessionState
		}{
			{user, store.SessionQueued}, {user, store.SessionRunning}, {user, store.SessionIdle},
			{user, store.SessionFailed}, {other, store.SessionQueued},
		} {
			sess := newSession()
			sess.StartedBy, sess.State = tc.by, tc.state
			requireNoError(t, s1.CreateSession(ctx, sess), "CreateSession")
		}
		for _, tc := range []struct {
			s    store.Store
			user string
			want int
		}{{s1, user, 2}, {s2, user, 2}, {s2, other, 1}} {
			n, err := tc.s.ActiveSessionsBy(ctx, tc.user)
			requireNoError(t, err, "ActiveSessionsBy")
			if n != tc.want {
				t.Errorf("ActiveSessionsBy(%s) = %d, want %d", tc.user, n, tc.want)
			}
		}
	})
	t.Run("ActiveSessionsByFollowsStateChanges", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := newSession()
		sess.StartedBy = uniq("U")
		requireNoError(t, s.CreateSession(ctx, sess), "CreateSession")
		for _, tc := range []struct {
			state store.SessionState
			want  int
		}{{store.SessionRunning, 1}, {store.SessionIdle, 0}, {store.SessionQueued, 1}, {store.SessionFailed, 0}} {
			_, err := s.UpdateSession(ctx, sess.ID, func(x *store.Session) error { x.State = tc.state; return nil })
			requireNoError(t, err, "UpdateSession")
			n, err := s.ActiveSessionsBy(ctx, sess.StartedBy)
			requireNoError(t, err, "ActiveSessionsBy")
			if n != tc.want {
				t.Errorf("after %s: ActiveSessionsBy = %d, want %d", tc.state, n, tc.want)
			}
		}
	})
	t.Run("QueuedInputsCountsWhatNoWorkerTookYet", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s1)
		count := func(want int) {
			t.Helper()
			n, err := s2.QueuedInputs(ctx, sess.ID)
			requireNoError(t, err, "QueuedInputs")
			if n != want {
				t.Errorf("QueuedInputs = %d, want %d", n, want)
			}
		}
		count(0)
		for _, text := range []string{"one", "two", "three"} {
			_, err := s1.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: text})
			requireNoError(t, err, "Enqueue")
		}
		count(3)
		worker := uniq("w")
		id, err := s1.Claim(ctx, worker)
		requireNoError(t, err, "Claim")
		if id != sess.ID {
			t.Fatalf("claimed %s, want %s", id, sess.ID)
		}
		_, err = s1.NextInput(ctx, sess.ID, worker)
		requireNoError(t, err, "NextInput")
		count(2)
		n, err := s1.QueuedInputs(ctx, uniq("unknown"))
		requireNoError(t, err, "QueuedInputs of an unknown session")
		if n != 0 {
			t.Errorf("QueuedInputs of an unknown session = %d, want 0", n)
		}
	})
	t.Run("ReadySessionsCountsSessionsWaitingForAWorker", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		count := func(want int) {
			t.Helper()
			n, err := s2.ReadySessions(ctx)
			requireNoError(t, err, "ReadySessions")
			if n != want {
				t.Errorf("ReadySessions = %d, want %d", n, want)
			}
		}
		count(0)
		a, b := createSession(t, ctx, s1), createSession(t, ctx, s1)
		for _, sess := range []store.Session{a, a, b} {
			_, err := s1.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "hello"})
			requireNoError(t, err, "Enqueue")
		}
		count(2) // a session with two inputs is ready once
		worker := uniq("w")
		id, err := s1.Claim(ctx, worker)
		requireNoError(t, err, "Claim")
		count(1)
		requireNoError(t, s1.Release(ctx, id, worker), "Release")
		count(2) // released with its inputs still queued: ready again
	})
	t.Run("CountPendingUnderCountsThePendingRequestsOfSessionsWithThePrefix", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		prefix := uniq("api.tok") + "."
		mine, other := prefix+"a", uniq("api.other")+".a"
		var first store.Request
		for i, sid := range []string{mine, prefix + "b", prefix + "b", other} {
			r := newRequest(sid, i)
			requireNoError(t, s1.CreateRequest(ctx, r), "CreateRequest")
			if i == 0 {
				first = r
			}
		}
		count := func(want int) {
			t.Helper()
			n, err := s2.CountPendingUnder(ctx, prefix)
			requireNoError(t, err, "CountPendingUnder")
			if n != want {
				t.Errorf("CountPendingUnder(%s) = %d, want %d", prefix, n, want)
			}
		}
		count(3)
		_, err := s1.Decide(ctx, first.ID, store.Decision{Outcome: store.OutcomeExpired, At: base})
		requireNoError(t, err, "Decide")
		count(2) // a settled request no longer counts
		n, err := s2.CountPendingUnder(ctx, uniq("nobody"))
		requireNoError(t, err, "CountPendingUnder of an unused prefix")
		if n != 0 {
			t.Errorf("CountPendingUnder of an unused prefix = %d, want 0", n)
		}
	})
	t.Run("SessionsUpdatedSinceCountsTheStartersRecentSessions", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		starter, other := uniq("api:tok"), uniq("api:other")
		var old store.Session
		for i, tc := range []struct {
			by      string
			updated time.Time
		}{
			{starter, base.Add(-time.Hour)}, {starter, base}, {starter, base.Add(time.Minute)}, {other, base},
		} {
			sess := newSession()
			sess.StartedBy, sess.State, sess.UpdatedAt = tc.by, store.SessionIdle, tc.updated
			requireNoError(t, s1.CreateSession(ctx, sess), "CreateSession")
			if i == 0 {
				old = sess
			}
		}
		count := func(since time.Time, want int) {
			t.Helper()
			n, err := s2.SessionsUpdatedSince(ctx, starter, since)
			requireNoError(t, err, "SessionsUpdatedSince")
			if n != want {
				t.Errorf("SessionsUpdatedSince(%s, %v) = %d, want %d", starter, since, n, want)
			}
		}
		count(base, 2)
		count(base.Add(-2*time.Hour), 3)
		_, err := s1.UpdateSession(ctx, old.ID, func(x *store.Session) error { x.UpdatedAt = base.Add(time.Hour); return nil })
		requireNoError(t, err, "UpdateSession")
		count(base, 3) // a session used again counts again
		n, err := s2.SessionsUpdatedSince(ctx, uniq("api:nobody"), base)
		requireNoError(t, err, "SessionsUpdatedSince of a starter without sessions")
		if n != 0 {
			t.Errorf("SessionsUpdatedSince of a starter without sessions = %d, want 0", n)
		}
	})
}
