package auditsink

import (
	"context"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

// testSigningKey is the bots' key in these tests.
var testSigningKey = ed25519.NewKeyFromSeed([]byte("bot tests: decision signing seed"))

// sealCtx bounds a sealer test.
func sealCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newSealer(t *testing.T, st SealStore, clock store.Clock) (*Sealer, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	return &Sealer{st: st, key: testSigningKey, clock: clock, every: time.Second, log: zerolog.New(logs)}, logs
}

func sealTestStore(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestSealerSealsAtOnceThenEveryHundredEntriesOrHour(t *testing.T) {
	st := sealTestStore(t)
	clock := newFakeClock()
	a, _ := newSealer(t, st, clock)
	ctx := sealCtx(t)
	a.seal(ctx, false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 0 {
		t.Fatalf("an empty log was sealed at %d", got)
	}
	storetest.AppendToolRan(t, st, 3)
	a.seal(ctx, false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 3 {
		t.Fatalf("first seal at %d, want 3: with no checkpoint yet the first look seals", got)
	}
	storetest.AppendToolRan(t, st, store.AuditSealEntries-1)
	clock.Advance(store.AuditSealAfter - time.Second)
	a.seal(ctx, false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 3 {
		t.Fatalf("sealed at %d with %d entries unsealed and the last checkpoint under an hour old", got, store.AuditSealEntries-1)
	}
	storetest.AppendToolRan(t, st, 1)
	a.seal(ctx, false)
	if got, want := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)), uint64(3+store.AuditSealEntries); got != want {
		t.Fatalf("sealed at %d, want %d once %d entries went unsealed", got, want, store.AuditSealEntries)
	}
	storetest.AppendToolRan(t, st, 1)
	clock.Advance(store.AuditSealAfter - time.Second)
	a.seal(ctx, false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 3+store.AuditSealEntries {
		t.Fatalf("one entry sealed before the hour was up (at %d)", got)
	}
	clock.Advance(time.Second)
	a.seal(ctx, false)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 4+store.AuditSealEntries {
		t.Fatalf("sealed at %d, want the entry unsealed for an hour sealed", got)
	}
}

// TestSealerRunsOnTheClockAndSealsAtShutdown: Run looks at the head every
// AuditSealEvery of its clock, and seals what is left when it stops.
func TestSealerRunsOnTheClockAndSealsAtShutdown(t *testing.T) {
	st := sealTestStore(t)
	clock := newFakeClock()
	a, _ := newSealer(t, st, clock)
	storetest.AppendToolRan(t, st, 2)
	ctx, cancel := context.WithCancel(sealCtx(t))
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	clock.AwaitTimers(t, 1) // the first look is over
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 2 {
		t.Fatalf("sealed at %d after the first look, want 2", got)
	}
	storetest.AppendToolRan(t, st, store.AuditSealEntries)
	clock.Advance(a.every)
	clock.AwaitTimers(t, 1) // the second
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 2+store.AuditSealEntries {
		t.Fatalf("sealed at %d after the second look, want %d", got, 2+store.AuditSealEntries)
	}
	storetest.AppendToolRan(t, st, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 3+store.AuditSealEntries {
		t.Fatalf("sealed at %d after Run stopped, want the unsealed entry sealed at shutdown", got)
	}
}

// tamperedLog serves the log with one entry's field changed, as someone
// with write access to the store would leave it.
type tamperedLog struct {
	store.Store
	seq uint64
}

func (l tamperedLog) AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error) {
	es, err := l.Store.AuditLog(ctx, after, limit)
	for i := range es {
		if es[i].Seq == l.seq {
			es[i].By = "U0FORGED"
		}
	}
	return es, err
}

// TestSealerNeverSealsABrokenChain: a bot signing a checkpoint over an
// edited entry would vouch for the edit; it logs the break once instead.
func TestSealerNeverSealsABrokenChain(t *testing.T) {
	st := sealTestStore(t)
	storetest.AppendToolRan(t, st, 5)
	a, logs := newSealer(t, tamperedLog{Store: st, seq: 3}, newFakeClock())
	a.seal(sealCtx(t), true)
	a.seal(sealCtx(t), true)
	if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != 0 {
		t.Fatalf("a broken chain was sealed at %d", got)
	}
	if n := strings.Count(logs.String(), "audit chain broken, not sealed: entry "); n != 1 {
		t.Fatalf("the break was logged %d times, want once:\n%s", n, logs)
	}
}

// TestSealersOfSeveralBotsSealOnce: replicas looking at the same head at
// once store one checkpoint between them.
func TestSealersOfSeveralBotsSealOnce(t *testing.T) {
	st := sealTestStore(t)
	storetest.AppendToolRan(t, st, 7)
	clock := newFakeClock()
	var wg sync.WaitGroup
	for range 4 {
		a, _ := newSealer(t, st, clock)
		wg.Go(func() { a.seal(sealCtx(t), false) })
	}
	wg.Wait()
	cps, err := st.AuditCheckpoints(sealCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 1 || cps[0].Seq != 7 {
		t.Fatalf("checkpoints = %+v, want one at 7", cps)
	}
}
