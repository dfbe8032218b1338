package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// Tombstones (store.Tombstones):
//
//	tombstones  "<kind>:<id>" → Tombstone (JSON)
var bktTombstones = []byte("tombstones")

// Bury implements store.Tombstones: the first tombstone of a kind and id
// stands.
func (s *Store) Bury(ctx context.Context, t store.Tombstone) error {
	if err := t.Validate(); err != nil {
		return fmt.Errorf("boltstore: bury: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktTombstones)
		key := []byte(string(t.Kind) + ":" + t.ID)
		if b.Get(key) != nil {
			return nil
		}
		return putJSON(b, key, t)
	})
	if err != nil {
		return fmt.Errorf("boltstore: bury %s %s: %w", t.Kind, t.ID, err)
	}
	return nil
}

// Tombstones implements store.Tombstones.
func (s *Store) Tombstones(ctx context.Context, kind store.StandingKind) ([]store.Tombstone, error) {
	var out []store.Tombstone
	prefix := []byte(string(kind) + ":")
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktTombstones).Cursor()
		for k, v := c.Seek(prefix); k != nil && len(k) >= len(prefix) && string(k[:len(prefix)]) == string(prefix); k, v = c.Next() {
			var t store.Tombstone
			if err := jsonUnmarshal(v, &t); err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: tombstones of %s: %w", kind, err)
	}
	return out, nil
}
