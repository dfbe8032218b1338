package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// TestLuaLinkMatchesGo: the SHA-256 compression the append scripts carry
// finishes every link exactly as Go's crypto/sha256 hashes it, on random
// digests and hashes and on sequence numbers at every word boundary.
func TestLuaLinkMatchesGo(t *testing.T) {
	url := redistest.URL(t)
	prefix := uniquePrefix()
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	s := open(t, url, prefix)
	ctx := t.Context()
	seqs := []uint64{1, 2, 255, 256, 1<<31 - 1, 1 << 31, 1<<32 - 1, 1 << 32, 1<<32 + 1, 1<<53 - 1}
	for i := range 1000 {
		var buf [40]byte
		_, _ = rand.Read(buf[:])
		var digest [32]byte
		copy(digest[:], buf[:32])
		prev := make([]byte, 32)
		_, _ = rand.Read(prev)
		if i%7 == 0 {
			prev = make([]byte, 32) // the genesis
		}
		seq := binary.BigEndian.Uint64(buf[32:]) % (1 << 53)
		if i < len(seqs) {
			seq = seqs[i]
		}
		want, err := store.AuditLinkHash(seq, hex.EncodeToString(prev), digest)
		if err != nil {
			t.Fatal(err)
		}
		mid, err := store.AuditLinkMidstate(digest)
		if err != nil {
			t.Fatal(err)
		}
		got, err := redisstore.AuditLinkByScript(ctx, s, mid, hex.EncodeToString(prev), seq)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("seq %d, digest %x, prev %x: Lua %s, Go %s", seq, digest, prev, got, want)
		}
	}
}

// TestAServerThatForgotItsScriptsAppendsEachEntryOnce: after SCRIPT FLUSH
// (a restarted server), a refusal loads the append script alone, and the
// next creation, whose pipeline also records the thread, still appends
// its entry once: nothing in that pipeline can answer NOSCRIPT after the
// append ran and have the pipeline sent again.
func TestAServerThatForgotItsScriptsAppendsEachEntryOnce(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url := srv.url(t)
			prefix := uniquePrefix()
			t.Cleanup(func() { dropPrefix(t, url, prefix) })
			s := open(t, url, prefix)
			ctx := t.Context()
			sess := store.Session{ID: "s1", Thread: store.MessageRef{Channel: "C1", TS: "1.2"}, State: store.SessionRunning}
			must(t, s.CreateSession(ctx, sess))
			must(t, s.CreateRequest(ctx, newTestRequest("r1", sess.ID)))
			_, err := s.Decide(ctx, "r1", store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
			must(t, err)
			flush := func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() }
			if cc, ok := s.Client().(*redis.ClusterClient); ok {
				must(t, cc.ForEachShard(ctx, flush))
			} else {
				must(t, flush(ctx, s.Client().(*redis.Client)))
			}
			_, err = s.Refuse(ctx, "r1", store.Decision{Outcome: store.OutcomeRefused, At: time.Now(), Message: "unsigned"})
			must(t, err)
			must(t, s.CreateRequest(ctx, newTestRequest("r2", sess.ID)))
			log, err := s.AuditLog(ctx, "", 0)
			must(t, err)
			if len(log) != 4 {
				t.Fatalf("audit log = %d entries, want 4 (r1 created, settled, refused; r2 created): %+v", len(log), log)
			}
			for _, e := range log {
				if e.Channel != "C1" || e.ThreadTS != "1.2" {
					t.Errorf("entry %s %s names thread %q %q, want its session's", e.Action, e.RequestID, e.Channel, e.ThreadTS)
				}
			}
		})
	}
}
