package redisstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
)

// The store's transitions that span cluster slots are several steps (see
// keys.go). These tests write what a process dying between two steps
// leaves, and check that readers tolerate it and the next call repairs it.

// scoreAgo is an index score of an entry added d ago.
func scoreAgo(d time.Duration) float64 { return float64(time.Now().Add(-d).UnixMicro()) }

func TestCrashLeftovers(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			for _, count := range []bool{false, true} {
				reader := map[bool]string{false: "Listed", true: "Counted"}[count]
				t.Run("IndexEntryWithoutItsRequest"+reader, func(t *testing.T) { indexEntryWithoutItsRequest(t, url, count) })
				t.Run("SettledRequestLeftInTheIndex"+reader, func(t *testing.T) { settledRequestLeftInTheIndex(t, url, count) })
			}
			t.Run("ThreadClaimWithoutItsSession", func(t *testing.T) { threadClaimWithoutItsSession(t, url) })
			t.Run("OwnedEntryOfAClaimThatNeverHappened", func(t *testing.T) { ownedEntryOfAClaimThatNeverHappened(t, url) })
			t.Run("InputQueuedButSessionNotReady", func(t *testing.T) { inputQueuedButSessionNotReady(t, url) })
		})
	}
}

// indexEntryWithoutItsRequest: the creator died after indexing, before
// storing the request. Readers skip the entry; once past the grace they
// remove it, and before it they leave it (a creation may be under way).
// The reader is ListPending, or CountPending when count.
func indexEntryWithoutItsRequest(t *testing.T, url string, count bool) {
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	c := s.Client()
	add := func(id string, age time.Duration) {
		must(t, c.ZAdd(ctx, redisstore.Key(prefix, "pending-shard", id), redis.Z{Score: scoreAgo(age), Member: id}).Err())
		must(t, c.ZAdd(ctx, redisstore.Key(prefix, "session-pending", "s1"), redis.Z{Score: scoreAgo(age), Member: id}).Err())
	}
	add("ghost-old", 2*redisstore.IndexGrace)
	add("ghost-new", 0)
	must(t, s.CreateRequest(ctx, newTestRequest("real", "s1")))
	for _, sid := range []string{"", "s1"} {
		if count {
			n, err := s.CountPending(ctx, sid)
			must(t, err)
			if n != 1 {
				t.Fatalf("CountPending(%q) = %d, want 1: only the real request", sid, n)
			}
			continue
		}
		got, err := s.ListPending(ctx, sid)
		must(t, err)
		if len(got) != 1 || got[0].ID != "real" {
			t.Fatalf("ListPending(%q) = %v, want only the real request", sid, got)
		}
	}
	for _, id := range []string{"ghost-old", "ghost-new"} {
		for _, ix := range []string{redisstore.Key(prefix, "pending-shard", id), redisstore.Key(prefix, "session-pending", "s1")} {
			_, err := c.ZScore(ctx, ix, id).Result()
			kept := !errors.Is(err, redis.Nil)
			if want := id == "ghost-new"; kept != want {
				t.Errorf("%s in %s: kept %v, want %v", id, ix, kept, want)
			}
		}
	}
}

// settledRequestLeftInTheIndex: the decider died after settling, before
// unindexing. The request is not listed, its entries go, and its session at
// rest gets its retention. The reader is ListPending, or CountPending when
// count.
func settledRequestLeftInTheIndex(t *testing.T, url string, count bool) {
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix, redisstore.WithRetention(time.Hour))
	c := s.Client()
	must(t, s.CreateSession(ctx, store.Session{ID: "s1", State: store.SessionRunning}))
	r := newTestRequest("r1", "s1")
	must(t, s.CreateRequest(ctx, r))
	_, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
	must(t, err)
	// Put back what the last step removed.
	must(t, c.ZAdd(ctx, redisstore.Key(prefix, "pending-shard", r.ID), redis.Z{Score: scoreAgo(0), Member: r.ID}).Err())
	must(t, c.ZAdd(ctx, redisstore.Key(prefix, "session-pending", "s1"), redis.Z{Score: scoreAgo(0), Member: r.ID}).Err())
	for _, sid := range []string{"", "s1"} {
		if count {
			n, err := s.CountPending(ctx, sid)
			must(t, err)
			if n != 0 {
				t.Fatalf("CountPending(%q) = %d, want 0: the request is settled", sid, n)
			}
			continue
		}
		got, err := s.ListPending(ctx, sid)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("ListPending(%q) = %v, want none: the request is settled", sid, got)
		}
	}
	must(t, c.ZAdd(ctx, redisstore.Key(prefix, "session-pending", "s1"), redis.Z{Score: scoreAgo(0), Member: r.ID}).Err())
	_, err = s.UpdateSession(ctx, "s1", func(x *store.Session) error { x.State = store.SessionIdle; return nil })
	must(t, err)
	if ttl := c.PTTL(ctx, redisstore.Key(prefix, "session", "s1")).Val(); ttl <= 0 {
		t.Errorf("the idle session has TTL %v; a settled request left in its index must not hold it", ttl)
	}
	for _, ix := range []string{redisstore.Key(prefix, "pending-shard", r.ID), redisstore.Key(prefix, "session-pending", "s1")} {
		if n := c.ZCard(ctx, ix).Val(); n != 0 {
			t.Errorf("%s still holds %d entries", ix, n)
		}
	}
}

