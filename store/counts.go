package store

import (
	"context"
	"time"
)

// Counts answers what the Slack side's limits ask, from the shared record,
// so every bot replica counts the same sessions and inputs.
type Counts interface {
	// ActiveSessionsBy counts the sessions user started (Session.StartedBy)
	// that are queued or running; 0 for a user who started none.
	ActiveSessionsBy(ctx context.Context, user string) (int, error)
	// QueuedInputs counts the inputs waiting in a session's inbox that no
	// worker has taken yet; 0 for a session with none, or an unknown one.
	QueuedInputs(ctx context.Context, sessionID string) (int, error)
	// ReadySessions counts the sessions, installation-wide, that have
	// input queued and no worker owning them: those waiting for a worker
	// to claim them.
	ReadySessions(ctx context.Context) (int, error)
	// CountPendingUnder counts the pending requests whose session id
	// starts with prefix. The approval API names the sessions of one token
	// with a prefix of their own, so this is one token's pending requests;
	// it costs what CountPending(ctx, "") costs.
	CountPendingUnder(ctx context.Context, prefix string) (int, error)
	// SessionsUpdatedSince counts the sessions starter started
	// (Session.StartedBy) whose UpdatedAt is at or after since; 0 for a
	// starter who started none. It reads each of the starter's sessions.
	SessionsUpdatedSince(ctx context.Context, starter string, since time.Time) (int, error)
}

// Active reports whether a session in state st holds a place in its
// starter's quota: it waits for a worker or has one.
func (st SessionState) Active() bool { return st == SessionQueued || st == SessionRunning }
