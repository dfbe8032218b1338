package redisstore_test

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/storetest"
)

// keysOf lists the keys of a prefix.
func keysOf(tb testing.TB, s *redisstore.Store, prefix string) []string {
	tb.Helper()
	return prefixKeys(tb, s.Client(), prefix)
}

// logKey reports whether k belongs to one of the two logs retention leaves
// to their own bounds (the capped event stream; the audit stream, its
// chain's head and its checkpoints).
func logKey(prefix, k string) bool {
	for _, kind := range []string{"events", "audit", "audithead", "auditcps"} {
		if k == redisstore.Key(prefix, kind, "") {
			return true
		}
	}
	return false
}

func TestRetention(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { retentionOn(t, srv.url(t)) })
	}
}

func retentionOn(t *testing.T, url string) {
	// Real time on Redis (the subtests wait it out side by side). The
	// audit check reads entries a quarter of it after writing them, so a
	// stall of three quarters fails it: at 1 s a loaded machine did.
	const retention = 2 * time.Second
	storetest.RunRetention(t, func(tb testing.TB) storetest.RetentionBackend {
		prefix := uniquePrefix()
		tb.Cleanup(func() { dropPrefix(tb, url, prefix) })
		s := open(tb, url, prefix, append(testOptions,
			redisstore.WithRetention(retention), redisstore.WithAuditRetention(retention))...)
		return storetest.RetentionBackend{
			Store: s, Retention: retention, AuditRetention: retention,
			// Redis's clock cannot be moved, so d of real time passes; a
			// key whose TTL has run out is gone for every command after.
			Pass: func(_ testing.TB, d time.Duration) { time.Sleep(d) },
			Records: func(tb testing.TB) int {
				n := 0
				for _, k := range keysOf(tb, s, prefix) {
					if !logKey(prefix, k) {
						n++
					}
				}
				return n
			},
		}
	})
}

// TestEveryKeyOfAFinishedSessionExpires: after a session's whole life
// (queued, claimed, running, a request settled, idle, released) every key
// it left carries a TTL of at most the retention, except the two logs.
func TestEveryKeyOfAFinishedSessionExpires(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { everyKeyOfAFinishedSessionExpires(t, srv.url(t)) })
	}
}

func everyKeyOfAFinishedSessionExpires(t *testing.T, url string) {
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	const retention = 30 * 24 * time.Hour
	s := open(t, url, prefix, redisstore.WithRetention(retention))
	ctx := t.Context()
	sess := store.Session{ID: "s1", Thread: store.MessageRef{Channel: "C1", TS: "1.2"}, State: store.SessionQueued}
	must(t, s.CreateSession(ctx, sess))
	_, err := s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "go"})
	must(t, err)
	claimed, err := s.Claim(ctx, "W")
	must(t, err)
	if claimed != sess.ID {
		t.Fatalf("Claim = %s, want %s", claimed, sess.ID)
	}
	_, err = s.NextInput(ctx, sess.ID, "W")
	must(t, err)
	state := func(st store.SessionState) {
		_, err := s.UpdateSession(ctx, sess.ID, func(x *store.Session) error { x.State = st; return nil })
		must(t, err)
	}
	state(store.SessionRunning)
	r := store.Request{ID: "r1", SessionID: sess.ID, Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}}
	must(t, s.CreateRequest(ctx, r))
	_, err = s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
	must(t, err)
	state(store.SessionIdle)
	must(t, s.Release(ctx, sess.ID, "W"))
	_, err = s.FirstSeen(ctx, "retry-1", time.Hour)
	must(t, err)

	keys := keysOf(t, s, prefix)
	want := map[string]bool{"{" + prefix + ":s:s1}:sess": false, "{" + prefix + ":t:C1:1.2}:thread": false,
		"{" + prefix + ":r:r1}:req": false, "{" + prefix + ":d:retry-1}:dedup": false}
	for _, k := range keys {
		if logKey(prefix, k) {
			continue
		}
		ttl, err := s.Client().PTTL(ctx, k).Result()
		must(t, err)
		if ttl <= 0 || ttl > retention {
			t.Errorf("key %s has TTL %v; want one in (0, %v]", k, ttl, retention)
		}
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s left by a finished session", k)
		}
		want[k] = true
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("key %s missing (keys: %v)", name, keys)
		}
	}
	// Taken up again, the session and its thread key lose their TTL.
	_, err = s.Enqueue(ctx, store.Input{SessionID: sess.ID, Text: "more"})
	must(t, err)
	for _, k := range []string{redisstore.Key(prefix, "session", "s1"), redisstore.Key(prefix, "thread", "C1:1.2")} {
		ttl, err := s.Client().PTTL(ctx, k).Result()
		must(t, err)
		if ttl != -1 {
			t.Errorf("key %s has TTL %v after an input was queued; want none (-1)", k, ttl)
		}
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
