package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap them with context; callers test with errors.Is.
var (
	// ErrNotFound: no request, session or input with that id.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyDecided: the request was settled before (by a person, a
	// deadline, a cancellation or the end of its process). The Request
	// returned alongside carries the first, winning Decision.
	ErrAlreadyDecided = errors.New("already decided")
	// ErrExists: Create was called with an id that is already taken.
	ErrExists = errors.New("already exists")
	// ErrNotOwner: the worker does not own the session it tried to act on.
	ErrNotOwner = errors.New("session not owned by this worker")
	// ErrInvalid: the argument breaks the vocabulary's rules (empty id,
	// unknown outcome, a decision without a time).
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed: the store was closed; blocked calls return it too.
	ErrClosed = errors.New("store closed")
)

// invalid returns an error wrapping ErrInvalid that says what is wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// MessageRef points at one Slack message.
type MessageRef struct {
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
}

// IsZero reports whether the reference points nowhere.
func (m MessageRef) IsZero() bool { return m.Channel == "" && m.TS == "" }

// Store is the durable record and the bus. Every method is safe for
// concurrent use, by several goroutines and, for networked backends, by
// several processes.
//
// Every method that stores a value checks it with its Validate first and
// returns the error, which wraps ErrInvalid, before touching anything. A
// zero creation time (Request.CreatedAt, Session.CreatedAt, Input.At,
// Event.At) is not an error: the store sets it to the time of the call, so
// a caller without a clock of its own still gets an ordered record.
//
// # Retention
//
// What the store records expires, so a store that runs for years stays the
// size of what is live. Backends take a retention (RETENTION,
// DefaultRetention) and an audit retention (AUDIT_RETENTION,
// DefaultAuditRetention); 0 keeps records forever.
//
//   - A settled request expires the retention after it was settled (by the
//     store's clock at Decide, not Decision.At). A pending request never
//     expires.
//   - A session expires, with its thread index entry and its empty inbox,
//     the retention after the last write that left it at rest: its state
//     idle or failed (SessionState.AtRest), no worker owning it, no input
//     queued and no request pending. Any write that changes one of those
//     (UpdateSession to queued or running, Enqueue, a new pending request)
//     holds it again, and the next write that leaves it at rest starts the
//     retention over. A session created at rest counts from its creation.
//     Its transcript (see Transcripts) goes with it.
//   - A dedup key expires at its ttl.
//   - The event log is capped by count (100,000 events by default, trimmed
//     as events are appended), not by time.
//   - An audit entry expires no sooner than the audit retention after it
//     was appended. The audit trail is trimmed by time only, never by
//     count, so a burst of requests cannot push out recent history, and
//     only up to a checkpoint, which stays (the package doc's "Audit
//     chain").
//
// Expiry is lazy: a record is gone some time after it is due (at once on
// Redis, at the next sweep of the embedded store), never before.
type Store interface {
	Requests
	Approvals
	Sessions
	Queue
	Bus
	Dedup
	Counts
	Workers
	Transcripts
	Standings
	Tombstones
	AuditChain
	AuditSinks
	Reaches
	Cards
	Audit
	// Close releases the backend's resources; blocked calls return an error
	// wrapping ErrClosed (Consume returns it too). Closing twice is harmless.
	Close() error
}
