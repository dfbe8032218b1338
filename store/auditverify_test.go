package store_test

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// chainOf builds n chained entries, ids "e001"…, as a store would.
func chainOf(t *testing.T, n int) []store.AuditEntry {
	t.Helper()
	var out []store.AuditEntry
	prev := store.AuditGenesis
	for i := 1; i <= n; i++ {
		e := store.AuditEntry{At: at.Add(time.Duration(i) * time.Second), Action: store.AuditCreated,
			RequestID: fmt.Sprintf("req-%d", i), SessionID: "s1", Kind: store.KindTool, Tool: "Bash"}
		out = append(out, link(t, e, uint64(i), prev))
		prev = out[len(out)-1].Hash
	}
	return out
}

// link gives e the chain fields of seq after prev, as a store (or an
// attacker who recomputes them) would.
func link(t *testing.T, e store.AuditEntry, seq uint64, prev string) store.AuditEntry {
	t.Helper()
	d, err := store.AuditDigest(e)
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.AuditLinkHash(seq, prev, d)
	if err != nil {
		t.Fatal(err)
	}
	e.ID, e.Seq, e.Prev, e.Hash = fmt.Sprintf("e%03d", seq), seq, prev, h
	return e
}

// relink recomputes every link from index i on, as an attacker rewriting
// the chain does.
func relink(t *testing.T, es []store.AuditEntry, i int) {
	t.Helper()
	for ; i < len(es); i++ {
		prev := store.AuditGenesis
		if i > 0 {
			prev = es[i-1].Hash
		}
		id := es[i].ID
		es[i] = link(t, es[i], uint64(i+1), prev)
		es[i].ID = id
	}
}

func checkpointAt(t *testing.T, priv ed25519.PrivateKey, e store.AuditEntry) store.AuditCheckpoint {
	t.Helper()
	cp := store.AuditCheckpoint{Seq: e.Seq, Hash: e.Hash, At: e.At.Add(time.Second), Entry: e.ID}
	if err := store.SignAuditCheckpoint(priv, &cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

func verify(pub ed25519.PublicKey, cps []store.AuditCheckpoint, es []store.AuditEntry) store.AuditReport {
	v := store.NewAuditVerifier(pub, cps)
	for _, e := range es {
		if !v.Entry(e) {
			break
		}
	}
	return v.Finish()
}

func TestAnIntactChainVerifies(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 10)
	cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[4])}
	rep := verify(pub, cps, es)
	if rep.Break != nil {
		t.Fatalf("intact chain: %v", rep.Break)
	}
	if rep.Entries != 10 || rep.Checkpoints != 1 || rep.Sealed != 5 || rep.Unsealed != 5 || !rep.FirstUnsealed.Equal(es[5].At) {
		t.Errorf("report = %+v; want 10 entries, 1 checkpoint at 5, 5 unsealed from entry 6", rep)
	}
	if rep.Head.Seq != 10 || rep.Head.Hash != es[9].Hash || rep.Head.Entry != "e010" {
		t.Errorf("head = %+v", rep.Head)
	}
}

