package store

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The byte strings that separate what the chain hashes and what a
// checkpoint signs from anything else (see the package doc's "Audit
// chain"). auditLinkDomain is exactly one half of a SHA-256 block, so the
// first block of a link is the domain and the entry's digest.
const (
	auditEntryDomain        = "slackgate audit entry v1\n"
	auditLinkDomain         = "slackgate audit chain link v1.0\n"
	auditCheckpointDomain   = "slackgate audit checkpoint v1\n"
	auditCheckpointDomainV2 = "slackgate audit checkpoint v2\n"
)

// AuditGenesis is the Prev of the chain's first entry: 64 zeros.
const AuditGenesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Sealing policy: a bot signs a checkpoint once this many entries, or
// this much time, have gone unsealed (see AuditCheckpoint).
const (
	AuditSealEntries = 100
	AuditSealAfter   = time.Hour
)

// ErrAuditCheckpoint: a checkpoint's signature does not verify under the
// key (forged, altered, or signed with another key).
var ErrAuditCheckpoint = errors.New("audit checkpoint signature does not verify")

// AuditLink is one point of the audit chain: an entry's sequence number,
// its hash, and its id in the store that holds it.
type AuditLink struct {
	Seq   uint64 `json:"seq"`
	Hash  string `json:"hash"`
	Entry string `json:"entry,omitempty"`
}

