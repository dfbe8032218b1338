package store

import (
	"context"
	"time"
)

// SessionState is where a session is in its life.
type SessionState string

const (
	SessionQueued  SessionState = "queued"  // input waiting, no worker has it yet
	SessionRunning SessionState = "running" // a worker runs its claude process
	SessionIdle    SessionState = "idle"    // no process; a new input resumes it
	SessionFailed  SessionState = "failed"  // the last process could not start or crashed
)

// Valid reports whether st is one of the known states.
func (st SessionState) Valid() bool {
	switch st {
	case SessionQueued, SessionRunning, SessionIdle, SessionFailed:
		return true
	}
	return false
}

// Session ties a Slack thread to a Claude Code session. Its ID is the Claude
// session id (a UUID), so the same id is passed as --session-id the first
// time and --resume afterwards.
type Session struct {
	ID             string       `json:"id"`
	Thread         MessageRef   `json:"thread"` // channel + thread_ts where the conversation lives
	WorkDir        string       `json:"workdir"`
	StartedBy      string       `json:"started_by"` // Slack user id
	PermissionMode string       `json:"permission_mode,omitempty"`
	Model          string       `json:"model,omitempty"`
	State          SessionState `json:"state"`
	// Started is true once a claude process has run with this id, so the
	// next process must --resume it rather than create it.
	Started   bool      `json:"started"`
	Worker    string    `json:"worker,omitempty"` // owner while running
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Status is the bot's status message in the thread (kept current).
	Status MessageRef `json:"status,omitzero"`
	// LiveMode is the permission mode a person switched the running
	// claude process to from Slack (ControlSetMode); "" while it runs in
	// PermissionMode. The worker sets it once the CLI took the switch and
	// clears it when the process ends: the next one starts in
	// PermissionMode again. Shown on the status line; not signed (it
	// decides nothing: the signed input that asked for it did).
	LiveMode string `json:"live_mode,omitempty"`
	// Process names the claude process running the session now: a
	// worker sets a new one each time it starts one and clears it when
	// the process ends. A mode switch is signed for the process it names
	// (Input.Process); not signed itself (a name for a process that is not
	// running switches nothing).
	Process string `json:"process,omitempty"`
	// API marks a session that reached slackgate through the approval
	// API: its Claude Code runs wherever its client runs, and no worker
	// ever runs it.
	API bool `json:"api,omitempty"`
	// Signature is the Ed25519 signature of the bot that created the
	// session (see SignSession); a worker runs a session only when it
	// verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Validate checks s: it has an id, and a state, when set, is a known one. A
// zero CreatedAt is allowed: the store fills it in (see
// Sessions.CreateSession).
func (s Session) Validate() error {
	if s.ID == "" {
		return invalid("session without an id")
	}
	if s.State != "" && !s.State.Valid() {
		return invalid("session %s in unknown state %q", s.ID, s.State)
	}
	return nil
}

// Sessions is the record of Slack threads and their Claude sessions.
type Sessions interface {
	// CreateSession stores a new session and indexes it by thread. ErrExists
	// if the id or the thread already has a session; ErrInvalid if s fails
	// Validate. A zero CreatedAt becomes the time of the call.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns ErrNotFound for an unknown id.
	GetSession(ctx context.Context, id string) (Session, error)
	// SessionByThread finds the session that lives in a Slack thread.
	// ErrNotFound if none does.
	SessionByThread(ctx context.Context, thread MessageRef) (Session, error)
	// UpdateSession applies fn to the current session and stores the result
	// atomically (fn may run more than once on contention; the id and thread
	// cannot change). An error from fn is returned unchanged and nothing is
	// stored. ErrNotFound for an unknown id.
	UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error)
}
