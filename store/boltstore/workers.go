package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// bktHeartbeats maps a worker to the time (unix nanoseconds, big-endian, by
// the store's clock) its last heartbeat lapses.
var bktHeartbeats = []byte("heartbeats")

// Heartbeat implements store.Workers.
func (s *Store) Heartbeat(ctx context.Context, worker string, ttl time.Duration) error {
	if worker == "" || ttl <= 0 {
		return fmt.Errorf("boltstore: heartbeat %q for %s: %w", worker, ttl, store.ErrInvalid)
	}
	var until [8]byte
	binary.BigEndian.PutUint64(until[:], uint64(s.opts.clock.Now().Add(ttl).UnixNano()))
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bktHeartbeats).Put([]byte(worker), until[:])
	})
	if err != nil {
		return fmt.Errorf("boltstore: heartbeat %s: %w", worker, err)
	}
	return nil
}

// alive reports whether worker's heartbeat has not lapsed at now.
func alive(tx *bolt.Tx, worker []byte, now time.Time) bool {
	v := tx.Bucket(bktHeartbeats).Get(worker)
	return len(v) == 8 && int64(binary.BigEndian.Uint64(v)) > now.UnixNano()
}

// DeadWorkers implements store.Workers: the owned bucket holds one nested
// bucket per worker that owns something (disown drops empty ones).
func (s *Store) DeadWorkers(ctx context.Context) ([]string, error) {
	var dead []string
	now := s.opts.clock.Now()
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktOwned).ForEachBucket(func(worker []byte) error {
			if !alive(tx, worker, now) {
				dead = append(dead, string(worker))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: dead workers: %w", err)
	}
	slices.Sort(dead)
	return dead, nil
}

// TakeOver implements store.Workers in one write transaction, so the owner
// and the heartbeat it checks cannot change under it.
func (s *Store) TakeOver(ctx context.Context, sessionID, dead, worker string) error {
	if worker == "" || dead == "" || worker == dead {
		return fmt.Errorf("boltstore: take over %s from %q by %q: %w", sessionID, dead, worker, store.ErrInvalid)
	}
	now := s.opts.clock.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		q, err := ownedQueueState(tx, sessionID, dead)
		if err != nil {
			return err
		}
		if alive(tx, []byte(dead), now) {
			return fmt.Errorf("%s beats again: %w", dead, store.ErrNotOwner)
		}
		q.Owner = worker
		if err := disown(tx, dead, sessionID); err != nil {
			return err
		}
		if err := putJSON(tx.Bucket(bktQState), []byte(sessionID), q); err != nil {
			return err
		}
		owned, err := tx.Bucket(bktOwned).CreateBucketIfNotExists([]byte(worker))
		if err != nil {
			return err
		}
		return owned.Put([]byte(sessionID), nil)
	})
	if err != nil {
		return fmt.Errorf("boltstore: take over %s from %s by %s: %w", sessionID, dead, worker, err)
	}
	// NextInput calls of the old owner wake up and learn they lost it.
	s.queue.broadcast()
	return nil
}
