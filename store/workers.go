package store

import (
	"context"
	"time"
)

// Workers is the liveness of workers. A worker beats while it runs; one
// whose beat lapsed while it still owns sessions is dead, and any other
// worker may take its sessions over, end what they left pending and hand
// them back to the queue. A heartbeat lapses by the store's clock (Redis:
// the key's TTL on the server; bbolt: the store's clock), so the workers'
// own clocks need not agree.
type Workers interface {
	// Heartbeat records that worker is alive for the next ttl. ErrInvalid
	// for an empty worker or a ttl <= 0.
	Heartbeat(ctx context.Context, worker string, ttl time.Duration) error
	// DeadWorkers lists, sorted, the workers that own at least one session
	// and whose heartbeat lapsed (or that never beat).
	DeadWorkers(ctx context.Context) ([]string, error)
	// TakeOver makes worker the owner of a session dead owns, atomically
	// checking that dead owns it and is still dead, so of several workers
	// taking over one session exactly one succeeds. ErrNotOwner when dead
	// does not own it (any more) or beats again.
	TakeOver(ctx context.Context, sessionID, dead, worker string) error
}
