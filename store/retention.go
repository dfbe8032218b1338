package store

import "time"

// Defaults of the retention model (see Store).
const (
	// DefaultRetention is how long a settled request, and a session at
	// rest, stay in the store.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultAuditRetention is how long an audit entry stays. A year covers
	// the usual review cycles; the audit trail is what an operator reads
	// after the fact, so it outlives the records it describes.
	DefaultAuditRetention = 365 * 24 * time.Hour
)

// AtRest reports whether a session in state st may expire: no process runs
// it and none is about to (idle, or failed).
func (st SessionState) AtRest() bool { return st == SessionIdle || st == SessionFailed }
