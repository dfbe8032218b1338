package store

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// AuditBreakKind says how the audit chain was broken.
type AuditBreakKind string

const (
	// AuditChanged: an entry no longer hashes to what the chain recorded
	// for it (its content or chain fields were edited).
	AuditChanged AuditBreakKind = "changed"
	// AuditRemoved: entries the chain or a checkpoint accounts for are
	// missing.
	AuditRemoved AuditBreakKind = "removed"
	// AuditInserted: an entry that is not part of the chain.
	AuditInserted AuditBreakKind = "inserted"
	// AuditRewritten: the chain links up, but not to the head a
	// checkpoint signed: entries before it were rewritten and their
	// hashes recomputed.
	AuditRewritten AuditBreakKind = "rewritten"
	// AuditForged: a checkpoint whose signature does not verify.
	AuditForged AuditBreakKind = "forged"
	// AuditUnlinked: a checkpoint that does not name the one before it
	// (a checkpoint between them was removed, or the checkpoints started
	// over).
	AuditUnlinked AuditBreakKind = "unlinked"
	// AuditCheckpointMissing and AuditCheckpointReplaced: a checkpoint
	// published outside the store (Published) that the store no longer
	// keeps, or keeps another in its place.
	AuditCheckpointMissing  AuditBreakKind = "checkpoint_missing"
	AuditCheckpointReplaced AuditBreakKind = "checkpoint_replaced"
)

// AuditBreak is the first place where the audit chain does not hold.
type AuditBreak struct {
	Kind AuditBreakKind
	// Seq is the first sequence number affected.
	Seq uint64
	// Entry is the entry named: the one changed or inserted; for removed
	// entries the one after the gap ("" when the gap is at the end); for
	// a rewrite the entry where the checkpoint's head should be.
	Entry string
	// After is the entry before removed ones ("" at the start).
	After string
	// Missing is how many entries were removed.
	Missing uint64
	// Checkpoint proves the break: the first checkpoint whose signature
	// verifies and that seals Seq (for a forgery, the forged one). Nil
	// when no checkpoint covers it yet: the chain alone shows it.
	Checkpoint *AuditCheckpoint
	// Reason says what was found, in a few words.
	Reason string
	// Source names where the proof is kept when it is outside the store
	// (the audit channel, -expect): set for an expectation not met.
	Source string
}

// Error says what broke where, and what proves it. Ids and reasons come
// from the log, which whoever tampered with it wrote: one that is not
// plain printable text is quoted, so it cannot rewrite a terminal's
// screen.
func (b *AuditBreak) Error() string {
	entry, after := printable(b.Entry), printable(b.After)
	var what string
	switch b.Kind {
	case AuditRemoved:
		what = fmt.Sprintf("%d entries (seq %d to %d) were removed", b.Missing, b.Seq, b.Seq+b.Missing-1)
		if b.Missing == 1 {
			what = fmt.Sprintf("1 entry (seq %d) was removed", b.Seq)
		}
		switch {
		case after != "" && entry != "":
			what += fmt.Sprintf(" between %s and %s", after, entry)
		case after != "":
			what += " after " + after
		case entry != "":
			what += " before " + entry
		}
	case AuditForged:
		return fmt.Sprintf("checkpoint at seq %d (entry %s) is forged: %s", b.Checkpoint.Seq, printable(b.Checkpoint.Entry), printable(b.Reason))
	case AuditUnlinked:
		return fmt.Sprintf("checkpoint at seq %d does not follow the one before it: %s", b.Seq, printable(b.Reason))
	case AuditCheckpointMissing:
		return fmt.Sprintf("checkpoint at seq %d is missing from the store: %s", b.Seq, printable(b.Reason))
	case AuditCheckpointReplaced:
		return fmt.Sprintf("checkpoint at seq %d was replaced in the store: %s", b.Seq, printable(b.Reason))
	case AuditRewritten:
		what = fmt.Sprintf("entries up to %s (seq %d) were rewritten", entry, b.Seq)
	default:
		what = fmt.Sprintf("entry %s (seq %d) was %s", entry, b.Seq, b.Kind)
	}
	if b.Reason != "" {
		what += ": " + printable(b.Reason)
	}
	switch {
	case b.Checkpoint == nil && b.Source != "":
		return what + "; " + b.Source + " shows it"
	case b.Checkpoint == nil:
		return what + "; no checkpoint seals it yet, the chain alone shows it"
	case b.Source != "":
		return fmt.Sprintf("%s; proven by the checkpoint at seq %d signed %s, kept by %s", what, b.Checkpoint.Seq, b.Checkpoint.At.UTC().Format(time.RFC3339), b.Source)
	}
	return fmt.Sprintf("%s; proven by the checkpoint at seq %d signed %s", what, b.Checkpoint.Seq, b.Checkpoint.At.UTC().Format(time.RFC3339))
}