// threadClaimWithoutItsSession: the creator died after claiming the
// thread, before storing the session. The thread finds no session; a new
// session may take the thread once the claim is past the grace.
func threadClaimWithoutItsSession(t *testing.T, url string) {
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	c := s.Client()
	thread := store.MessageRef{Channel: "C1", TS: "1.2"}
	key := redisstore.Key(prefix, "thread", "C1:1.2")
	claim := func(age time.Duration) {
		must(t, c.HSet(ctx, key, "id", "dead", "at", int64(scoreAgo(age))).Err())
	}
	claim(0)
	if _, err := s.SessionByThread(ctx, thread); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SessionByThread = %v, want ErrNotFound", err)
	}
	err := s.CreateSession(ctx, store.Session{ID: "s1", Thread: thread, State: store.SessionQueued})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateSession on a fresh claim = %v, want ErrExists (a creation may be under way)", err)
	}
	claim(2 * redisstore.IndexGrace)
	must(t, s.CreateSession(ctx, store.Session{ID: "s1", Thread: thread, State: store.SessionQueued}))
	got, err := s.SessionByThread(ctx, thread)
	must(t, err)
	if got.ID != "s1" {
		t.Errorf("SessionByThread = %s, want s1", got.ID)
	}
}

// ownedEntryOfAClaimThatNeverHappened: a worker died after recording the
// session in its owned set, before taking ownership. It is found dead with
// the session; the take-over finds it never owned it and drops the entry.
func ownedEntryOfAClaimThatNeverHappened(t *testing.T, url string) {
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	c := s.Client()
	must(t, c.SAdd(ctx, redisstore.Key(prefix, "owned", "W1"), "s1").Err())
	must(t, c.SAdd(ctx, redisstore.Key(prefix, "owners", ""), "W1").Err())
	dead, err := s.DeadWorkers(ctx)
	must(t, err)
	if !slices.Equal(dead, []string{"W1"}) {
		t.Fatalf("DeadWorkers = %v, want [W1]", dead)
	}
	owned, err := s.Owned(ctx, "W1")
	must(t, err)
	for _, id := range owned {
		if err := s.TakeOver(ctx, id, "W1", "W2"); !errors.Is(err, store.ErrNotOwner) {
			t.Errorf("TakeOver(%s) = %v, want ErrNotOwner", id, err)
		}
	}
	dead, err = s.DeadWorkers(ctx)
	must(t, err)
	if len(dead) != 0 {
		t.Errorf("DeadWorkers = %v after the take-over; the stale entry should be gone", dead)
	}
	if owned, _ := s.Owned(ctx, "W2"); len(owned) != 0 {
		t.Errorf("W2 owns %v; it took nothing over", owned)
	}
}

// inputQueuedButSessionNotReady: the enqueuer died after queueing the
// input, before marking the session ready. A waiting Claim leaves a fresh
// note alone (the enqueuer may be between its steps) and, once the note is
// past the grace, marks the session ready and claims it.
func inputQueuedButSessionNotReady(t *testing.T, url string) {
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	c := s.Client()
	ctx := t.Context()
	must(t, s.CreateSession(ctx, store.Session{ID: "s1", State: store.SessionQueued}))
	must(t, c.RPush(ctx, redisstore.Key(prefix, "inbox", "s1"), `{"id":"in-1","session_id":"s1","text":"hi"}`).Err())
	note := func(age time.Duration) {
		must(t, c.ZAdd(ctx, redisstore.Key(prefix, "arriving", ""), redis.Z{Score: scoreAgo(age), Member: "op1:s1"}).Err())
	}
	note(0)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if id, err := s.Claim(short, "W"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Claim with only a fresh note = %q, %v; want to wait until the deadline", id, err)
	}
	if n := c.ZCard(ctx, redisstore.Key(prefix, "arriving", "")).Val(); n != 1 {
		t.Fatalf("the fresh note was struck (%d left)", n)
	}
	note(2 * redisstore.IndexGrace)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	id, err := s.Claim(wait, "W")
	must(t, err)
	if id != "s1" {
		t.Fatalf("Claim = %q, want s1", id)
	}
	in, err := s.NextInput(ctx, "s1", "W")
	must(t, err)
	if in.Text != "hi" {
		t.Errorf("NextInput = %+v, want the queued input", in)
	}
	if n := c.ZCard(ctx, redisstore.Key(prefix, "arriving", "")).Val(); n != 0 {
		t.Errorf("%d notes left after the repair", n)
	}
}
