package store_test

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// sealChain seals es at each index of at, every checkpoint (version 2)
// naming the one before it, as a bot seals.
func sealChain(t *testing.T, priv ed25519.PrivateKey, es []store.AuditEntry, at ...int) []store.AuditCheckpoint {
	t.Helper()
	var out []store.AuditCheckpoint
	var prev store.AuditCheckpoint
	for _, i := range at {
		e := es[i]
		cp := store.NextAuditCheckpoint(prev, store.AuditLink{Seq: e.Seq, Hash: e.Hash, Entry: e.ID}, e.At.Add(time.Second))
		if err := store.SignAuditCheckpoint(priv, &cp); err != nil {
			t.Fatal(err)
		}
		out, prev = append(out, cp), cp
	}
	return out
}

// TestCheckpointV2SignsTheOneBefore: a version 2 checkpoint's signature
// covers the checkpoint before it and whether it is a reset; version 1
// checkpoints still verify; each reads back from its text.
func TestCheckpointV2SignsTheOneBefore(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 10)
	cps := sealChain(t, priv, es, 4, 9)
	first, second := cps[0], cps[1]
	if first.PrevSeq != 0 || first.PrevDigest != "" || !second.Follows(first) || second.PrevSeq != 5 {
		t.Fatalf("chain of checkpoints: %+v then %+v", first, second)
	}
	if p := string(store.AuditCheckpointPayload(second)); !strings.HasPrefix(p, "slackgate audit checkpoint v2\n10\n") ||
		!strings.HasSuffix(p, "\n5\n"+second.PrevDigest+"\nseal\n") {
		t.Errorf("payload = %q", p)
	}
	for name, f := range map[string]func(*store.AuditCheckpoint){
		"previous seq":    func(c *store.AuditCheckpoint) { c.PrevSeq = 4 },
		"previous digest": func(c *store.AuditCheckpoint) { c.PrevDigest = strings.Repeat("0", 63) + "1" },
		"reset":           func(c *store.AuditCheckpoint) { c.Reset = true },
		"version":         func(c *store.AuditCheckpoint) { c.V, c.PrevSeq, c.PrevDigest = 0, 0, "" },
	} {
		c := second
		f(&c)
		if err := store.VerifyAuditCheckpoint(pub, c); !errors.Is(err, store.ErrAuditCheckpoint) {
			t.Errorf("checkpoint with its %s changed verifies: %v", name, err)
		}
	}
	reset := second
	reset.Reset, reset.Unlinked = true, true
	if err := store.SignAuditCheckpoint(priv, &reset); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(store.AuditCheckpointPayload(reset)), "\nreset-unlinked\n") {
		t.Errorf("an unlinked reset's payload = %q", store.AuditCheckpointPayload(reset))
	}
	vouched := reset
	vouched.Unlinked = false
	if err := store.VerifyAuditCheckpoint(pub, vouched); !errors.Is(err, store.ErrAuditCheckpoint) {
		t.Errorf("an unlinked reset passes for one vouching for the chain: %v", err)
	}
	if err := (store.AuditCheckpoint{Seq: 1, Hash: second.Hash, At: at, Entry: "e", Signature: second.Signature, V: 2, Unlinked: true}).Validate(); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Validate of an unlinked seal = %v, want ErrInvalid", err)
	}
	v1 := checkpointAt(t, priv, es[2])
	if err := store.VerifyAuditCheckpoint(pub, v1); err != nil || v1.V != 0 {
		t.Fatalf("a version 1 checkpoint: %v", err)
	}
	if after := store.NextAuditCheckpoint(v1, store.AuditLink{Seq: 4, Hash: es[3].Hash, Entry: "e004"}, at); !after.Follows(v1) {
		t.Error("a version 2 checkpoint cannot follow a version 1 one")
	}
	for _, cp := range []store.AuditCheckpoint{v1, first, second, reset} {
		text := store.AuditCheckpointText(cp)
		back, err := store.ParseAuditCheckpointText(text)
		if err != nil || !back.Same(cp) {
			t.Errorf("%q read back as %+v, %v", text, back, err)
		}
	}
	for _, bad := range []string{
		"", "cp2", strings.Replace(store.AuditCheckpointText(second), " seal ", " sealed ", 1),
		strings.Replace(store.AuditCheckpointText(second), "cp2 10", "cp2 010", 1),
		strings.Replace(store.AuditCheckpointText(v1), "cp1", "cp2", 1),
		strings.Replace(store.AuditCheckpointText(second), " 5 ", " 50 ", 1), // after itself
	} {
		if _, err := store.ParseAuditCheckpointText(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("ParseAuditCheckpointText(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestCheckpointsThatDoNotFollowAreNamed: a checkpoint removed between
// two, checkpoints that start over, and a first checkpoint naming one the
// log does not hold are breaks; a reset and version 1 checkpoints are not.
func TestCheckpointsThatDoNotFollowAreNamed(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 12)
	cps := sealChain(t, priv, es, 3, 7, 11)
	if rep := verify(pub, cps, es); rep.Break != nil || rep.Checkpoints != 3 {
		t.Fatalf("an intact chain of checkpoints: %+v (%v)", rep, rep.Break)
	}
	// The checkpoint at 8 removed: the one at 12 names it.
	b := verify(pub, []store.AuditCheckpoint{cps[0], cps[2]}, es).Break
	if b == nil || b.Kind != store.AuditUnlinked || b.Seq != 12 || !strings.Contains(b.Error(), "names a checkpoint at seq 8") {
		t.Errorf("a checkpoint removed between two: %v", b)
	}
	// The first removed while the log still begins at seq 1.
	b = verify(pub, cps[1:], es).Break
	if b == nil || b.Kind != store.AuditUnlinked || b.Seq != 8 {
		t.Errorf("the first checkpoint removed: %v", b)
	}
	// Trimmed by retention up to the checkpoint at 8: it anchors, and
	// names one gone with the trimmed entries.
	if rep := verify(pub, cps[1:], es[8:]); rep.Break != nil || rep.From != 8 {
		t.Errorf("a trimmed log: %+v (%v)", rep, rep.Break)
	}
	// A bot without memory seals a rebuilt chain: its checkpoints start
	// over after the one at 8.
	over := sealChain(t, priv, es, 11)
	b = verify(pub, []store.AuditCheckpoint{cps[0], cps[1], over[0]}, es).Break
	if b == nil || b.Kind != store.AuditUnlinked || b.Seq != 12 || !strings.Contains(b.Error(), "started over") {
		t.Errorf("checkpoints that start over: %v", b)
	}
	// An operator's reset names what it acknowledges, and is reported.
	reset := store.NextAuditCheckpoint(cps[2], store.AuditLink{Seq: 4, Hash: es[3].Hash, Entry: "e004"}, at.Add(time.Hour))
	reset.Reset = true
	if err := store.SignAuditCheckpoint(priv, &reset); err != nil {
		t.Fatal(err)
	}
	rep := verify(pub, []store.AuditCheckpoint{reset}, es[:6])
	if rep.Break != nil || len(rep.Resets) != 1 || rep.Sealed != 4 {
		t.Errorf("a reset: %+v (%v)", rep, rep.Break)
	}
	// Version 1 checkpoints name none, and the first version 2 one names
	// the last of them.
	v1 := []store.AuditCheckpoint{checkpointAt(t, priv, es[1]), checkpointAt(t, priv, es[3])}
	next := store.NextAuditCheckpoint(v1[1], store.AuditLink{Seq: 8, Hash: es[7].Hash, Entry: "e008"}, at)
	if err := store.SignAuditCheckpoint(priv, &next); err != nil {
		t.Fatal(err)
	}
	if rep := verify(pub, append(v1, next), es); rep.Break != nil || rep.Checkpoints != 3 {
		t.Errorf("version 1 then 2: %+v (%v)", rep, rep.Break)
	}
}

// TestPublishedCheckpointsAndExpectationsHoldTheStore: what is kept
// outside the store catches what the chain alone cannot: a store rebuilt
// from nothing, its newest entries cut, a checkpoint removed or replaced.
func TestPublishedCheckpointsAndExpectationsHoldTheStore(t *testing.T) {
	pub, priv := testKey(1)
	es := chainOf(t, 12)
	cps := sealChain(t, priv, es, 3, 7)
	run := func(kept []store.AuditCheckpoint, entries []store.AuditEntry, outside func(v *store.AuditVerifier)) store.AuditReport {
		v := store.NewAuditVerifier(pub, kept)
		outside(v)
		for _, e := range entries {
			if !v.Entry(e) {
				break
			}
		}
		return v.Finish()
	}
	channel := func(v *store.AuditVerifier) {
		for _, cp := range cps {
			v.Published(cp, "the audit channel")
		}
	}
	if rep := run(cps, es, channel); rep.Break != nil || rep.Expected != 2 {
		t.Fatalf("the store as published: %+v (%v)", rep, rep.Break)
	}
	// Wiped and rebuilt: the same requests, other times, sealed anew.
	rebuilt := chainOf(t, 5)
	for i := range rebuilt {
		rebuilt[i].Message = "rebuilt"
	}
	relink(t, rebuilt, 0)
	fresh := sealChain(t, priv, rebuilt, 4)
	b := run(fresh, rebuilt, channel).Break
	if b == nil || b.Kind != store.AuditRewritten || b.Seq != 4 || !strings.Contains(b.Error(), "kept by the audit channel") {
		t.Errorf("a rebuilt store: %v", b)
	}
	// The newest entries cut, and the checkpoint sealing them.
	b = run(cps[:1], es[:6], channel).Break
	if b == nil || b.Kind != store.AuditCheckpointMissing || b.Seq != 8 {
		t.Errorf("a truncated store: %v", b)
	}
	// The newest entries cut, the checkpoint kept: the chain falls short.
	b = run(cps, es[:6], channel).Break
	if b == nil || b.Kind != store.AuditRemoved || b.Seq != 7 {
		t.Errorf("a truncated store keeping its checkpoint: %v", b)
	}
	// A checkpoint replaced by one another bot signed over the same head.
	other := cps[1]
	other.At = other.At.Add(time.Minute)
	if err := store.SignAuditCheckpoint(priv, &other); err != nil {
		t.Fatal(err)
	}
	b = run([]store.AuditCheckpoint{cps[0], other}, es, channel).Break
	if b == nil || b.Kind != store.AuditCheckpointReplaced || b.Seq != 8 {
		t.Errorf("a replaced checkpoint: %v", b)
	}
	// One published under another key is refused, not trusted.
	_, stranger := testKey(9)
	b = run(cps, es, func(v *store.AuditVerifier) { v.Published(checkpointAt(t, stranger, es[9]), "the webhook") }).Break
	if b == nil || b.Kind != store.AuditForged {
		t.Errorf("a published checkpoint under another key: %v", b)
	}
	// A published checkpoint retention cut the log past is not asked for.
	if rep := run(cps[1:], es[8:], channel); rep.Break != nil {
		t.Errorf("a trimmed log: %v", rep.Break)
	}

	// -expect: the unsealed tail is held too.
	expect := func(seq uint64, hash string) func(*store.AuditVerifier) {
		return func(v *store.AuditVerifier) { v.Expect(seq, hash, "-expect") }
	}
	if rep := run(cps, es, expect(11, es[10].Hash)); rep.Break != nil || rep.Expected != 1 {
		t.Errorf("an expectation met: %+v (%v)", rep, rep.Break)
	}
	b = run(cps, es[:10], expect(11, es[10].Hash)).Break
	if b == nil || b.Kind != store.AuditRemoved || b.Seq != 11 || !strings.Contains(b.Error(), "-expect shows it") {
		t.Errorf("the unsealed tail cut: %v", b)
	}
	b = run(cps, es, expect(11, es[9].Hash)).Break
	if b == nil || b.Kind != store.AuditRewritten || b.Seq != 11 {
		t.Errorf("an expectation of another hash: %v", b)
	}
	b = run(cps[1:], es[8:], expect(3, es[2].Hash)).Break
	if b == nil || !strings.Contains(b.Error(), "cannot be checked") {
		t.Errorf("an expectation before the kept log: %v", b)
	}
}

// TestPublishedCheckpointsMustFollowEachOther: what a channel holds, in
// the order it was posted: a redelivery counts once, a reset begins the
// epoch the store must keep, and checkpoints that start over without one
// are a break.
func TestPublishedCheckpointsMustFollowEachOther(t *testing.T) {
	_, priv := testKey(1)
	es := chainOf(t, 12)
	cps := sealChain(t, priv, es, 3, 7, 11)
	if epoch, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], cps[1], cps[1], cps[2]}, "the audit channel"); epoch != 0 || b != nil {
		t.Errorf("a chain published with a redelivery: epoch %d, %v", epoch, b)
	}
	over := sealChain(t, priv, es, 4)
	_, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], cps[1], over[0]}, "the audit channel")
	if b == nil || b.Kind != store.AuditUnlinked || !strings.Contains(b.Error(), "started over") {
		t.Errorf("checkpoints that start over: %v", b)
	}
	// A bot that adopted an older checkpoint and sealed on from it: the
	// newest it followed was superseded without a reset.
	fork := store.NextAuditCheckpoint(cps[0], store.AuditLink{Seq: 10, Hash: es[9].Hash, Entry: "e010"}, at)
	if err := store.SignAuditCheckpoint(priv, &fork); err != nil {
		t.Fatal(err)
	}
	if _, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], cps[1], cps[0], fork}, "the audit channel"); b == nil || b.Seq != 10 {
		t.Errorf("a fork: %v", b)
	}
	reset := store.NextAuditCheckpoint(cps[2], store.AuditLink{Seq: 2, Hash: es[1].Hash, Entry: "e002"}, at)
	reset.Reset = true
	if err := store.SignAuditCheckpoint(priv, &reset); err != nil {
		t.Fatal(err)
	}
	after := store.NextAuditCheckpoint(reset, store.AuditLink{Seq: 5, Hash: es[4].Hash, Entry: "e005"}, at)
	if err := store.SignAuditCheckpoint(priv, &after); err != nil {
		t.Fatal(err)
	}
	if epoch, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], cps[1], cps[2], reset, after}, "the audit channel"); epoch != 3 || b != nil {
		t.Errorf("a reset: epoch %d, %v", epoch, b)
	}
	// A reset acknowledges a break published before it, not one after.
	if epoch, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], cps[1], over[0], reset, after}, "the audit channel"); epoch != 3 || b != nil {
		t.Errorf("a break, then a reset: epoch %d, %v", epoch, b)
	}
	if _, b := store.PublishedEpoch([]store.AuditCheckpoint{cps[0], reset, after, over[0]}, "the audit channel"); b == nil || b.Seq != over[0].Seq {
		t.Errorf("a reset, then a break: %v", b)
	}
}