// TestVerifyNamesEachBreak: every way an outsider with write access but no
// key can edit the log is named, with the checkpoint that proves it.
func TestVerifyNamesEachBreak(t *testing.T) {
	pub, priv := testKey(1)
	_, stranger := testKey(9)
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint)
		kind   store.AuditBreakKind
		entry  string
		seq    uint64
		proof  uint64 // the proving checkpoint's seq; 0: none
	}{
		{"a field changed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			es[2].Outcome = store.OutcomeAllow
			return es, cps
		}, store.AuditChanged, "e003", 3, 6},
		{"a field changed and its hash recomputed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			es[2].By = "U666"
			id := es[2].ID
			es[2] = link(t, es[2], 3, es[1].Hash)
			es[2].ID = id
			return es, cps
		}, store.AuditChanged, "e003", 3, 6},
		{"one removed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			return slices.Delete(es, 2, 3), cps
		}, store.AuditRemoved, "e004", 3, 6},
		{"the first removed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			return es[1:], cps
		}, store.AuditRemoved, "e002", 1, 6},
		{"a copy inserted", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			cp := es[1]
			cp.ID = "copy"
			return slices.Insert(es, 3, cp), cps
		}, store.AuditInserted, "copy", 4, 6},
		{"a forged entry inserted with a correct link", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			f := es[2]
			f.RequestID, f.Action, f.Outcome, f.By = "req-x", store.AuditSettled, store.OutcomeAllow, "U1"
			f = link(t, f, 4, es[2].Hash)
			f.ID = "forged"
			return slices.Insert(es, 3, f), cps
		}, store.AuditInserted, "forged", 4, 6},
		{"a forged entry inserted where a checkpoint is", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			f := es[5]
			f.By = "U666"
			f = link(t, f, 6, es[4].Hash)
			f.ID = "forged"
			return slices.Insert(es, 5, f), cps
		}, store.AuditInserted, "forged", 6, 6},
		{"an entry without chain fields inserted", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			f := store.AuditEntry{ID: "bare", At: at, Action: store.AuditCreated, RequestID: "r", SessionID: "s"}
			return slices.Insert(es, 3, f), cps
		}, store.AuditInserted, "bare", 4, 6},
		{"an entry changed and the chain rebuilt after it", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			es[2].Message = "rewritten"
			relink(t, es, 2)
			return es, cps
		}, store.AuditRewritten, "e006", 6, 6},
		{"a checkpoint forged", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			cps[0] = checkpointAt(t, stranger, es[5])
			return es, cps
		}, store.AuditForged, "e006", 6, 6},
		{"the sealed tail removed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			return es[:3], cps
		}, store.AuditRemoved, "", 4, 6},
		{"an unsealed entry changed", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			es[8].Tool = "Write"
			return es, cps
		}, store.AuditChanged, "e009", 9, 0},
		{"two entries swapped", func(t *testing.T, es []store.AuditEntry, cps []store.AuditCheckpoint) ([]store.AuditEntry, []store.AuditCheckpoint) {
			es[2], es[3] = es[3], es[2]
			return es, cps
		}, store.AuditInserted, "e004", 3, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := chainOf(t, 10)
			cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[5])}
			es, cps = tc.tamper(t, es, cps)
			rep := verify(pub, cps, es)
			b := rep.Break
			if b == nil {
				t.Fatalf("no break found; report %+v", rep)
			}
			if b.Kind != tc.kind || b.Entry != tc.entry || b.Seq != tc.seq {
				t.Errorf("break = %s %q at seq %d (%v); want %s %q at seq %d", b.Kind, b.Entry, b.Seq, b, tc.kind, tc.entry, tc.seq)
			}
			switch {
			case tc.proof == 0 && b.Checkpoint != nil:
				t.Errorf("break proven by checkpoint %d; none covers seq %d", b.Checkpoint.Seq, tc.seq)
			case tc.proof != 0 && (b.Checkpoint == nil || b.Checkpoint.Seq != tc.proof):
				t.Errorf("break proven by %+v, want the checkpoint at %d", b.Checkpoint, tc.proof)
			}
			if msg := b.Error(); !strings.Contains(msg, string(tc.kind)) {
				t.Errorf("message %q does not say %s", msg, tc.kind)
			}
		})
	}
}

func TestRemovedEntriesAreCountedAndPlaced(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 10)
	cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[9])}
	rep := verify(pub, cps, slices.Delete(es, 3, 6))
	b := rep.Break
	if b == nil || b.Kind != store.AuditRemoved || b.Seq != 4 || b.Missing != 3 || b.After != "e003" || b.Entry != "e007" {
		t.Fatalf("break = %+v; want entries 4 to 6 removed between e003 and e007", b)
	}
	if want := "3 entries (seq 4 to 6) were removed between e003 and e007; proven by the checkpoint at seq 10"; !strings.HasPrefix(b.Error(), want) {
		t.Errorf("message = %q, want it to start %q", b.Error(), want)
	}
}

