package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"
)

// Forgetting a grant or a remembered answer removes its record, but a copy
// of a signed record verifies wherever it is written back. So the bot that
// forgets one first buries it: a tombstone it signs, kept in the store
// apart from the record, which outlives the record and any copy of it. A
// record with a tombstone that verifies decides nothing. Someone who can
// write the store can delete a tombstone too; the bot then still remembers
// the ones it has seen, and the audit log keeps the forgetting.

// Tombstone says who forgot a grant or remembered answer, and when.
type Tombstone struct {
	Kind   StandingKind `json:"kind"`
	ID     string       `json:"id"` // the grant's or answer's id
	By     string       `json:"by"` // a Slack user id, or cli:<OS user>
	ByName string       `json:"by_name,omitempty"`
	At     time.Time    `json:"at"`
	// Signature is the bot's (SignTombstone); one that does not verify
	// buries nothing.
	Signature []byte `json:"signature,omitempty"`
}

// Validate checks t as Bury takes it.
func (t Tombstone) Validate() error {
	switch {
	case t.Kind != StandingGrant && t.Kind != StandingAnswer:
		return invalid("tombstone of unknown kind %q", t.Kind)
	case t.ID == "":
		return invalid("%s tombstone without an id", t.Kind)
	case t.By == "" || t.At.IsZero():
		return invalid("%s tombstone of %s without who or when", t.Kind, t.ID)
	}
	return nil
}

// Tombstones keeps tombstones. They are never removed: each is a few
// dozen bytes, one per forgetting.
type Tombstones interface {
	// Bury keeps t. A second tombstone of the same kind and id changes
	// nothing: the first stands. ErrInvalid when t fails Validate.
	Bury(ctx context.Context, t Tombstone) error
	// Tombstones returns every tombstone of kind, in no order.
	Tombstones(ctx context.Context, kind StandingKind) ([]Tombstone, error)
}

// tombstoneDomain starts a tombstone's signed payload (see sign.go).
const tombstoneDomain = "slackgate tombstone v1\n"

type tombstonePayload struct {
	Kind   StandingKind `json:"kind"`
	ID     string       `json:"id"`
	By     string       `json:"by"`
	ByName string       `json:"by_name"`
	At     string       `json:"at"`
}

func tombstonePayloadOf(t Tombstone) ([]byte, error) {
	return payloadOf(tombstoneDomain, tombstonePayload{Kind: t.Kind, ID: t.ID, By: t.By, ByName: t.ByName, At: stamp(t.At)})
}

// SignTombstone signs all of t with key and stores the signature in
// t.Signature.
func SignTombstone(key ed25519.PrivateKey, t *Tombstone) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("store: sign tombstone: %w", err)
	}
	sig, err := signPayload(key, string(t.Kind)+" tombstone "+t.ID, func() ([]byte, error) { return tombstonePayloadOf(*t) })
	if err != nil {
		return err
	}
	t.Signature = sig
	return nil
}

// VerifyTombstone checks that t carries a signature by pub's private key
// over all of it. It returns an error wrapping ErrUnsigned or
// ErrBadSignature when t must not bury anything.
func VerifyTombstone(pub ed25519.PublicKey, t Tombstone) error {
	return verifyPayload(pub, string(t.Kind)+" tombstone "+t.ID, t.Signature, func() ([]byte, error) { return tombstonePayloadOf(t) })
}