// printable returns s, or s quoted when it holds anything but printable
// characters and spaces.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// AuditReport is what an AuditVerifier found.
type AuditReport struct {
	// From is the sequence number verification started after: 0 from the
	// chain's start, else the checkpoint it was anchored at.
	From uint64
	// Entries were verified in full: content, hash and link.
	Entries int
	// Omitted entries were verified by their link alone (an export
	// filtered them out and kept their digest).
	Omitted int
	// Legacy entries came before the chain began and carry no link.
	Legacy int
	// Checkpoints verified: signed by the key, and met by the chain.
	Checkpoints int
	// Head is the last entry verified.
	Head AuditLink
	// Sealed is the newest checkpoint the chain met (its Seq; 0: none).
	Sealed uint64
	// Unsealed entries come after it: they verify as a chain, but no
	// signature covers them yet. FirstUnsealed is the time of the first.
	Unsealed      int
	FirstUnsealed time.Time
	// Resets are the resets the walk met (AuditCheckpoint.Reset): breaks
	// an operator acknowledged, whatever came before them.
	Resets []AuditCheckpoint
	// Expected is how many expectations (Expect, Published) the chain met.
	Expected int
	// Break is the first break found; nil when the chain holds.
	Break *AuditBreak
}

// AuditOmitted is an entry known only by its link and digest, as a
// filtered export carries the entries it leaves out.
type AuditOmitted struct {
	ID     string `json:"id,omitempty"`
	Seq    uint64 `json:"seq"`
	Prev   string `json:"prev"`
	Hash   string `json:"hash"`
	Digest string `json:"digest"`
}

// auditLookahead is how many entries past a suspicious one a verifier
// reads before it names the break: enough to see that the chain goes on
// past an inserted run.
const auditLookahead = 16

// chainItem is one entry as the verifier sees it.
type chainItem struct {
	id     string
	seq    uint64
	prev   string
	hash   string
	at     time.Time
	full   bool // its content was hashed (not an omitted entry)
	ok     bool // its hash is the link of its seq, prev and digest
	legacy bool // it carries no link
}

// point is a place the chain reached: an accepted entry or the anchor.
type point struct {
	seq   uint64
	hash  string
	id    string
	entry bool // an entry (the anchor is not one)
}

// AuditVerifier walks an audit chain: it is given the checkpoints, then
// every entry in the order the store keeps them, and reports the first
// break (AuditReport). It starts at the chain's first entry (seq 1) or at
// the checkpoint right before the first entry it is given, so a log cut
// by retention, or read from a checkpoint on, verifies from there.
type AuditVerifier struct {
	pub     ed25519.PublicKey
	cps     []AuditCheckpoint
	bySeq   map[uint64]int
	sigOK   map[int]bool
	started bool
	last    point
	recent  []point // accepted points before last, newest last
	pending []chainItem
	met     int // the index of the last checkpoint met; -1: none yet
	expect  map[uint64]expectation
	public  []published
	rep     AuditReport
}

// expectation is the hash the entry at a seq must have, and who says so.
type expectation struct {
	hash, source string
	cp           *AuditCheckpoint // the published checkpoint it comes from
	met          bool
	// trimmable: a log trimmed past it is not a break (a checkpoint
	// published long ago, which retention may have cut).
	trimmable bool
}

// published is a checkpoint kept outside the store.
type published struct {
	cp     AuditCheckpoint
	source string
}

