package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

func newTestRequest(id, sessionID string) store.Request {
	return store.Request{ID: id, SessionID: sessionID, Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: time.Now()}
}

func TestSettledRequestsExpireAfterTheRetention(t *testing.T) {
	url := redistest.URL(t)
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
			key := redisstore.Key(prefix, "request", r.ID)
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
	url := redistest.URL(t)
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
	if l := s.Client().XLen(ctx, redisstore.Key(prefix, "events", "")).Val(); l > 300 {
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

func TestEveryKeyCarriesThePrefixInItsHashTag(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			ctx := t.Context()
			prefix := uniquePrefix()
			t.Cleanup(func() { dropPrefix(t, url, prefix) })
			s := open(t, url, prefix)
			mark := uniquePrefix() // appears in every id, so its keys can be found
			sess := store.Session{ID: mark + "-sess", Thread: store.MessageRef{Channel: mark + "-C", TS: "1.2"}, State: store.SessionQueued}
			must(t, s.CreateSession(ctx, sess))
			must(t, s.CreateRequest(ctx, newTestRequest(mark+"-req", sess.ID)))
			_, err := s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "hi"})
			must(t, err)
			_, err = s.Claim(ctx, mark+"-worker")
			must(t, err)
			_, err = s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "again"})
			must(t, err)
			var found []string
			for _, k := range prefixKeys(t, s.Client(), prefix) {
				if strings.Contains(k, mark) {
					found = append(found, k)
				}
			}
			slices.Sort(found)
			// The session's record, inbox, owner and pending index share
			// its tag; the request, the thread entry and the worker's
			// owned set (global) have theirs.
			want := []string{
				"{" + prefix + ":r:" + mark + "-req}:req",
				"{" + prefix + ":s:" + mark + "-sess}:inbox",
				"{" + prefix + ":s:" + mark + "-sess}:owner",
				"{" + prefix + ":s:" + mark + "-sess}:pending",
				"{" + prefix + ":s:" + mark + "-sess}:sess",
				"{" + prefix + ":t:" + mark + "-C:1.2}:thread",
				"{" + prefix + "}:owned:" + mark + "-worker",
			}
			if !slices.Equal(found, want) {
				t.Errorf("keys naming the ids:\n got %q\nwant %q", found, want)
			}
		})
	}
}

// TestKeysSpreadOverTheCluster: sessions and requests land in many slots
// and on every node of the 3-node cluster, and the store computes each
// key's slot as the server does.
func TestKeysSpreadOverTheCluster(t *testing.T) {
	url := redistest.ClusterURL(t)
	ctx := t.Context()
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	const n = 30
	for i := range n {
		id := fmt.Sprint("sess-", i)
		must(t, s.CreateSession(ctx, store.Session{ID: id, Thread: store.MessageRef{Channel: "C", TS: fmt.Sprint(i, ".1")}, State: store.SessionQueued}))
		_, err := s.Enqueue(ctx, store.Input{SessionID: id, Text: "go"})
		must(t, err)
		must(t, s.CreateRequest(ctx, newTestRequest(fmt.Sprint("req-", i), id)))
	}
	cc, ok := s.Client().(*redis.ClusterClient)
	if !ok {
		t.Fatalf("REDIS_CLUSTER_URL made a %T, not a cluster client", s.Client())
	}
	var mu sync.Mutex
	perNode := map[string]int{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys := prefixKeys(t, c, prefix)
		mu.Lock()
		perNode[c.Options().Addr] = len(keys)
		mu.Unlock()
		return nil
	})
	must(t, err)
	if len(perNode) != 3 {
		t.Fatalf("the cluster has %d primaries, want 3: %v", len(perNode), perNode)
	}
	for addr, n := range perNode {
		if n == 0 {
			t.Errorf("node %s holds none of the store's keys: %v", addr, perNode)
		}
	}
	slots := map[int64]bool{}
	for i := range n {
		for _, k := range []string{redisstore.Key(prefix, "session", fmt.Sprint("sess-", i)), redisstore.Key(prefix, "request", fmt.Sprint("req-", i))} {
			sl, err := cc.ClusterKeySlot(ctx, k).Result()
			must(t, err)
			if int(sl) != redisstore.Slot(k) {
				t.Errorf("slot of %s: the server says %d, the store computes %d", k, sl, redisstore.Slot(k))
			}
			slots[sl] = true
		}
	}
	if len(slots) < n {
		t.Errorf("%d sessions and %d requests fell into only %d slots", n, n, len(slots))
	}
}

func TestWaitersShareOneConnection(t *testing.T) {
	url := redistest.URL(t)
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

// TestScriptsComeBackAfterAFlush: a server that lost its scripts (a restart,
// SCRIPT FLUSH, a new cluster node) gets them again, also for the scripts
// sent by SHA inside pipelines, and no record is lost or doubled.
func TestScriptsComeBackAfterAFlush(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			ctx := t.Context()
			prefix := uniquePrefix()
			t.Cleanup(func() { dropPrefix(t, url, prefix) })
			s := open(t, url, prefix)
			for i := range 3 {
				must(t, s.Client().ScriptFlush(ctx).Err()) // every primary, on a cluster
				r := newTestRequest(fmt.Sprint("req-", i), "s")
				must(t, s.CreateRequest(ctx, r))
				must(t, s.Client().ScriptFlush(ctx).Err())
				_, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
				must(t, err)
			}
			audit, err := s.AuditLog(ctx, "", 0)
			must(t, err)
			if len(audit) != 6 {
				t.Errorf("audit log holds %d entries, want 6 (3 created, 3 settled)", len(audit))
			}
		})
	}
}
