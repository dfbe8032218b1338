package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/slackgate/slackgate/store"
)

// Bury implements store.Tombstones: HSETNX, so the first tombstone of a
// kind and id stands.
func (s *Store) Bury(ctx context.Context, t store.Tombstone) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("redisstore: bury: %w", err)
	}
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("redisstore: bury %s %s: %w", t.Kind, t.ID, err)
	}
	if err := s.rdb.HSetNX(ctx, s.keys.tombstones(string(t.Kind)), t.ID, body).Err(); err != nil {
		return fmt.Errorf("redisstore: bury %s %s: %w", t.Kind, t.ID, err)
	}
	return nil
}

// Tombstones implements store.Tombstones.
func (s *Store) Tombstones(ctx context.Context, kind store.StandingKind) ([]store.Tombstone, error) {
	vals, err := s.rdb.HVals(ctx, s.keys.tombstones(string(kind))).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: tombstones of %s: %w", kind, err)
	}
	out := make([]store.Tombstone, 0, len(vals))
	for _, v := range vals {
		var t store.Tombstone
		if err := json.Unmarshal([]byte(v), &t); err != nil {
			return nil, fmt.Errorf("redisstore: tombstones of %s: %w", kind, err)
		}
		out = append(out, t)
	}
	return out, nil
}
