package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
)

func newTestRequest(id, sessionID string) store.Request {
	return store.Request{ID: id, SessionID: sessionID, Kind: store.KindTool, ToolName: "Bash", CreatedAt: time.Now()}
}

func TestSettledRequestsExpireAfterTheRetention(t *testing.T) {
	url := redisURL(t)
	for _, tc := range []struct {
		name      string
		retention time.Duration
		wantTTL   bool
	}{
		{"RetentionSetsATTL", time.Hour, true},
		{"ZeroRetentionKeepsForever", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := uniquePrefix()
			t.Cleanup(func() { dropPrefix(t, url, prefix) })
			s := open(t, url, prefix, redisstore.WithRetention(tc.retention))
			r := newTestRequest("req-1", "sess-1")
			if err := s.CreateRequest(ctx, r); err != nil {
				t.Fatal(err)
			}
			key := "{" + prefix + "}:req:" + r.ID
			if ttl := s.Client().PTTL(ctx, key).Val(); ttl != -1 {
				t.Fatalf("a pending request has TTL %v; it must wait as long as it takes", ttl)
			}
			if _, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()}); err != nil {
				t.Fatal(err)
			}
			ttl := s.Client().PTTL(ctx, key).Val()
			if got := ttl > 0 && ttl <= tc.retention; got != tc.wantTTL {
				t.Fatalf("settled request TTL = %v with retention %v", ttl, tc.retention)
			}
		})
	}
}

func TestEventsStreamIsCappedAndAuditIsNot(t *testing.T) {
	url := redisURL(t)
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix, redisstore.WithEventsMaxLen(100))
	const n = 1000
	for range n {
		if _, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "s", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		if err := s.CreateRequest(ctx, newTestRequest(fmt.Sprint("req-", i), "s")); err != nil {
			t.Fatal(err)
		}
	}
	// MAXLEN ~ trims whole stream nodes (100 entries by default), so the
	// length stays near the cap rather than exactly at it.
	if l := s.Client().XLen(ctx, "{"+prefix+"}:events").Val(); l > 300 {
		t.Errorf("events stream holds %d entries with a cap of 100", l)
	}
	audit, err := s.AuditLog(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 300 {
		t.Errorf("audit log holds %d entries, want all 300", len(audit))
	}
}

func TestEveryKeyCarriesThePrefixHashTag(t *testing.T) {
	url := redisURL(t)
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	mark := uniquePrefix() // appears in every id, so its keys can be found
	sess := store.Session{ID: mark + "-sess", Thread: store.MessageRef{Channel: mark + "-C", TS: "1.2"}, State: store.SessionQueued}
	if err := s.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRequest(ctx, newTestRequest(mark+"-req", sess.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, mark+"-worker"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "again"}); err != nil {
		t.Fatal(err)
	}
	var found []string
	iter := s.Client().Scan(ctx, 0, "*"+mark+"*", 1000).Iterator()
	for iter.Next(ctx) {
		found = append(found, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	// session, thread, request, inbox, owner, owned.
	if len(found) != 6 {
		t.Errorf("found keys %v, want 6", found)
	}
	for _, k := range found {
		if !strings.HasPrefix(k, "{"+prefix+"}:") {
			t.Errorf("key %q lacks the hash tag {%s}", k, prefix)
		}
	}
}

func TestWaitersShareOneConnection(t *testing.T) {
	url := redisURL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	waiter := open(t, url, prefix)
	decider := open(t, url, prefix)
	const n = 50
	done := make(chan error, n)
	for i := range n {
		id := fmt.Sprint("req-", i)
		if err := decider.CreateRequest(ctx, newTestRequest(id, "s")); err != nil {
			t.Fatal(err)
		}
		go func() {
			_, err := waiter.WaitDecision(ctx, id)
			done <- err
		}()
		// One at a time, so the pool is not asked for parallel reads.
		eventually(t, "the waiter to register", func() bool { return redisstore.Waiters(waiter) == i+1 })
	}
	// The pool holds at most the connection used for the reads; the
	// pub/sub connection is outside it.
	if c := waiter.Client().PoolStats().TotalConns; c > 2 {
		t.Errorf("%d waiters hold %d pooled connections", n, c)
	}
	for i := range n {
		if _, err := decider.Decide(ctx, fmt.Sprint("req-", i), store.Decision{Outcome: store.OutcomeAllow, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatalf("WaitDecision: %v", err)
		}
	}
}
