package storetest

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func newSession() store.Session {
	return store.Session{
		ID:             uniq("sess"),
		Thread:         store.MessageRef{Channel: "C1", TS: uniq("17100")},
		WorkDir:        "/srv/project",
		StartedBy:      "U1",
		PermissionMode: "default",
		Model:          "0",
		State:          store.SessionQueued,
		CreatedAt:      base,
		UpdatedAt:      base.Add(time.Second),
		Status:         store.MessageRef{Channel: "C1", TS: "1710000000.000900"},
	}
}

// createSession stores a fresh session from newSession.
func createSession(t *testing.T, ctx context.Context, s store.Store) store.Session {
	t.Helper()
	sess := newSession()
	requireNoError(t, s.CreateSession(ctx, sess), "CreateSession")
	return sess
}

func requireSameSession(t *testing.T, want, got store.Session) {
	t.Helper()
	if !want.CreatedAt.Equal(got.CreatedAt) || !want.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("times = %v/%v, want %v/%v", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	w, g := want, got
	w.CreatedAt, g.CreatedAt = time.Time{}, time.Time{}
	w.UpdatedAt, g.UpdatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(w, g) {
		t.Errorf("session differs:\n got %+v\nwant %+v", g, w)
	}
}

func (h *harness) testSessions(t *testing.T) {
	t.Run("CreateGetAndByThread", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := newSession()
		sess.Started = true
		sess.Worker = "w1"
		sess.State = store.SessionRunning
		requireNoError(t, s.CreateSession(ctx, sess), "CreateSession")
		got, err := s.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		requireSameSession(t, sess, got)
		got, err = s.SessionByThread(ctx, sess.Thread)
		requireNoError(t, err, "SessionByThread")
		requireSameSession(t, sess, got)
	})
	t.Run("UnknownIsNotFound", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		other := createSession(t, ctx, s)
		_, err := s.GetSession(ctx, uniq("missing"))
		requireIs(t, err, store.ErrNotFound, "GetSession")
		// Same channel, other thread; same ts, other channel.
		_, err = s.SessionByThread(ctx, store.MessageRef{Channel: other.Thread.Channel, TS: uniq("1")})
		requireIs(t, err, store.ErrNotFound, "SessionByThread other ts")
		_, err = s.SessionByThread(ctx, store.MessageRef{Channel: "C-other", TS: other.Thread.TS})
		requireIs(t, err, store.ErrNotFound, "SessionByThread other channel")
		_, err = s.UpdateSession(ctx, uniq("missing"), func(*store.Session) error { return nil })
		requireIs(t, err, store.ErrNotFound, "UpdateSession")
	})
	t.Run("DuplicateIDOrThreadIsExists", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		first := createSession(t, ctx, s)
		sameID := newSession()
		sameID.ID = first.ID
		sameThread := newSession()
		sameThread.Thread = first.Thread
		for _, tc := range []struct {
			name string
			s    store.Session
		}{{"SameID", sameID}, {"SameThread", sameThread}} {
			t.Run(tc.name, func(t *testing.T) {
				requireIs(t, s.CreateSession(ctx, tc.s), store.ErrExists, "CreateSession")
			})
		}
		got, err := s.SessionByThread(ctx, first.Thread)
		requireNoError(t, err, "SessionByThread")
		requireSameSession(t, first, got)
		_, err = s.GetSession(ctx, sameThread.ID)
		requireIs(t, err, store.ErrNotFound, "GetSession of the rejected session")
	})
	t.Run("UpdateAppliesAndStores", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		updated, err := s.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
			x.State = store.SessionRunning
			x.Started = true
			x.Worker = "w7"
			x.UpdatedAt = base.Add(time.Hour)
			return nil
		})
		requireNoError(t, err, "UpdateSession")
		want := sess
		want.State, want.Started, want.Worker, want.UpdatedAt = store.SessionRunning, true, "w7", base.Add(time.Hour)
		requireSameSession(t, want, updated)
		got, err := s.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		requireSameSession(t, want, got)
	})
	t.Run("UpdateErrorIsReturnedUnchangedAndStoresNothing", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		boom := errors.New("boom")
		_, err := s.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
			x.State = store.SessionFailed
			return boom
		})
		if err != boom { //nolint:errorlint // the contract is "unchanged", not "wrapped"
			t.Fatalf("UpdateSession err = %v, want the fn's error unchanged", err)
		}
		got, err := s.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		requireSameSession(t, sess, got)
	})
	t.Run("UpdateKeepsIDAndThread", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s)
		updated, err := s.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
			x.ID = "hijacked"
			x.Thread = store.MessageRef{Channel: "C2", TS: "2"}
			return nil
		})
		// A backend may refuse the change or ignore it; it must not apply it.
		if err == nil && (updated.ID != sess.ID || updated.Thread != sess.Thread) {
			t.Errorf("UpdateSession returned %s in %+v; want %s in %+v", updated.ID, updated.Thread, sess.ID, sess.Thread)
		}
		got, err := s.SessionByThread(ctx, sess.Thread)
		requireNoError(t, err, "SessionByThread")
		if got.ID != sess.ID || got.Thread != sess.Thread {
			t.Errorf("stored session %s in %+v; want %s in %+v", got.ID, got.Thread, sess.ID, sess.Thread)
		}
		_, err = s.GetSession(ctx, "hijacked")
		requireIs(t, err, store.ErrNotFound, "GetSession of the new id")
		_, err = s.SessionByThread(ctx, store.MessageRef{Channel: "C2", TS: "2"})
		requireIs(t, err, store.ErrNotFound, "SessionByThread of the new thread")
	})
	t.Run("ConcurrentUpdatesLoseNothing", func(t *testing.T) {
		const n = 20
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		sess := createSession(t, ctx, s1)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Go(func() {
				_, errs[i] = s.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
					v, err := strconv.Atoi(x.Model)
					if err != nil {
						return err
					}
					x.Model = strconv.Itoa(v + 1)
					return nil
				})
			})
		}
		wg.Wait()
		for i, err := range errs {
			requireNoError(t, err, "UpdateSession "+strconv.Itoa(i))
		}
		got, err := s1.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		if got.Model != strconv.Itoa(n) {
			t.Errorf("counter = %s after %d concurrent increments", got.Model, n)
		}
	})
}