// AuditCheckpoint is a bot's signed statement that the audit chain held
// Seq entries whose newest had Hash, at At. Signed with the decision
// signing key (SignAuditCheckpoint), it seals every entry up to Seq: an
// entry changed, removed or inserted since no longer leads to Hash.
//
// A checkpoint of version 2 also names the checkpoint before it (PrevSeq
// and PrevDigest, AuditCheckpointDigest), so checkpoints form a chain of
// their own: one removed or replaced shows in the next. A reset (Reset)
// is an operator's acknowledgment of a break (`slackgate audit reset`):
// it names the last checkpoint the operator trusts, which the chain it
// seals need not reach.
type AuditCheckpoint struct {
	Seq  uint64    `json:"seq"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	// Entry is the store's id of the entry at Seq, where a reader resumes
	// the log (not signed: it is where the entry is, not what it says).
	Entry     string `json:"entry"`
	Signature []byte `json:"signature"`
	// V is the signed format: 2, or 0 for version 1 (no PrevSeq,
	// PrevDigest or Reset).
	V          int    `json:"v,omitempty"`
	PrevSeq    uint64 `json:"prev_seq,omitempty"`
	PrevDigest string `json:"prev_digest,omitempty"`
	Reset      bool   `json:"reset,omitempty"`
	// Unlinked marks a reset signed over a chain that did not hold from
	// its start: what came before it is checked from the reset on only.
	// A reset without it vouches that the chain up to it linked.
	Unlinked bool `json:"unlinked,omitempty"`
}

// AuditCheckpointV2 is the version a bot signs now.
const AuditCheckpointV2 = 2

// Validate checks cp as PutAuditCheckpoint takes it: a sequence number, a
// hash, a time, the entry's id, a signature of the right size, and, for
// version 2, a checkpoint before it that is older unless cp is a reset.
func (cp AuditCheckpoint) Validate() error {
	if err := cp.validateSigned(); err != nil {
		return err
	}
	if cp.Entry == "" {
		return invalid("audit checkpoint at %d without its entry's id", cp.Seq)
	}
	return nil
}

// validateSigned checks what a checkpoint's signature covers, and the
// signature's size.
func (cp AuditCheckpoint) validateSigned() error {
	switch {
	case cp.Seq == 0:
		return invalid("audit checkpoint without a sequence number")
	case !isHash(cp.Hash):
		return invalid("audit checkpoint at %d with hash %q; want 64 lowercase hex digits", cp.Seq, cp.Hash)
	case cp.At.IsZero():
		return invalid("audit checkpoint at %d without a time", cp.Seq)
	case len(cp.Signature) != ed25519.SignatureSize:
		return invalid("audit checkpoint at %d with a signature of %d bytes", cp.Seq, len(cp.Signature))
	case cp.V != 0 && cp.V != AuditCheckpointV2:
		return invalid("audit checkpoint at %d of version %d; want 2 (or none, for version 1)", cp.Seq, cp.V)
	case cp.V == 0 && (cp.PrevSeq != 0 || cp.PrevDigest != "" || cp.Reset):
		return invalid("version 1 audit checkpoint at %d naming a checkpoint before it", cp.Seq)
	case cp.Unlinked && !cp.Reset:
		return invalid("audit checkpoint at %d marked unlinked; only a reset can be", cp.Seq)
	case (cp.PrevSeq == 0) != (cp.PrevDigest == ""):
		return invalid("audit checkpoint at %d names the one before it by seq %d and digest %q; want both or neither", cp.Seq, cp.PrevSeq, cp.PrevDigest)
	case cp.PrevDigest != "" && !isHash(cp.PrevDigest):
		return invalid("audit checkpoint at %d with previous digest %q; want 64 lowercase hex digits", cp.Seq, cp.PrevDigest)
	case !cp.Reset && cp.PrevSeq >= cp.Seq:
		return invalid("audit checkpoint at %d after one at %d", cp.Seq, cp.PrevSeq)
	}
	return nil
}

// NextAuditCheckpoint is the checkpoint (version 2, unsigned) that seals
// the chain up to head at at, after prev (zero: the first).
func NextAuditCheckpoint(prev AuditCheckpoint, head AuditLink, at time.Time) AuditCheckpoint {
	cp := AuditCheckpoint{Seq: head.Seq, Hash: head.Hash, At: at, Entry: head.Entry, V: AuditCheckpointV2}
	if prev.Seq > 0 {
		cp.PrevSeq, cp.PrevDigest = prev.Seq, AuditCheckpointDigest(prev)
	}
	return cp
}

// Follows reports whether cp names prev as the checkpoint before it.
func (cp AuditCheckpoint) Follows(prev AuditCheckpoint) bool {
	return cp.V >= AuditCheckpointV2 && cp.PrevSeq == prev.Seq && prev.Seq > 0 && cp.PrevDigest == AuditCheckpointDigest(prev)
}

// Same reports whether cp and o are one checkpoint: the same signed
// statement (where each is kept aside).
func (cp AuditCheckpoint) Same(o AuditCheckpoint) bool {
	return AuditCheckpointDigest(cp) == AuditCheckpointDigest(o) && string(cp.Signature) == string(o.Signature)
}

// AuditChain is the audit log's chain and its checkpoints (the package
// doc's "Audit chain"). AuditLog returns every entry with its Seq, Prev
// and Hash; a consumer resumes from an entry's id.
type AuditChain interface {
	// AuditHead returns the newest entry's link; a zero Seq when no entry
	// was chained yet.
	AuditHead(ctx context.Context) (AuditLink, error)
	// LastAuditCheckpoint returns the newest checkpoint. ErrNotFound when
	// there is none.
	LastAuditCheckpoint(ctx context.Context) (AuditCheckpoint, error)
	// AuditCheckpoints returns the kept checkpoints whose Seq is from or
	// more, oldest first.
	AuditCheckpoints(ctx context.Context, from uint64) ([]AuditCheckpoint, error)
	// PutAuditCheckpoint stores cp if the newest checkpoint is still the
	// one at prev (0: none), so of several bots sealing at once one does.
	// A reset (cp.Reset) replaces every kept checkpoint: they are dropped
	// and cp is kept alone, its Seq past prev or not. ErrExists when
	// another checkpoint came first; ErrInvalid when cp fails Validate,
	// its Seq is not past prev (but for a reset), or the store's entry
	// cp.Entry is not the one at cp.Seq with cp.Hash. The signature is the
	// caller's to make; the store cannot check it (it has no key).
	PutAuditCheckpoint(ctx context.Context, cp AuditCheckpoint, prev uint64) error
}

// auditUnhashed are the fields the chain covers otherwise: the store's id
// is where the entry is kept (the sequence number orders it), and the
// chain fields are the link itself.
var auditUnhashed = map[string]bool{"id": true, "seq": true, "prev": true, "hash": true}

// auditField is one field of AuditEntry the canonical encoding covers.
type auditField struct {
	name  string
	index int
}

// auditFields are AuditEntry's hashed fields, sorted by JSON name.
var auditFields = func() []auditField {
	t := reflect.TypeFor[AuditEntry]()
	var fs []auditField
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || auditUnhashed[name] {
			continue
		}
		fs = append(fs, auditField{name: name, index: i})
	}
	slices.SortFunc(fs, func(a, b auditField) int { return strings.Compare(a.name, b.name) })
	return fs
}()

var timeType = reflect.TypeFor[time.Time]()

// AuditCanonical is the byte string an entry's digest covers (see the
// package doc): its fields but id, seq, prev and hash, empty ones left
// out, sorted by JSON name, each "name=len:value\n".
func AuditCanonical(a AuditEntry) ([]byte, error) {
	v := reflect.ValueOf(a)
	out := []byte(auditEntryDomain)
	for _, f := range auditFields {
		fv := v.Field(f.index)
		var val string
		switch {
		case fv.Type() == timeType:
			if t := fv.Interface().(time.Time); !t.IsZero() {
				val = t.UTC().Format(time.RFC3339Nano)
			}
		case fv.Kind() == reflect.String:
			val = fv.String()
		case fv.Kind() == reflect.Bool:
			if fv.Bool() {
				val = "true"
			}
		case fv.CanInt():
			if fv.Int() != 0 {
				val = strconv.FormatInt(fv.Int(), 10)
			}
		case fv.CanUint():
			if fv.Uint() != 0 {
				val = strconv.FormatUint(fv.Uint(), 10)
			}
		default:
			return nil, fmt.Errorf("store: audit entry field %s of kind %s has no canonical form", f.name, fv.Kind())
		}
		if val == "" {
			continue
		}
		out = append(out, f.name...)
		out = append(out, '=')
		out = strconv.AppendInt(out, int64(len(val)), 10)
		out = append(out, ':')
		out = append(out, val...)
		out = append(out, '\n')
	}
	return out, nil
}

// AuditDigest is SHA-256 of a's canonical encoding, what the link of its
// chain entry covers of its content.
func AuditDigest(a AuditEntry) ([32]byte, error) {
	c, err := AuditCanonical(a)
	if err != nil {
		return [32]byte{}, err
	}
	return sha256.Sum256(c), nil
}

// AuditBody is what a backend stores of a (its JSON, chain fields and id
// cleared) and the digest its link covers. The digest is taken from the
// JSON read back, so whatever the encoding changed (invalid UTF-8
// replaced, a time's zone) is what the chain covers and what a reader
// recomputes.
func AuditBody(a AuditEntry) (body []byte, digest [32]byte, err error) {
	a.ID, a.Seq, a.Prev, a.Hash = "", 0, "", ""
	body, err = json.Marshal(a)
	if err != nil {
		return nil, digest, fmt.Errorf("store: audit entry: %w", err)
	}
	var back AuditEntry
	if err := json.Unmarshal(body, &back); err != nil {
		return nil, digest, fmt.Errorf("store: audit entry: %w", err)
	}
	digest, err = AuditDigest(back)
	return body, digest, err
}

// AuditLinkHash is the hash of the chain entry at seq with content digest
// digest whose predecessor's hash is prev (hex; AuditGenesis for the
// first): SHA-256(link domain ‖ digest ‖ seq as 8 bytes big-endian ‖
// prev), in hex.
func AuditLinkHash(seq uint64, prev string, digest [32]byte) (string, error) {
	p, err := decodeHash(prev)
	if err != nil {
		return "", err
	}
	msg := make([]byte, 0, 104)
	msg = append(msg, auditLinkDomain...)
	msg = append(msg, digest[:]...)
	msg = binary.BigEndian.AppendUint64(msg, seq)
	msg = append(msg, p[:]...)
	sum := sha256.Sum256(msg)
	return hex.EncodeToString(sum[:]), nil
}

// AuditLinkMidstate is SHA-256's state after the first block of a link
// over digest (the link domain and the digest), as eight big-endian words
// in hex. A backend that assigns seq and prev where Go does not run (a
// Redis script) finishes the hash from it with one compression.
func AuditLinkMidstate(digest [32]byte) (string, error) {
	h := sha256.New()
	h.Write([]byte(auditLinkDomain))
	h.Write(digest[:])
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	// The marshalled state is a 4-byte magic, then the eight words.
	if err != nil || len(state) < 36 {
		return "", fmt.Errorf("store: audit link midstate: %d bytes, %w", len(state), err)
	}
	return hex.EncodeToString(state[4:36]), nil
}

func decodeHash(h string) ([32]byte, error) {
	var out [32]byte
	if !isHash(h) {
		return out, invalid("audit hash %q: want 64 lowercase hex digits", h)
	}
	_, _ = hex.Decode(out[:], []byte(h))
	return out, nil
}

func isHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := range len(h) {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// AuditCheckpointPayload is the byte string a checkpoint's signature
// covers: the checkpoint domain of its version, then the sequence number
// in decimal, the hash and the time (RFC 3339 with nanoseconds, UTC); for
// version 2 also the previous checkpoint's seq in decimal and digest (64
// zeros for none), and its kind; each ending in "\n".
func AuditCheckpointPayload(cp AuditCheckpoint) []byte {
	at := cp.At.UTC().Format(time.RFC3339Nano)
	if cp.V == 0 {
		return fmt.Appendf([]byte(auditCheckpointDomain), "%d\n%s\n%s\n", cp.Seq, cp.Hash, at)
	}
	prev := cmp.Or(cp.PrevDigest, AuditGenesis)
	return fmt.Appendf([]byte(auditCheckpointDomainV2), "%d\n%s\n%s\n%d\n%s\n%s\n", cp.Seq, cp.Hash, at, cp.PrevSeq, prev, cp.kind())
}

// kind is a version 2 checkpoint's kind: "seal", "reset", or
// "reset-unlinked" (Unlinked).
func (cp AuditCheckpoint) kind() string {
	switch {
	case cp.Unlinked:
		return "reset-unlinked"
	case cp.Reset:
		return "reset"
	}
	return "seal"
}

// AuditCheckpointDigest is SHA-256 of cp's payload in hex: what the
// checkpoint after it names it by.
func AuditCheckpointDigest(cp AuditCheckpoint) string {
	sum := sha256.Sum256(AuditCheckpointPayload(cp))
	return hex.EncodeToString(sum[:])
}

// SignAuditCheckpoint signs cp with key (a bot's decision signing key)
// and stores the signature in cp.Signature.
func SignAuditCheckpoint(key ed25519.PrivateKey, cp *AuditCheckpoint) error {
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("store: sign audit checkpoint at %d: %w", cp.Seq, invalid("signing key of %d bytes", len(key)))
	}
	cp.Signature = ed25519.Sign(key, AuditCheckpointPayload(*cp))
	return nil
}

// VerifyAuditCheckpoint checks that cp carries a signature by pub's
// private key; an error wrapping ErrAuditCheckpoint when it does not.
func VerifyAuditCheckpoint(pub ed25519.PublicKey, cp AuditCheckpoint) error {
	if cp.validateSigned() != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, AuditCheckpointPayload(cp), cp.Signature) {
		return fmt.Errorf("store: audit checkpoint at %d: %w", cp.Seq, ErrAuditCheckpoint)
	}
	return nil
}

// AuditCheckpointText is a checkpoint as one line of text, for places
// outside the store that keep it (the audit channel, an operator's
// notes): "cp1 SEQ HASH AT SIG" for version 1, and
// "cp2 SEQ HASH AT PREVSEQ PREVDIGEST KIND SIG" for version 2, the
// time as the payload has it, "-" for no previous digest, the signature
// in standard base64. ParseAuditCheckpointText reads it back.
func AuditCheckpointText(cp AuditCheckpoint) string {
	at, sig := cp.At.UTC().Format(time.RFC3339Nano), base64.StdEncoding.EncodeToString(cp.Signature)
	if cp.V == 0 {
		return fmt.Sprintf("cp1 %d %s %s %s", cp.Seq, cp.Hash, at, sig)
	}
	return fmt.Sprintf("cp2 %d %s %s %d %s %s %s", cp.Seq, cp.Hash, at, cp.PrevSeq, cmp.Or(cp.PrevDigest, "-"), cp.kind(), sig)
}

// ParseAuditCheckpointText reads AuditCheckpointText's form; ErrInvalid
// when s is not one. Its Entry is empty: the text names no place.
func ParseAuditCheckpointText(s string) (AuditCheckpoint, error) {
	var cp AuditCheckpoint
	f := strings.Fields(s)
	bad := func(why string) (AuditCheckpoint, error) {
		return AuditCheckpoint{}, invalid("audit checkpoint text %.40q: %s", s, why)
	}
	switch {
	case len(f) == 5 && f[0] == "cp1":
	case len(f) == 8 && f[0] == "cp2":
		cp.V = AuditCheckpointV2
	default:
		return bad("want cp1 with 4 fields or cp2 with 7")
	}
	var err error
	if cp.Seq, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return bad("seq")
	}
	cp.Hash = f[2]
	if cp.At, err = time.Parse(time.RFC3339Nano, f[3]); err != nil {
		return bad("time")
	}
	if cp.V == AuditCheckpointV2 {
		if cp.PrevSeq, err = strconv.ParseUint(f[4], 10, 64); err != nil {
			return bad("previous seq")
		}
		if f[5] != "-" {
			cp.PrevDigest = f[5]
		}
		switch f[6] {
		case "reset-unlinked":
			cp.Reset, cp.Unlinked = true, true
		case "reset":
			cp.Reset = true
		case "seal":
		default:
			return bad("want seal, reset or reset-unlinked")
		}
	}
	if cp.Signature, err = base64.StdEncoding.DecodeString(f[len(f)-1]); err != nil {
		return bad("signature")
	}
	if err := cp.validateSigned(); err != nil {
		return AuditCheckpoint{}, err
	}
	// The text must be the one this checkpoint writes: one statement,
	// one spelling.
	if AuditCheckpointText(cp) != strings.Join(f, " ") {
		return bad("not in its canonical form")
	}
	return cp, nil
}
