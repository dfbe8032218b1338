package bot

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

// syncBuffer is a log sink the sealer and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func newSealer(t *testing.T, st auditSealStore, clock store.Clock) (*auditSealer, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	return &auditSealer{st: st, key: testSigningKey, clock: clock, every: time.Second, log: zerolog.New(logs)}, logs
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

func appendRan(t *testing.T, st store.Store, n int) {
	t.Helper()
	for i := range n {
		err := st.AppendAudit(testCtx(t), store.AuditEntry{Action: store.AuditToolRan, SessionID: "s1", Tool: "Bash", ReportedBy: "api:laptop",
			Result: store.ToolSucceeded, Message: fmt.Sprint("step ", i)})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sealedAt returns the newest checkpoint's seq (0: none), after checking
// its signature.
func sealedAt(t *testing.T, st store.Store) uint64 {
	t.Helper()
	cp, err := st.LastAuditCheckpoint(testCtx(t))
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyAuditCheckpoint(testSigningKey.Public().(ed25519.PublicKey), cp); err != nil {
		t.Fatalf("checkpoint at %d: %v", cp.Seq, err)
	}
	return cp.Seq
}

func TestSealerSealsAtOnceThenEveryHundredEntriesOrHour(t *testing.T) {
	st := sealTestStore(t)
	clock := newFakeClock()
	a, _ := newSealer(t, st, clock)
	ctx := testCtx(t)
	a.seal(ctx, false)
	if got := sealedAt(t, st); got != 0 {
		t.Fatalf("an empty log was sealed at %d", got)
	}
	appendRan(t, st, 3)
	a.seal(ctx, false)
	if got := sealedAt(t, st); got != 3 {
		t.Fatalf("first seal at %d, want 3: with no checkpoint yet the first look seals", got)
	}
	appendRan(t, st, store.AuditSealEntries-1)
	clock.Advance(store.AuditSealAfter - time.Second)
	a.seal(ctx, false)
	if got := sealedAt(t, st); got != 3 {
		t.Fatalf("sealed at %d with %d entries unsealed and the last checkpoint under an hour old", got, store.AuditSealEntries-1)
	}
	appendRan(t, st, 1)
	a.seal(ctx, false)
	if got, want := sealedAt(t, st), uint64(3+store.AuditSealEntries); got != want {
		t.Fatalf("sealed at %d, want %d once %d entries went unsealed", got, want, store.AuditSealEntries)
	}
	appendRan(t, st, 1)
	clock.Advance(store.AuditSealAfter - time.Second)
	a.seal(ctx, false)
	if got := sealedAt(t, st); got != 3+store.AuditSealEntries {
		t.Fatalf("one entry sealed before the hour was up (at %d)", got)
	}
	clock.Advance(time.Second)
	a.seal(ctx, false)
	if got := sealedAt(t, st); got != 4+store.AuditSealEntries {
		t.Fatalf("sealed at %d, want the entry unsealed for an hour sealed", got)
	}
}

// TestSealerRunsOnTheClockAndSealsAtShutdown: Run looks at the head every
// AuditSealEvery of its clock, and seals what is left when it stops.
func TestSealerRunsOnTheClockAndSealsAtShutdown(t *testing.T) {
	st := sealTestStore(t)
	clock := newFakeClock()
	a, _ := newSealer(t, st, clock)
	appendRan(t, st, 2)
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitTimers(t, clock, 1) // the first look is over
	if got := sealedAt(t, st); got != 2 {
		t.Fatalf("sealed at %d after the first look, want 2", got)
	}
	appendRan(t, st, store.AuditSealEntries)
	clock.Advance(a.every)
	waitTimers(t, clock, 1) // the second
	if got := sealedAt(t, st); got != 2+store.AuditSealEntries {
		t.Fatalf("sealed at %d after the second look, want %d", got, 2+store.AuditSealEntries)
	}
	appendRan(t, st, 1)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if got := sealedAt(t, st); got != 3+store.AuditSealEntries {
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
	appendRan(t, st, 5)
	a, logs := newSealer(t, tamperedLog{Store: st, seq: 3}, newFakeClock())
	a.seal(testCtx(t), true)
	a.seal(testCtx(t), true)
	if got := sealedAt(t, st); got != 0 {
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
	appendRan(t, st, 7)
	clock := newFakeClock()
	var wg sync.WaitGroup
	for range 4 {
		a, _ := newSealer(t, st, clock)
		wg.Go(func() { a.seal(testCtx(t), false) })
	}
	wg.Wait()
	cps, err := st.AuditCheckpoints(testCtx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cps) != 1 || cps[0].Seq != 7 {
		t.Fatalf("checkpoints = %+v, want one at 7", cps)
	}
}

// TestBotSealsTheAuditWhenConfigured: Run starts the sealer only with
// SealAudit, and it seals at shutdown.
func TestBotSealsTheAuditWhenConfigured(t *testing.T) {
	for _, seal := range []bool{false, true} {
		t.Run(fmt.Sprint("SealAudit=", seal), func(t *testing.T) {
			h := newHarness(t, transportSocket, harnessOpts{
				cfg: func(c *Config) { c.SealAudit = seal; c.AuditSealEvery = time.Hour },
			})
			st := h.st
			appendRan(t, st, 2)
			h.stop()
			want := uint64(0)
			if seal {
				want = 2
			}
			if got := sealedAt(t, st); got != want {
				t.Fatalf("sealed at %d after the bot stopped, want %d", got, want)
			}
		})
	}
}
