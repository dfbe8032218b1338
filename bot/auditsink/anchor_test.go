package auditsink

import (
	"context"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// truncatedLog serves the store as someone who cut its newest entries
// (and the checkpoints sealing them) would leave it.
type truncatedLog struct {
	store.Store
	upTo    uint64
	keepCps bool // the checkpoints were left alone
}

func (l truncatedLog) AuditHead(ctx context.Context) (store.AuditLink, error) {
	es, err := l.AuditLog(ctx, "", 0)
	if err != nil || len(es) == 0 {
		return store.AuditLink{}, err
	}
	e := es[len(es)-1]
	return store.AuditLink{Seq: e.Seq, Hash: e.Hash, Entry: e.ID}, nil
}

func (l truncatedLog) AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error) {
	es, err := l.Store.AuditLog(ctx, after, limit)
	for i, e := range es {
		if e.Seq > l.upTo {
			return es[:i], err
		}
	}
	return es, err
}

func (l truncatedLog) LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error) {
	cps, err := l.AuditCheckpoints(ctx, 0)
	if err != nil || len(cps) == 0 {
		return store.AuditCheckpoint{}, errors.Join(err, store.ErrNotFound)
	}
	return cps[len(cps)-1], nil
}

func (l truncatedLog) AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error) {
	cps, err := l.Store.AuditCheckpoints(ctx, from)
	for i, cp := range cps {
		if l.keepCps {
			break
		}
		if cp.Seq > l.upTo {
			return cps[:i], err
		}
	}
	return cps, err
}

// sealedStore is a store whose 5 entries a sealer sealed, and the sealer.
func sealedStore(t *testing.T, anchorFile string) (store.Store, *Sealer, *syncBuffer) {
	t.Helper()
	st := sealTestStore(t)
	storetest.AppendToolRan(t, st, 5)
	a, logs := newSealer(t, st, newFakeClock())
	a.file = anchorFile
	a.seal(sealCtx(t), false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 5 {
		t.Fatalf("sealed at %d, want 5", got)
	}
	return st, a, logs
}

// resetOf signs an operator's reset of st's chain at its head, as
// `slackgate audit reset` does, superseding prev.
func resetOf(t *testing.T, st store.Store, prev store.AuditCheckpoint, at time.Time) store.AuditCheckpoint {
	t.Helper()
	ctx := sealCtx(t)
	head, err := st.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var newest uint64
	if last, err := st.LastAuditCheckpoint(ctx); err == nil {
		newest = last.Seq
	}
	r := store.NextAuditCheckpoint(prev, head, at)
	r.Reset = true
	if err := store.SignAuditCheckpoint(testSigningKey, &r); err != nil {
		t.Fatal(err)
	}
	if err := st.PutAuditCheckpoint(ctx, r, newest); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSealerRefusesAStoreThatLostWhatItSealed: a store wiped and grown
// anew, one whose newest entries were cut (sealed or not), and one whose
// newest checkpoint another key signed are never sealed; the bot says why
// once, keeps refusing, and seals again only after an operator's reset.
func TestSealerRefusesAStoreThatLostWhatItSealed(t *testing.T) {
	ctx := sealCtx(t)
	t.Run("WipedAndRebuilt", func(t *testing.T) {
		_, a, logs := sealedStore(t, "")
		fresh := sealTestStore(t) // the same store, after a writer deleted the chain
		storetest.AppendToolRan(t, fresh, 7)
		a.st = fresh
		a.seal(ctx, true)
		a.seal(ctx, true)
		if got := storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)); got != 0 {
			t.Fatalf("the rebuilt chain was sealed at %d", got)
		}
		if why := a.broken; !strings.Contains(why, "the store holds no audit checkpoint; this bot sealed or checked one at seq 5") {
			t.Errorf("why = %q", why)
		}
		if n := strings.Count(logs.String(), "audit chain broken, not sealed"); n != 1 {
			t.Errorf("the break was logged %d times, want once:\n%s", n, logs)
		}
		// An operator looks, and signs a reset: sealing goes on from it.
		storetest.AppendToolRan(t, fresh, 1)
		reset := resetOf(t, fresh, a.anchor.Checkpoint, a.clock.Now().Add(time.Minute))
		storetest.AppendToolRan(t, fresh, 2)
		a.seal(ctx, true)
		a.seal(ctx, true)
		if a.broken != "" || storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)) != reset.Seq+2 {
			t.Fatalf("after a reset: broken %q, sealed at %d, want %d", a.broken, storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)), reset.Seq+2)
		}
		if last, _ := fresh.LastAuditCheckpoint(ctx); !last.Follows(reset) {
			t.Errorf("the checkpoint after the reset does not name it: %+v", last)
		}
	})
	t.Run("ResetReplayed", func(t *testing.T) {
		// A reset from before the anchor, put back by a store writer,
		// acknowledges nothing.
		st, a, _ := sealedStore(t, "")
		old := resetOf(t, st, store.AuditCheckpoint{}, a.anchor.Checkpoint.At.Add(-time.Hour))
		storetest.AppendToolRan(t, st, 3)
		a.seal(ctx, true)
		if a.broken == "" || storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)) != old.Seq {
			t.Fatalf("a replayed reset was taken: broken %q, sealed at %d", a.broken, storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)))
		}
	})
	t.Run("SealedEntriesCut", func(t *testing.T) {
		st, a, _ := sealedStore(t, "")
		a.st = truncatedLog{Store: st, upTo: 3}
		a.seal(ctx, true)
		if !strings.Contains(a.broken, "no audit checkpoint; this bot sealed or checked one at seq 5") {
			t.Errorf("why = %q", a.broken)
		}
	})
	t.Run("SealedEntriesCutCheckpointKept", func(t *testing.T) {
		st, a, _ := sealedStore(t, "")
		a.st = truncatedLog{Store: st, upTo: 3, keepCps: true}
		a.seal(ctx, true)
		if !strings.Contains(a.broken, "ends at seq 3, before the checkpoint at seq 5: sealed entries were removed") {
			t.Errorf("why = %q", a.broken)
		}
	})
	t.Run("UnsealedEntriesCut", func(t *testing.T) {
		st, a, _ := sealedStore(t, "")
		storetest.AppendToolRan(t, st, 4)
		a.seal(ctx, false) // sees seq 9, not due
		a.st = truncatedLog{Store: st, upTo: 7}
		a.seal(ctx, true)
		if !strings.Contains(a.broken, "ends at seq 7; this bot saw it reach seq 9") {
			t.Errorf("why = %q", a.broken)
		}
		if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 5 {
			t.Errorf("sealed at %d", got)
		}
	})
	t.Run("RewrittenAfterTheHeadSeen", func(t *testing.T) {
		st, a, _ := sealedStore(t, "")
		storetest.AppendToolRan(t, st, 2)
		a.seal(ctx, false) // sees seq 7, not due
		storetest.AppendToolRan(t, st, 2)
		a.st = tamperedLog{Store: st, seq: 8}
		a.seal(ctx, false) // still not due: the look alone finds it
		if !strings.Contains(a.broken, "(seq 8) does not link on from the head this bot saw at seq 7") {
			t.Errorf("why = %q", a.broken)
		}
	})
	t.Run("CheckpointOfAnotherKey", func(t *testing.T) {
		st, a, _ := sealedStore(t, "")
		storetest.AppendToolRan(t, st, 2)
		head, _ := st.AuditHead(ctx)
		forged := store.NextAuditCheckpoint(a.anchor.Checkpoint, head, a.clock.Now())
		if err := store.SignAuditCheckpoint(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), &forged); err != nil {
			t.Fatal(err)
		}
		if err := st.PutAuditCheckpoint(ctx, forged, 5); err != nil {
			t.Fatal(err)
		}
		a.seal(ctx, true)
		if !strings.Contains(a.broken, "at seq 7, is forged") {
			t.Errorf("why = %q", a.broken)
		}
	})
}

