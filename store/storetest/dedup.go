package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testDedup(t *testing.T) {
	t.Run("SecondSightWithinTTLIsNotFirst", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		key := uniq("event")
		for i, tc := range []struct {
			s    store.Store
			key  string
			want bool
		}{
			{s1, key, true},
			{s1, key, false},
			{s2, key, false}, // the other client remembers it too
			{s2, key + "-other", true},
		} {
			got, err := tc.s.FirstSeen(ctx, tc.key, time.Hour)
			requireNoError(t, err, "FirstSeen")
			if got != tc.want {
				t.Fatalf("call %d: FirstSeen(%s) = %v, want %v", i, tc.key, got, tc.want)
			}
		}
	})
	t.Run("KeyIsFirstAgainAfterTTL", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		const ttl = 50 * time.Millisecond
		key := uniq("event")
		start := time.Now()
		first, err := s.FirstSeen(ctx, key, ttl)
		requireNoError(t, err, "FirstSeen")
		if !first {
			t.Fatal("FirstSeen of a new key = false")
		}
		again, err := s.FirstSeen(ctx, key, ttl)
		requireNoError(t, err, "FirstSeen")
		// Only meaningful while the ttl surely has not passed (a slow
		// machine may take longer than ttl between the two calls).
		if elapsed := time.Since(start); again && elapsed < ttl {
			t.Fatalf("FirstSeen again after %v = true, want false within the ttl %v", elapsed, ttl)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			first, err := s.FirstSeen(ctx, key, ttl)
			requireNoError(t, err, "FirstSeen")
			if first {
				// Allow a little for a server clock that counts whole milliseconds.
				if elapsed := time.Since(start); elapsed < ttl-5*time.Millisecond {
					t.Fatalf("key forgotten after %v, before its ttl %v", elapsed, ttl)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("key still remembered %v after its ttl %v", time.Since(start), ttl)
			}
			time.Sleep(5 * time.Millisecond) // polls a deadline; correctness does not depend on it
		}
	})
	t.Run("ConcurrentCallersOneFirst", func(t *testing.T) {
		const callers = 20
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		key := uniq("event")
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			firsts int
			errs   []error
		)
		start := make(chan struct{})
		for i := range callers {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Go(func() {
				<-start
				first, err := s.FirstSeen(ctx, key, time.Hour)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if first {
					firsts++
				}
			})
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("FirstSeen failed: %v", errs)
		}
		if firsts != 1 {
			t.Fatalf("%d of %d concurrent callers saw the key first, want exactly 1", firsts, callers)
		}
	})
	t.Run("RejectsEmptyKeyAndNonPositiveTTL", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		for _, tc := range []struct {
			name string
			key  string
			ttl  time.Duration
		}{
			{"empty key", "", time.Minute},
			{"zero ttl", uniq("event"), 0},
			{"negative ttl", uniq("event"), -time.Second},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.FirstSeen(ctx, tc.key, tc.ttl)
				requireIs(t, err, store.ErrInvalid, "FirstSeen")
			})
		}
	})
}
