package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// sweepPerCall bounds how many expired keys one FirstSeen removes. Each call
// adds at most one key and removes up to this many, so expired keys never
// pile up while no call waits on a long sweep.
const sweepPerCall = 16

// FirstSeen implements store.Dedup. The key, its expiry and its place in the
// expiry index change in one transaction, so of several concurrent callers
// exactly one sees true.
func (s *Store) FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if key == "" || ttl <= 0 {
		return false, fmt.Errorf("boltstore: first seen %q: %w: empty key or ttl %v", key, store.ErrInvalid, ttl)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("boltstore: first seen %s: %w", key, err)
	}
	first := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		now := s.opts.clock.Now().UnixNano()
		keys, byExpiry := tx.Bucket(bktDedup), tx.Bucket(bktDedupExpiry)
		if _, err := sweepDedup(keys, byExpiry, now, sweepPerCall); err != nil {
			return err
		}
		if v := keys.Get([]byte(key)); v != nil {
			exp := int64(binary.BigEndian.Uint64(v))
			if exp > now {
				return errNothing
			}
			// Expired but not swept yet: forget it here.
			if err := byExpiry.Delete(expiryKey(exp, key)); err != nil {
				return err
			}
		}
		exp := now + int64(ttl)
		if err := keys.Put([]byte(key), be64(uint64(exp))); err != nil {
			return err
		}
		first = true
		return byExpiry.Put(expiryKey(exp, key), nil)
	})
	if errors.Is(err, errNothing) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("boltstore: first seen %s: %w", key, err)
	}
	return first, nil
}

// expiryKey orders the index by expiry: be64(expiry) ‖ key.
func expiryKey(exp int64, key string) []byte {
	return append(be64(uint64(exp)), key...)
}

// sweepDedup drops up to limit keys whose expiry has passed, oldest first,
// and reports how many. Expiries are after 1970, so the unsigned order is
// the time order.
func sweepDedup(keys, byExpiry *bolt.Bucket, now int64, limit int) (int, error) {
	c := byExpiry.Cursor()
	var stale [][]byte
	for k, _ := c.First(); k != nil && len(stale) < limit; k, _ = c.Next() {
		if int64(binary.BigEndian.Uint64(k[:8])) > now {
			break
		}
		stale = append(stale, bytes.Clone(k))
	}
	for _, k := range stale {
		if err := byExpiry.Delete(k); err != nil {
			return 0, err
		}
		// Renewing a key moves its index entry, so this check only guards
		// against a file edited by hand.
		if v := keys.Get(k[8:]); v != nil && bytes.Equal(v, k[:8]) {
			if err := keys.Delete(k[8:]); err != nil {
				return 0, err
			}
		}
	}
	return len(stale), nil
}
