package bot

import (
	"context"
	"time"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/store"
)

// Store is what the bot reads and writes in the shared record, grouped by
// what uses it; every backend (store.Store) is one. A method the bot
// starts to call is added here, so the list stays what the bot depends on.
type Store interface {
	// Threads and sessions: a mention, a reply, /claude, Stop and the
	// status line, with the per-person and per-session bounds.
	CreateSession(ctx context.Context, s store.Session) error
	GetSession(ctx context.Context, id string) (store.Session, error)
	SessionByThread(ctx context.Context, thread store.MessageRef) (store.Session, error)
	UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error)
	Enqueue(ctx context.Context, in store.Input) (store.Input, error)
	ActiveSessionsBy(ctx context.Context, user string) (int, error)
	QueuedInputs(ctx context.Context, sessionID string) (int, error)

	// Cards: the events that post and settle them, the clicks that decide
	// them, the reconciler that posts what a crash lost, who writes which
	// (MoveCard), and the Events API deliveries seen once.
	Consume(ctx context.Context, group, consumer string, fn func(context.Context, store.Event) error) error
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
	GetRequest(ctx context.Context, id string) (store.Request, error)
	ListPending(ctx context.Context, sessionID string) ([]store.Request, error)
	CountPending(ctx context.Context, sessionID string) (int, error)
	SetCard(ctx context.Context, id string, card store.MessageRef) (pending bool, err error)
	MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error)
	Decide(ctx context.Context, id string, d store.Decision) (store.Request, error)
	// Approvals of a request a policy rule asks several people for.
	Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error)

	// The approval API's server: requests made over HTTP, their long
	// poll, each token's limits and reported tool runs.
	approvalapi.Store

	// Reach: a card's copies, its reminder and its escalation (reach.go).
	AddCopy(ctx context.Context, id string, ref store.MessageRef) (pending bool, err error)
	MarkReach(ctx context.Context, id string, m store.ReachMark) (bool, error)

	// Standing rules an approver keeps from a card (grants, remembered
	// answers) and the App Home that lists them.
	store.Standings

	// Tombstones of forgotten grants and answers (tombstones.go).
	Bury(ctx context.Context, t store.Tombstone) error
	Tombstones(ctx context.Context, kind store.StandingKind) ([]store.Tombstone, error)

	// The audit trail: the entries no transition writes, and what the
	// sealer reads and writes (auditsink.SealStore).
	AppendAudit(ctx context.Context, a store.AuditEntry) error
	AuditHead(ctx context.Context) (store.AuditLink, error)
	LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error)
	AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error)
	AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error)
	PutAuditCheckpoint(ctx context.Context, cp store.AuditCheckpoint, prev uint64) error

	// The audit channel: its sink's claim and cursor (auditsink.Store).
	ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error)
	AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error
	ReleaseAuditSink(ctx context.Context, sink, holder string) error
}

// Every backend is a bot Store.
var _ Store = store.Store(nil)
