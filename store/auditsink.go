package store

import (
	"context"
	"time"
)

// An audit sink is somewhere the audit log is delivered to beyond the
// store (a Slack channel, a webhook), by one replica at a time, in order,
// resuming where the last delivery stopped. The store keeps, per sink, a
// claim (who delivers now, until when by the store's clock) and a cursor
// (how far delivery got). A holder renews its claim by claiming again
// before it lapses; a cursor is written only by the claim's holder, so a
// replica that lost its claim while it was cut off cannot move it.
// Delivery is at least once: a holder that dies after its sink accepted an
// entry but before its cursor moved leaves that entry to be delivered
// again by the next holder.

// AuditCursor is how far a sink has delivered the audit log.
type AuditCursor struct {
	// Entry is the store's id of the last entry delivered ("": none, the
	// sink reads the log from its oldest entry on); Seq is its sequence
	// number in the chain (0 for an entry from before the chain).
	Entry string `json:"entry,omitempty"`
	Seq   uint64 `json:"seq,omitempty"`
	// At is when the holder stored the cursor, by its clock: the time of
	// the sink's last delivery.
	At time.Time `json:"at,omitzero"`
	// Note is the sink's own (the audit channel keeps the ts of its last
	// message there), at most MaxAuditCursorNote bytes.
	Note string `json:"note,omitempty"`
	// Sealed is the seq of the last checkpoint delivered (0: none).
	Sealed uint64 `json:"sealed,omitempty"`
}

// MaxAuditCursorNote bounds AuditCursor.Note.
const MaxAuditCursorNote = 256

// AuditSink is a sink's record in the store.
type AuditSink struct {
	// Holder is whose claim is live ("": nobody's).
	Holder string
	// Cursor is where delivery stands; Started is false until a holder
	// first stored one.
	Cursor  AuditCursor
	Started bool
}

// AuditSinks keeps each audit sink's claim and cursor.
type AuditSinks interface {
	// ClaimAuditSink makes holder the sink's holder for the next ttl, by
	// the store's clock, unless another holder's claim is live, and
	// returns the sink's record either way: holder holds the claim when
	// the record's Holder is holder. Claiming again renews the claim.
	// Of concurrent claimants of a free sink, across processes too,
	// exactly one becomes its holder. ErrInvalid for a sink name that is
	// not ValidAuditSinkName, an empty holder or a ttl <= 0.
	ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (AuditSink, error)
	// AdvanceAuditSink stores cur as the sink's cursor if holder's claim
	// is live; ErrNotOwner, and nothing stored, otherwise. ErrInvalid as
	// ClaimAuditSink's, and for a Note over MaxAuditCursorNote bytes.
	AdvanceAuditSink(ctx context.Context, sink, holder string, cur AuditCursor) error
	// ReleaseAuditSink ends holder's claim, so another replica may claim
	// the sink at once; it does nothing when holder does not hold it.
	ReleaseAuditSink(ctx context.Context, sink, holder string) error
}

// ValidAuditSinkName reports whether name may name a sink: 1 to 64
// lowercase ASCII letters, digits and dashes.
func ValidAuditSinkName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// ValidateAuditSinkClaim checks the arguments of ClaimAuditSink (ttl > 0),
// AdvanceAuditSink and ReleaseAuditSink (ttl is not theirs: pass 1).
func ValidateAuditSinkClaim(sink, holder string, ttl time.Duration) error {
	switch {
	case !ValidAuditSinkName(sink):
		return invalid("audit sink name %q: want 1 to 64 lowercase letters, digits and dashes", sink)
	case holder == "":
		return invalid("audit sink %s claimed by nobody", sink)
	case ttl <= 0:
		return invalid("audit sink %s claimed for %v", sink, ttl)
	}
	return nil
}

// Validate checks cur as AdvanceAuditSink takes it.
func (cur AuditCursor) Validate() error {
	if len(cur.Note) > MaxAuditCursorNote {
		return invalid("audit cursor note of %d bytes (at most %d)", len(cur.Note), MaxAuditCursorNote)
	}
	return nil
}

// The records of the audit log beyond the store, one JSON object each: a
// line of `slackgate audit export`'s jsonl, and the body of a webhook
// delivery. "record" says which; the rest are the fields of what it
// carries. A file of them is what `slackgate audit verify -file` checks.
const (
	AuditRecordEntry      = "entry"
	AuditRecordOmitted    = "omitted"
	AuditRecordCheckpoint = "checkpoint"
)

// AuditEntryRecord is an entry as a record ("entry").
type AuditEntryRecord struct {
	Record string `json:"record"`
	AuditEntry
}

// AuditOmittedRecord is an entry known by its link alone ("omitted").
type AuditOmittedRecord struct {
	Record string `json:"record"`
	AuditOmitted
}

// AuditCheckpointRecord is a checkpoint as a record ("checkpoint").
type AuditCheckpointRecord struct {
	Record string `json:"record"`
	AuditCheckpoint
}
