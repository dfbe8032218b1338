package storetest

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// sealKey signs the suite's checkpoints, as a bot's decision key does.
var sealKey = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))

// SealPublicKey is the public half of the key the suite seals with.
func SealPublicKey() ed25519.PublicKey { return sealKey.Public().(ed25519.PublicKey) }

// seal signs a checkpoint at e and stores it after the newest one.
func seal(t *testing.T, ctx context.Context, s store.Store, e store.AuditEntry) store.AuditCheckpoint {
	t.Helper()
	cp := store.AuditCheckpoint{Seq: e.Seq, Hash: e.Hash, At: base.Add(time.Hour), Entry: e.ID}
	requireNoError(t, store.SignAuditCheckpoint(sealKey, &cp), "SignAuditCheckpoint")
	var prev uint64
	if last, err := s.LastAuditCheckpoint(ctx); err == nil {
		prev = last.Seq
	}
	requireNoError(t, s.PutAuditCheckpoint(ctx, cp, prev), "PutAuditCheckpoint")
	return cp
}

// verifyChain walks the whole log against the kept checkpoints and fails
// t on a break; it returns the report.
func verifyChain(t *testing.T, ctx context.Context, s store.Store) store.AuditReport {
	t.Helper()
	cps, err := s.AuditCheckpoints(ctx, 0)
	requireNoError(t, err, "AuditCheckpoints")
	entries, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	v := store.NewAuditVerifier(SealPublicKey(), cps)
	for _, e := range entries {
		v.Entry(e)
	}
	rep := v.Finish()
	if rep.Break != nil {
		t.Fatalf("the audit chain does not verify: %v", rep.Break)
	}
	return rep
}

// testAuditChain: every way an entry is appended (a transition's, a
// refusal's, a remembered answer's, one on its own) links it to the one
// before, and the entries of a session carry its thread.
func (h *harness) testAuditChain(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	head, err := s.AuditHead(ctx)
	requireNoError(t, err, "AuditHead")
	if head != (store.AuditLink{}) {
		t.Fatalf("AuditHead of an empty store = %+v, want zero", head)
	}
	sess := createSession(t, ctx, s)
	r := newRequest(sess.ID, 1)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	_, err = s.Decide(ctx, r.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	_, err = s.Refuse(ctx, r.ID, refusal())
	requireNoError(t, err, "Refuse")
	requireNoError(t, s.AppendAudit(ctx, store.AuditEntry{Action: store.AuditToolRan, SessionID: sess.ID, Tool: "Bash", ReportedBy: "api:laptop",
		Result: store.ToolSucceeded, At: base}), "AppendAudit")
	a := rememberedAnswer(t, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "Postgres")
	a.SessionID = sess.ID
	a, err = s.Keep(ctx, a)
	requireNoError(t, err, "Keep")
	_, err = s.Forget(ctx, store.StandingAnswer, a.ID, "U2", "Ann")
	requireNoError(t, err, "Forget")
	elsewhere := createRequest(t, ctx, s) // its session does not exist: no thread

	entries, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(entries) != 7 {
		t.Fatalf("AuditLog = %d entries, want 7", len(entries))
	}
	prev := store.AuditGenesis
	for i, e := range entries {
		if e.Seq != uint64(i+1) || e.Prev != prev || len(e.Hash) != 64 {
			t.Errorf("entry %d (%s): seq %d, prev %.8s, hash %q; want seq %d after %.8s", i, e.Action, e.Seq, e.Prev, e.Hash, i+1, prev)
		}
		prev = e.Hash
		thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTS}
		switch {
		case e.Action == store.AuditAnswerForgotten || e.RequestID == elsewhere.ID:
			if !thread.IsZero() {
				t.Errorf("entry %d (%s) names thread %+v; its session has none", i, e.Action, thread)
			}
		case thread != sess.Thread:
			t.Errorf("entry %d (%s) names thread %+v, want its session's %+v", i, e.Action, thread, sess.Thread)
		}
	}
	head, err = s.AuditHead(ctx)
	requireNoError(t, err, "AuditHead")
	last := entries[len(entries)-1]
	if head != (store.AuditLink{Seq: last.Seq, Hash: last.Hash, Entry: last.ID}) {
		t.Errorf("AuditHead = %+v, want the last entry's link %d %s %s", head, last.Seq, last.Hash, last.ID)
	}
	rep := verifyChain(t, ctx, s)
	if rep.Entries != 7 || rep.Unsealed != 7 {
		t.Errorf("verified %+v, want 7 entries, all unsealed", rep)
	}
	// A caller's chain fields are the store's to set.
	requireNoError(t, s.AppendAudit(ctx, store.AuditEntry{Action: store.AuditToolRan, SessionID: sess.ID, Tool: "Bash", ReportedBy: "api:laptop",
		Result: store.ToolSucceeded, At: base, Seq: 1, Prev: store.AuditGenesis, Hash: entries[0].Hash}), "AppendAudit with chain fields")
	if rep := verifyChain(t, ctx, s); rep.Entries != 8 {
		t.Errorf("verified %d entries after an append that came with chain fields, want 8", rep.Entries)
	}
}

