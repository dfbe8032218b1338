package store

import (
	"context"
	"time"
)

// Dedup remembers keys for a while, so something done once is not done again.
type Dedup interface {
	// FirstSeen records key and reports whether this is the first time it was
	// seen within ttl. Of concurrent callers with one key, across processes
	// too, exactly one sees true. ErrInvalid for an empty key or a ttl <= 0.
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
}