// TestSealerRemembersAcrossARestart: a bot restarted between the wipe and
// the rebuild still knows what it sealed, from its anchor file; one whose
// file is unreadable refuses rather than forget.
func TestSealerRemembersAcrossARestart(t *testing.T) {
	ctx := sealCtx(t)
	file := filepath.Join(t.TempDir(), "audit-anchor.json")
	_, first, _ := sealedStore(t, file)
	if a, err := ReadAnchor(file); err != nil || !a.Checkpoint.Same(first.anchor.Checkpoint) || a.Head.Seq != 5 {
		t.Fatalf("anchor kept = %+v, %v", a, err)
	}
	fresh := sealTestStore(t)
	storetest.AppendToolRan(t, fresh, 7)
	restarted, _ := newSealer(t, fresh, newFakeClock())
	restarted.file = file
	restarted.seal(ctx, true)
	if got := storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)); got != 0 || restarted.broken == "" {
		t.Fatalf("a restarted bot sealed the rebuilt chain at %d (broken %q)", got, restarted.broken)
	}
	// Without the file, memory is all it has: that is what the audit
	// channel and `audit verify` are for.
	amnesiac, _ := newSealer(t, fresh, newFakeClock())
	amnesiac.seal(ctx, true)
	if got := storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)); got != 7 {
		t.Fatalf("a bot without an anchor sealed at %d, want 7", got)
	}

	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken, _ := newSealer(t, fresh, newFakeClock())
	broken.file = file
	storetest.AppendToolRan(t, fresh, 1)
	broken.seal(ctx, true)
	if got := storetest.SealedAt(t, fresh, testSigningKey.Public().(ed25519.PublicKey)); got != 7 || !strings.Contains(broken.broken, "audit anchor") {
		t.Fatalf("a bot with an unreadable anchor sealed at %d (broken %q)", got, broken.broken)
	}
}

// TestSealersAdoptEachOthersCheckpoints: a replica takes the checkpoints
// another sealed after its own, and its next one names the newest.
func TestSealersAdoptEachOthersCheckpoints(t *testing.T) {
	ctx := sealCtx(t)
	st := sealTestStore(t)
	clock := newFakeClock()
	a, _ := newSealer(t, st, clock)
	b, _ := newSealer(t, st, clock)
	for i := range 3 {
		storetest.AppendToolRan(t, st, 2)
		sealer := a
		if i%2 == 1 {
			sealer = b
		}
		sealer.seal(ctx, true)
	}
	cps, err := st.AuditCheckpoints(ctx, 0)
	if err != nil || len(cps) != 3 {
		t.Fatalf("checkpoints = %+v, %v", cps, err)
	}
	for i := 1; i < len(cps); i++ {
		if !cps[i].Follows(cps[i-1]) {
			t.Errorf("checkpoint %d does not name the one before it", cps[i].Seq)
		}
	}
	a.seal(ctx, false)
	if a.broken != "" || b.broken != "" || !a.anchor.Checkpoint.Same(cps[2]) {
		t.Errorf("replicas: %q %q, anchor %d", a.broken, b.broken, a.anchor.Checkpoint.Seq)
	}
}