// testAuditChainConcurrent: appends racing from many goroutines on two
// clients still form one chain, each seq once.
func (h *harness) testAuditChainConcurrent(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	const workers, each = 16, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		c := s
		if w%2 == 1 {
			c = s2
		}
		wg.Go(func() {
			sid := uniq("sess")
			for i := range each {
				var err error
				switch i % 3 {
				case 0, 1:
					r := newRequest(sid, i)
					if err = c.CreateRequest(ctx, r); err == nil && i%3 == 1 {
						_, err = c.Decide(ctx, r.ID, allow("U1"))
					}
				default:
					err = c.AppendAudit(ctx, store.AuditEntry{Action: store.AuditToolRan, SessionID: sid, Tool: "Bash", ReportedBy: "api:laptop",
						Result: store.ToolSucceeded, Message: fmt.Sprint("run ", i)})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	rep := verifyChain(t, ctx, s)
	// Per worker: 10 steps, 4 of them (i%3 == 1) adding a settlement.
	if want := workers * (each + 3); rep.Entries != want || rep.Head.Seq != uint64(want) {
		t.Errorf("verified %d entries up to seq %d, want %d", rep.Entries, rep.Head.Seq, want)
	}
}

// testAuditCheckpoints: checkpoints round-trip, one wins when several
// seal at once, and the store takes only one that names its chain.
func (h *harness) testAuditCheckpoints(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	_, err := s.LastAuditCheckpoint(ctx)
	requireIs(t, err, store.ErrNotFound, "LastAuditCheckpoint of an empty store")
	for range 3 {
		createRequest(t, ctx, s)
	}
	entries, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	first := seal(t, ctx, s, entries[0])
	got, err := s2.LastAuditCheckpoint(ctx)
	requireNoError(t, err, "LastAuditCheckpoint")
	if !sameCheckpoint(got, first) {
		t.Errorf("LastAuditCheckpoint = %+v, want %+v", got, first)
	}

	// Two bots seal the same head at once: one checkpoint.
	cp := store.AuditCheckpoint{Seq: entries[2].Seq, Hash: entries[2].Hash, At: base.Add(2 * time.Hour), Entry: entries[2].ID}
	requireNoError(t, store.SignAuditCheckpoint(sealKey, &cp), "SignAuditCheckpoint")
	results := make(chan error, 2)
	for _, c := range []store.Store{s, s2} {
		go func() { results <- c.PutAuditCheckpoint(ctx, cp, first.Seq) }()
	}
	won := 0
	for range 2 {
		switch err := <-results; {
		case err == nil:
			won++
		default:
			requireIs(t, err, store.ErrExists, "the racing PutAuditCheckpoint that lost")
		}
	}
	if won != 1 {
		t.Fatalf("%d racing checkpoints stored, want 1", won)
	}
	all, err := s.AuditCheckpoints(ctx, 0)
	requireNoError(t, err, "AuditCheckpoints")
	if len(all) != 2 || !sameCheckpoint(all[0], first) || !sameCheckpoint(all[1], cp) {
		t.Fatalf("AuditCheckpoints = %+v, want the two, oldest first", all)
	}
	from, err := s.AuditCheckpoints(ctx, first.Seq+1)
	requireNoError(t, err, "AuditCheckpoints from")
	if len(from) != 1 || from[0].Seq != cp.Seq {
		t.Errorf("AuditCheckpoints(%d) = %+v, want the second only", first.Seq+1, from)
	}

	// Refused: a checkpoint whose prev is no longer the newest, one not
	// past its prev, and ones that do not name the chain's entry.
	fourth := createRequest(t, ctx, s)
	more, err := s.AuditLog(ctx, entries[2].ID, 0)
	requireNoError(t, err, "AuditLog")
	if len(more) != 1 || more[0].RequestID != fourth.ID {
		t.Fatalf("AuditLog after %s = %+v, want the fourth entry", entries[2].ID, more)
	}
	next := store.AuditCheckpoint{Seq: more[0].Seq, Hash: more[0].Hash, At: base.Add(3 * time.Hour), Entry: more[0].ID}
	for _, tc := range []struct {
		name string
		edit func(c *store.AuditCheckpoint)
		prev uint64
		want error
	}{
		{"after a checkpoint that is no longer the newest", func(*store.AuditCheckpoint) {}, first.Seq, store.ErrExists},
		{"not past its prev", func(*store.AuditCheckpoint) {}, next.Seq, store.ErrInvalid},
		{"of another hash", func(c *store.AuditCheckpoint) { c.Hash = entries[0].Hash }, cp.Seq, store.ErrInvalid},
		{"of another entry", func(c *store.AuditCheckpoint) { c.Entry = entries[0].ID }, cp.Seq, store.ErrInvalid},
		{"of an entry that is not there", func(c *store.AuditCheckpoint) { c.Entry = entries[0].ID[:len(entries[0].ID)-1] + "9" }, cp.Seq, store.ErrInvalid},
	} {
		c := next
		tc.edit(&c)
		requireNoError(t, store.SignAuditCheckpoint(sealKey, &c), "SignAuditCheckpoint")
		requireIs(t, s.PutAuditCheckpoint(ctx, c, tc.prev), tc.want, "PutAuditCheckpoint "+tc.name)
	}
	unsigned := next
	requireIs(t, s.PutAuditCheckpoint(ctx, unsigned, cp.Seq), store.ErrInvalid, "PutAuditCheckpoint unsigned")
	if all, _ := s.AuditCheckpoints(ctx, 0); len(all) != 2 {
		t.Errorf("refused checkpoints were stored: %+v", all)
	}
	if rep := verifyChain(t, ctx, s); rep.Checkpoints != 2 || rep.Sealed != cp.Seq || rep.Unsealed != 1 {
		t.Errorf("verified %+v, want 2 checkpoints sealing 3 entries, and the fourth unsealed", rep)
	}

	// An operator's reset replaces every kept checkpoint, even one at
	// its seq or after it, still only after the newest.
	reset := store.NextAuditCheckpoint(cp, store.AuditLink{Seq: entries[1].Seq, Hash: entries[1].Hash, Entry: entries[1].ID}, base.Add(4*time.Hour))
	reset.Reset = true
	requireNoError(t, store.SignAuditCheckpoint(sealKey, &reset), "SignAuditCheckpoint")
	requireIs(t, s.PutAuditCheckpoint(ctx, reset, first.Seq), store.ErrExists, "PutAuditCheckpoint of a reset after a checkpoint that is no longer the newest")
	requireNoError(t, s2.PutAuditCheckpoint(ctx, reset, cp.Seq), "PutAuditCheckpoint of a reset")
	all, err = s.AuditCheckpoints(ctx, 0)
	requireNoError(t, err, "AuditCheckpoints")
	if len(all) != 1 || !all[0].Same(reset) || !all[0].Reset || all[0].Entry != reset.Entry {
		t.Fatalf("AuditCheckpoints after a reset = %+v, want the reset alone", all)
	}
	if last, err := s.LastAuditCheckpoint(ctx); err != nil || !last.Same(reset) {
		t.Errorf("LastAuditCheckpoint after a reset = %+v, %v", last, err)
	}
	if rep := verifyChain(t, ctx, s); len(rep.Resets) != 1 || rep.Sealed != entries[1].Seq {
		t.Errorf("verified %+v, want the reset sealing 2 entries", rep)
	}
}

func sameCheckpoint(a, b store.AuditCheckpoint) bool {
	return a.At.Equal(b.At) && a.Seq == b.Seq && a.Hash == b.Hash && a.Entry == b.Entry && string(a.Signature) == string(b.Signature)
}

// AppendToolRan appends n tool-ran entries to st's audit log, for tests
// of what seals and delivers it.
func AppendToolRan(tb testing.TB, st store.Store, n int) {
	tb.Helper()
	for i := range n {
		err := st.AppendAudit(tb.Context(), store.AuditEntry{Action: store.AuditToolRan, SessionID: "s1", Tool: "Bash", ReportedBy: "api:laptop",
			Result: store.ToolSucceeded, Message: fmt.Sprint("step ", i)})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// SealedAt is the seq of st's newest audit checkpoint (0: none), once its
// signature by pub's key is checked.
func SealedAt(tb testing.TB, st store.Store, pub ed25519.PublicKey) uint64 {
	tb.Helper()
	cp, err := st.LastAuditCheckpoint(tb.Context())
	if errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := store.VerifyAuditCheckpoint(pub, cp); err != nil {
		tb.Fatalf("checkpoint at %d: %v", cp.Seq, err)
	}
	return cp.Seq
}
