package relay

import (
	"context"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Store is what a worker reads and writes in the shared record, grouped by
// what uses it; every backend (store.Store) is one. A method the worker
// starts to call is added here, so the list stays what the worker depends
// on.
type Store interface {
	// Sessions: claimed from the queue, fed their inputs, recorded, and
	// given back.
	Claim(ctx context.Context, worker string) (string, error)
	NextInput(ctx context.Context, sessionID, worker string) (store.Input, error)
	Requeue(ctx context.Context, in store.Input, worker string) error
	Release(ctx context.Context, sessionID, worker string) error
	Owned(ctx context.Context, worker string) ([]string, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error)

	// Liveness: this worker's heartbeat, and the sessions of lost ones.
	Heartbeat(ctx context.Context, worker string, ttl time.Duration) error
	DeadWorkers(ctx context.Context) ([]string, error)
	TakeOver(ctx context.Context, sessionID, dead, worker string) error

	// Requests: one per control request of the CLI, waited on, and
	// settled here when it expires, ends or fails verification.
	CreateRequest(ctx context.Context, r store.Request) error
	WaitDecision(ctx context.Context, id string) (store.Decision, error)
	Decide(ctx context.Context, id string, d store.Decision) (store.Request, error)
	Refuse(ctx context.Context, id string, d store.Decision) (store.Request, error)
	ListPending(ctx context.Context, sessionID string) ([]store.Request, error)

	// What the Slack side shows, and the audit entries no transition
	// writes.
	Publish(ctx context.Context, e store.Event) (string, error)
	AppendAudit(ctx context.Context, a store.AuditEntry) error

	// Transcripts, so another worker can resume a session (store.Transcripts).
	SaveTranscript(ctx context.Context, sessionID string, data []byte) error
	LoadTranscript(ctx context.Context, sessionID string) ([]byte, error)
}

// Every backend is a relay Store.
var _ Store = store.Store(nil)
