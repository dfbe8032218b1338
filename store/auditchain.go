package store

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding"
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
	auditEntryDomain      = "slackgate audit entry v1\n"
	auditLinkDomain       = "slackgate audit chain link v1.0\n"
	auditCheckpointDomain = "slackgate audit checkpoint v1\n"
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
type AuditCheckpoint struct {
	Seq  uint64    `json:"seq"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
	// Entry is the store's id of the entry at Seq, where a reader resumes
	// the log (not signed: it is where the entry is, not what it says).
	Entry     string `json:"entry"`
	Signature []byte `json:"signature"`
}

// Validate checks cp as PutAuditCheckpoint takes it: a sequence number, a
// hash, a time, the entry's id and a signature of the right size.
func (cp AuditCheckpoint) Validate() error {
	switch {
	case cp.Seq == 0:
		return invalid("audit checkpoint without a sequence number")
	case !isHash(cp.Hash):
		return invalid("audit checkpoint at %d with hash %q; want 64 lowercase hex digits", cp.Seq, cp.Hash)
	case cp.At.IsZero():
		return invalid("audit checkpoint at %d without a time", cp.Seq)
	case cp.Entry == "":
		return invalid("audit checkpoint at %d without its entry's id", cp.Seq)
	case len(cp.Signature) != ed25519.SignatureSize:
		return invalid("audit checkpoint at %d with a signature of %d bytes", cp.Seq, len(cp.Signature))
	}
	return nil
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
	// ErrExists when another checkpoint came first; ErrInvalid when cp
	// fails Validate, its Seq is not past prev, or the store's entry
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
// covers: the checkpoint domain, then the sequence number in decimal, the
// hash and the time (RFC 3339 with nanoseconds, UTC), each ending in "\n".
func AuditCheckpointPayload(cp AuditCheckpoint) []byte {
	return fmt.Appendf([]byte(auditCheckpointDomain), "%d\n%s\n%s\n", cp.Seq, cp.Hash, cp.At.UTC().Format(time.RFC3339Nano))
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
	if len(pub) != ed25519.PublicKeySize || !ed25519.Verify(pub, AuditCheckpointPayload(cp), cp.Signature) {
		return fmt.Errorf("store: audit checkpoint at %d: %w", cp.Seq, ErrAuditCheckpoint)
	}
	return nil
}