// TestATrimmedLogVerifiesFromTheCheckpointKept: retention leaves the
// entries after a checkpoint, and that checkpoint.
func TestATrimmedLogVerifiesFromTheCheckpointKept(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 10)
	cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[4]), checkpointAt(t, priv, es[7])}
	rep := verify(pub, cps, es[5:])
	if rep.Break != nil || rep.From != 5 || rep.Entries != 5 || rep.Checkpoints != 2 || rep.Unsealed != 2 {
		t.Fatalf("report = %+v (break %v); want 5 entries from checkpoint 5, 2 checkpoints, 2 unsealed", rep, rep.Break)
	}
	// Everything up to the last checkpoint trimmed, nothing since.
	rep = verify(pub, cps[1:], nil)
	if rep.Break != nil || rep.From != 8 || rep.Entries != 0 || rep.Checkpoints != 1 {
		t.Fatalf("fully trimmed: %+v (break %v)", rep, rep.Break)
	}
	// Cut without a checkpoint to start from: the start is missing.
	rep = verify(pub, nil, es[5:])
	if b := rep.Break; b == nil || b.Kind != store.AuditRemoved || b.Seq != 1 || b.Missing != 5 || b.After != "" {
		t.Fatalf("a cut nothing anchors: %+v", rep.Break)
	}
	// A kept checkpoint forged to anchor a rewritten tail.
	_, stranger := testKey(9)
	rep = verify(pub, []store.AuditCheckpoint{checkpointAt(t, stranger, es[4])}, es[5:])
	if b := rep.Break; b == nil || b.Kind != store.AuditForged || b.Checkpoint.Seq != 5 {
		t.Fatalf("a forged anchor: %+v", rep.Break)
	}
}

func TestEntriesFromBeforeTheChainAreCountedNotFailed(t *testing.T) {
	pub, _ := testKey(1)
	legacy := []store.AuditEntry{
		{ID: "old1", At: at, Action: store.AuditCreated, RequestID: "r", SessionID: "s"},
		{ID: "old2", At: at, Action: store.AuditCreated, RequestID: "r2", SessionID: "s"},
	}
	rep := verify(pub, nil, append(legacy, chainOf(t, 3)...))
	if rep.Break != nil || rep.Legacy != 2 || rep.Entries != 3 {
		t.Fatalf("report = %+v (break %v)", rep, rep.Break)
	}
}

// TestOmittedEntriesVerifyByTheirLink: a filtered export keeps the links
// of what it leaves out, and the chain still verifies end to end.
func TestOmittedEntriesVerifyByTheirLink(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 6)
	cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[5])}
	feed := func(digestOf func(i int, e store.AuditEntry) string) store.AuditReport {
		v := store.NewAuditVerifier(pub, cps)
		for i, e := range es {
			if i%2 == 0 {
				v.Entry(e)
				continue
			}
			v.Omitted(store.AuditOmitted{ID: e.ID, Seq: e.Seq, Prev: e.Prev, Hash: e.Hash, Digest: digestOf(i, e)})
		}
		return v.Finish()
	}
	rep := feed(func(_ int, e store.AuditEntry) string {
		d, _ := store.AuditDigest(e)
		return hex.EncodeToString(d[:])
	})
	if rep.Break != nil || rep.Entries != 3 || rep.Omitted != 3 || rep.Checkpoints != 1 {
		t.Fatalf("report = %+v (break %v)", rep, rep.Break)
	}
	rep = feed(func(i int, e store.AuditEntry) string {
		if i == 3 {
			return strings.Repeat("0", 64)
		}
		d, _ := store.AuditDigest(e)
		return hex.EncodeToString(d[:])
	})
	if b := rep.Break; b == nil || b.Kind != store.AuditChanged || b.Entry != "e004" {
		t.Fatalf("an omitted entry with another digest: %+v", rep.Break)
	}
}

// TestABreakCannotWriteToTheTerminal: an id an attacker stored with escape
// sequences is quoted in the message an auditor reads.
func TestABreakCannotWriteToTheTerminal(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 4)
	cps := []store.AuditCheckpoint{checkpointAt(t, priv, es[3])}
	es[1].ID = "e002\x1b[2K\r all good"
	es[1].Tool = "Write"
	b := verify(pub, cps, es).Break
	if b == nil || strings.ContainsRune(b.Error(), '\x1b') || !strings.Contains(b.Error(), `"e002\x1b[2K\r all good"`) {
		t.Fatalf("break message %q; want the id quoted", b)
	}
}
