package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/slackgate/slackgate/store"
)

// FirstSeen implements store.Dedup with SET key 1 NX PX ttl: Redis makes the
// check and the write one step, so among any number of clients exactly one
// sees true, and the key's expiry forgets it without a sweep.
func (s *Store) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if key == "" || ttl <= 0 {
		return false, fmt.Errorf("redisstore: first seen %q: %w: empty key or ttl %v", key, store.ErrInvalid, ttl)
	}
	if err := s.stopped(ctx); err != nil {
		return false, fmt.Errorf("redisstore: first seen %s: %w", key, err)
	}
	// PX counts whole milliseconds; round up so a short ttl never becomes 0.
	if r := ttl % time.Millisecond; r != 0 {
		ttl += time.Millisecond - r
	}
	first, err := s.rdb.SetNX(ctx, s.keys.dedup(key), 1, ttl).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: first seen %s: %w", key, err)
	}
	return first, nil
}
