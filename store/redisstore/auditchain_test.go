package redisstore_test

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
)

// TestLuaLinkMatchesGo: the SHA-256 compression the append scripts carry
// finishes every link exactly as Go's crypto/sha256 hashes it, on random
// digests and hashes and on sequence numbers at every word boundary.
func TestLuaLinkMatchesGo(t *testing.T) {
	url := redisURL(t)
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