// NewAuditVerifier verifies with pub against checkpoints: those kept
// from where the entries given start (the store's, or an export's), in
// any order.
func NewAuditVerifier(pub ed25519.PublicKey, checkpoints []AuditCheckpoint) *AuditVerifier {
	cps := slices.Clone(checkpoints)
	slices.SortFunc(cps, func(a, b AuditCheckpoint) int { return cmpUint(a.Seq, b.Seq) })
	v := &AuditVerifier{pub: pub, cps: cps, bySeq: map[uint64]int{}, sigOK: map[int]bool{}, met: -1, expect: map[uint64]expectation{}}
	for i, cp := range cps {
		v.bySeq[cp.Seq] = i
	}
	return v
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Entry verifies the next entry; false once a break was found (the rest
// need not be given).
func (v *AuditVerifier) Entry(e AuditEntry) bool {
	it := chainItem{id: e.ID, seq: e.Seq, prev: e.Prev, hash: e.Hash, at: e.At, full: true}
	it.legacy = e.Seq == 0 && e.Prev == "" && e.Hash == ""
	if d, err := AuditDigest(e); err == nil {
		h, err := AuditLinkHash(e.Seq, e.Prev, d)
		it.ok = err == nil && h == e.Hash
	}
	return v.add(it)
}

// Omitted verifies the next entry by its link alone.
func (v *AuditVerifier) Omitted(o AuditOmitted) bool {
	it := chainItem{id: o.ID, seq: o.Seq, prev: o.Prev, hash: o.Hash}
	var d [32]byte
	if n, err := hex.Decode(d[:], []byte(o.Digest)); err == nil && n == len(d) {
		h, err := AuditLinkHash(o.Seq, o.Prev, d)
		it.ok = err == nil && h == o.Hash
	}
	return v.add(it)
}

func (v *AuditVerifier) add(it chainItem) bool {
	if v.rep.Break != nil {
		return false
	}
	if it.legacy && !v.started {
		v.rep.Legacy++
		return true
	}
	if !v.started {
		v.start(it.seq)
		if v.rep.Break != nil {
			return false
		}
	}
	switch {
	case len(v.pending) > 0:
		v.pending = append(v.pending, it)
		if len(v.pending) > auditLookahead {
			v.resolve()
		}
	case v.links(it, v.last) && v.fits(it):
		v.accept(it)
	default:
		v.pending = append(v.pending, it)
	}
	return v.rep.Break == nil
}

// start anchors the walk before the first chained entry, at seq: the
// chain's origin, or the checkpoint right before it. Without one, the
// newest checkpoint before it anchors (and the gap is a removal), or
// the origin does.
func (v *AuditVerifier) start(seq uint64) {
	v.started = true
	v.last = point{hash: AuditGenesis}
	if seq <= 1 {
		return
	}
	i, ok := v.bySeq[seq-1]
	if !ok {
		i = -1
		for j, cp := range v.cps {
			if cp.Seq < seq-1 && v.signed(j) {
				i = j
			}
		}
		if i < 0 {
			return
		}
	}
	v.anchor(i)
}

// anchor starts the walk at checkpoint i, once its signature verifies.
func (v *AuditVerifier) anchor(i int) {
	cp := v.cps[i]
	if !v.signed(i) {
		v.forged(i)
		return
	}
	v.last = point{seq: cp.Seq, hash: cp.Hash, id: cp.Entry}
	v.rep.From, v.rep.Sealed = cp.Seq, cp.Seq
	v.rep.Checkpoints++
	v.met = i
	if cp.Reset {
		v.rep.Resets = append(v.rep.Resets, cp)
	}
	v.meet(cp.Seq, cp.Hash, cp.Entry)
}

func (v *AuditVerifier) signed(i int) bool {
	ok, seen := v.sigOK[i]
	if !seen {
		ok = VerifyAuditCheckpoint(v.pub, v.cps[i]) == nil
		v.sigOK[i] = ok
	}
	return ok
}

func (v *AuditVerifier) forged(i int) {
	cp := v.cps[i]
	v.rep.Break = &AuditBreak{Kind: AuditForged, Seq: cp.Seq, Entry: cp.Entry, Checkpoint: &cp,
		Reason: "its signature does not verify under the verify key"}
}

func (v *AuditVerifier) links(it chainItem, p point) bool {
	return it.ok && it.seq == p.seq+1 && it.prev == p.hash
}

// fits reports whether it agrees with the checkpoint at its seq, if any
// (a forged checkpoint is left for accept to name).
func (v *AuditVerifier) fits(it chainItem) bool {
	i, ok := v.bySeq[it.seq]
	return !ok || !v.signed(i) || v.cps[i].Hash == it.hash
}

// accept makes it the chain's newest point and checks it against the
// checkpoint at its seq, if any.
func (v *AuditVerifier) accept(it chainItem) {
	if it.full {
		v.rep.Entries++
	} else {
		v.rep.Omitted++
	}
	v.recent = append(v.recent, v.last)
	if len(v.recent) > auditLookahead {
		v.recent = v.recent[1:]
	}
	v.last = point{seq: it.seq, hash: it.hash, id: it.id, entry: true}
	if v.meet(it.seq, it.hash, it.id); v.rep.Break != nil {
		return
	}
	i, ok := v.bySeq[it.seq]
	if !ok {
		if v.rep.Unsealed++; v.rep.Unsealed == 1 {
			v.rep.FirstUnsealed = it.at
		}
		return
	}
	if !v.signed(i) {
		v.forged(i)
		return
	}
	v.link(i)
	v.rep.Checkpoints++
	v.rep.Sealed, v.rep.Unsealed, v.rep.FirstUnsealed = it.seq, 0, time.Time{}
}

// link checks that checkpoint i, met after the one met last (none: the
// walk began at the chain's first entry), names it as the one before it;
// a reset and a version 1 checkpoint name none.
func (v *AuditVerifier) link(i int) {
	cp := v.cps[i]
	prev := v.met
	v.met = i
	switch {
	case cp.Reset:
		v.rep.Resets = append(v.rep.Resets, cp)
		return
	case cp.V < AuditCheckpointV2:
		return
	case prev < 0 && cp.PrevSeq == 0:
		return
	case prev >= 0 && cp.Follows(v.cps[prev]):
		return
	}
	b := AuditBreak{Kind: AuditUnlinked, Seq: cp.Seq, Entry: cp.Entry, Checkpoint: &cp}
	switch {
	case prev < 0:
		b.Reason = fmt.Sprintf("it names a checkpoint at seq %d before it, which is not in the log", cp.PrevSeq)
	case cp.PrevSeq > v.cps[prev].Seq:
		b.Reason = fmt.Sprintf("it names a checkpoint at seq %d before it, which is not in the log (the one before it is at seq %d)", cp.PrevSeq, v.cps[prev].Seq)
	case cp.PrevSeq == 0:
		b.Reason = fmt.Sprintf("it names no checkpoint before it, but the one at seq %d is: the checkpoints started over", v.cps[prev].Seq)
	default:
		b.Reason = fmt.Sprintf("it names a checkpoint at seq %d (digest %.12s…) before it, not the one at seq %d", cp.PrevSeq, cp.PrevDigest, v.cps[prev].Seq)
	}
	v.rep.Break = &b
}

// resolve names the break that begins at the first pending entry, using
// the entries read past it.
func (v *AuditVerifier) resolve() {
	e := v.pending[0]
	for j := 1; j < len(v.pending); j++ {
		if v.links(v.pending[j], v.last) && v.fits(v.pending[j]) {
			v.fail(AuditBreak{Kind: AuditInserted, Seq: v.last.seq + 1, Entry: e.id,
				Reason: fmt.Sprintf("the chain goes on past it from seq %d (%d entries inserted)", v.last.seq, j)})
			return
		}
	}
	if k := v.continuesFrom(e); k >= 0 {
		first := v.last
		if k+1 < len(v.recent) {
			first = v.recent[k+1]
		}
		v.fail(AuditBreak{Kind: AuditInserted, Seq: first.seq, Entry: first.id,
			Reason: fmt.Sprintf("the entry after it, %s, continues the chain from seq %d", e.id, v.recent[k].seq)})
		return
	}
	var next *chainItem
	if len(v.pending) > 1 {
		next = &v.pending[1]
	}
	switch {
	case v.links(e, v.last):
		cp := v.cps[v.bySeq[e.seq]]
		v.fail(AuditBreak{Kind: AuditRewritten, Seq: e.seq, Entry: e.id, Checkpoint: &cp,
			Reason: fmt.Sprintf("the chain reaches hash %.12s… there, the checkpoint signed %.12s… (the first rewritten entry is after seq %d)", e.hash, cp.Hash, v.rep.Sealed)})
	case e.seq == v.last.seq+1 && e.prev == v.last.hash:
		v.fail(AuditBreak{Kind: AuditChanged, Seq: e.seq, Entry: e.id, Reason: "its content or chain fields no longer hash to its recorded hash"})
	case e.ok && e.seq == v.last.seq+1 && v.last.entry && next != nil && next.ok && next.seq == e.seq+1 && next.prev == e.hash:
		v.fail(AuditBreak{Kind: AuditChanged, Seq: v.last.seq, Entry: v.last.id,
			Reason: fmt.Sprintf("its hash was recomputed: the entry after it, %s, names another", e.id)})
	case e.seq > v.last.seq+1:
		after := ""
		if v.last.entry {
			after = v.last.id
		}
		v.fail(AuditBreak{Kind: AuditRemoved, Seq: v.last.seq + 1, Missing: e.seq - v.last.seq - 1, After: after, Entry: e.id})
	case e.legacy:
		v.fail(AuditBreak{Kind: AuditInserted, Seq: v.last.seq + 1, Entry: e.id, Reason: "it carries no chain fields, after the chain began"})
	case e.seq <= v.last.seq:
		v.fail(AuditBreak{Kind: AuditInserted, Seq: v.last.seq + 1, Entry: e.id,
			Reason: fmt.Sprintf("it claims seq %d, which the chain had already reached", e.seq)})
	default:
		v.fail(AuditBreak{Kind: AuditChanged, Seq: e.seq, Entry: e.id, Reason: "it does not link to the entry before it"})
	}
}

// continuesFrom returns the index in recent of an accepted point that e
// continues the chain from, when last (and what came after that point)
// were not part of it; -1 when there is none.
func (v *AuditVerifier) continuesFrom(e chainItem) int {
	if !v.last.entry {
		return -1
	}
	for k := len(v.recent) - 1; k >= 0; k-- {
		if v.links(e, v.recent[k]) && v.fits(e) {
			return k
		}
	}
	return -1
}

// fail records b, adding the checkpoint that proves it.
func (v *AuditVerifier) fail(b AuditBreak) {
	if b.Checkpoint == nil {
		for i, cp := range v.cps {
			if cp.Seq >= b.Seq && v.signed(i) {
				b.Checkpoint = &cp
				break
			}
		}
	}
	v.rep.Break = &b
}

// Finish ends the walk: it names a break left open by the last entries,
// and entries removed from the end that a checkpoint accounts for.
func (v *AuditVerifier) Finish() AuditReport {
	if v.rep.Break == nil && len(v.pending) > 0 {
		v.resolve()
	}
	if v.rep.Break == nil && !v.started && len(v.cps) > 0 {
		// No chained entry: a log trimmed to its last checkpoint.
		v.started = true
		v.anchor(0)
	}
	if v.rep.Break == nil {
		for i, cp := range v.cps {
			if cp.Seq <= v.last.seq {
				continue
			}
			if !v.signed(i) {
				v.forged(i)
				break
			}
			after := ""
			if v.last.entry {
				after = v.last.id
			}
			v.fail(AuditBreak{Kind: AuditRemoved, Seq: v.last.seq + 1, Missing: cp.Seq - v.last.seq, After: after, Checkpoint: &cp})
			break
		}
	}
	if v.rep.Break == nil {
		v.finishOutside()
	}
	v.rep.Head = AuditLink{Seq: v.last.seq, Hash: v.last.hash, Entry: v.last.id}
	return v.rep
}

// Expect makes the entry at seq having hash (or a hash that starts with
// it: 16 hex digits or more) part of what the chain must hold: a hash the
// operator kept (source says where from). The entry is
// checked as the walk passes it; one the walk never reaches is a break,
// whether the chain ends before it or begins after it.
func (v *AuditVerifier) Expect(seq uint64, hash, source string) {
	v.expect[seq] = expectation{hash: hash, source: source}
}

// Published adds a checkpoint kept outside the store (in the audit
// channel, by a webhook's receiver, in DATA_DIR). It must verify; the
// store must keep it, as it is, unless retention cut the log past it; and
// the chain must reach its seq with its hash.
func (v *AuditVerifier) Published(cp AuditCheckpoint, source string) {
	v.public = append(v.public, published{cp: cp, source: source})
	if e, ok := v.expect[cp.Seq]; !ok || e.trimmable {
		v.expect[cp.Seq] = expectation{hash: cp.Hash, source: source, cp: &cp, trimmable: true}
	}
}

// Seen makes an entry a source outside the store showed (its seq and the
// start of its hash, as an audit channel's line does) part of what the
// chain must hold, unless retention cut the log past it.
func (v *AuditVerifier) Seen(seq uint64, hashPrefix, source string) {
	if _, ok := v.expect[seq]; !ok {
		v.expect[seq] = expectation{hash: hashPrefix, source: source, trimmable: true}
	}
}

// superseded reports whether cp was signed before a reset the walk met:
// the reset acknowledged whatever became of it.
func (v *AuditVerifier) superseded(cp *AuditCheckpoint) bool {
	for _, r := range v.rep.Resets {
		if cp != nil && r.At.After(cp.At) && !r.Same(*cp) {
			return true
		}
	}
	return false
}

// meet checks the point the walk reached against its expectation.
func (v *AuditVerifier) meet(seq uint64, hash, id string) {
	e, ok := v.expect[seq]
	if !ok || e.met || v.superseded(e.cp) {
		return
	}
	e.met = true
	v.expect[seq] = e
	if len(e.hash) < 16 || !strings.HasPrefix(hash, e.hash) {
		v.rep.Break = &AuditBreak{Kind: AuditRewritten, Seq: seq, Entry: id, Checkpoint: e.cp, Source: e.source,
			Reason: fmt.Sprintf("the chain reaches hash %.12s… there, where %s has %.12s…", hash, e.source, e.hash)}
		return
	}
	v.rep.Expected++
}

// finishOutside checks what is kept outside the store against the walk:
// published checkpoints kept as they are, and every expectation met.
func (v *AuditVerifier) finishOutside() {
	for _, p := range v.public {
		cp := p.cp
		if VerifyAuditCheckpoint(v.pub, cp) != nil {
			v.rep.Break = &AuditBreak{Kind: AuditForged, Seq: cp.Seq, Checkpoint: &cp, Source: p.source,
				Reason: "its signature, as " + p.source + " holds it, does not verify under the verify key"}
			return
		}
		if cp.Seq < v.rep.From || v.superseded(&cp) {
			continue // retention cut the log past it, or a reset acknowledged its loss
		}
		i, kept := v.bySeq[cp.Seq]
		switch {
		case !kept:
			v.rep.Break = &AuditBreak{Kind: AuditCheckpointMissing, Seq: cp.Seq, Checkpoint: &cp, Source: p.source,
				Reason: fmt.Sprintf("%s holds it, the store does not", p.source)}
			return
		case !v.cps[i].Same(cp):
			kept := v.cps[i]
			v.rep.Break = &AuditBreak{Kind: AuditCheckpointReplaced, Seq: cp.Seq, Checkpoint: &cp, Source: p.source,
				Reason: fmt.Sprintf("%s holds the one signed %s, the store one signed %s", p.source,
					cp.At.UTC().Format(time.RFC3339Nano), kept.At.UTC().Format(time.RFC3339Nano))}
			return
		}
	}
	for _, seq := range slices.Sorted(maps.Keys(v.expect)) {
		e := v.expect[seq]
		switch {
		case e.met || v.superseded(e.cp):
		case seq > v.last.seq:
			after := ""
			if v.last.entry {
				after = v.last.id
			}
			v.rep.Break = &AuditBreak{Kind: AuditRemoved, Seq: v.last.seq + 1, Missing: seq - v.last.seq, After: after,
				Checkpoint: e.cp, Source: e.source, Reason: fmt.Sprintf("the chain ends at seq %d; %s reaches seq %d", v.last.seq, e.source, seq)}
			return
		case !e.trimmable:
			v.rep.Break = &AuditBreak{Kind: AuditRemoved, Seq: seq, Source: e.source,
				Reason: fmt.Sprintf("the log begins after seq %d, which %s names: it cannot be checked", seq, e.source)}
			return
		}
	}
}

// PublishedEpoch checks checkpoints in the order they were published (an
// audit channel's, a webhook receiver's): each must follow the one
// published before it, but a reset, which may supersede any, and a
// version 1 checkpoint, which names none. A checkpoint published twice (a
// redelivery) counts once. It returns the index of the newest reset (0
// when there is none): the checkpoints from it on are the ones the store
// must still keep; and the first break after it, which shows the
// checkpoints were started over or one was superseded without a reset (a
// break before a reset is what the reset acknowledged).
func PublishedEpoch(cps []AuditCheckpoint, source string) (int, *AuditBreak) {
	epoch, last := 0, -1
	var brk *AuditBreak
	seen := map[string]bool{}
	for i, cp := range cps {
		d := AuditCheckpointDigest(cp)
		if seen[d] {
			continue
		}
		seen[d] = true
		switch {
		case cp.Reset:
			epoch, brk = i, nil
		case last < 0 || cp.V < AuditCheckpointV2 || cp.Follows(cps[last]) || brk != nil:
		default:
			prev := cps[last]
			brk = &AuditBreak{Kind: AuditUnlinked, Seq: cp.Seq, Checkpoint: &cp, Source: source,
				Reason: fmt.Sprintf("%s holds it after the one at seq %d, which it does not name", source, prev.Seq)}
			if cp.PrevSeq == 0 {
				brk.Reason = fmt.Sprintf("it names no checkpoint before it, but %s holds the one at seq %d before it: the checkpoints started over", source, prev.Seq)
			}
		}
		last = i
	}
	return epoch, brk
}
