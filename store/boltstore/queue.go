package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// queueState is a session's place in the queue.
type queueState struct {
	Owner    string `json:"owner,omitempty"`
	ReadyKey uint64 `json:"ready_key,omitempty"` // its key in the ready bucket; 0: not ready
}

func getQueueState(tx *bolt.Tx, sessionID string) (queueState, error) {
	var q queueState
	_, err := getJSON(tx.Bucket(bktQState), []byte(sessionID), &q)
	return q, err
}

// ownedQueueState is getQueueState for a session worker must own; it
// returns store.ErrNotOwner when the worker does not.
func ownedQueueState(tx *bolt.Tx, sessionID, worker string) (queueState, error) {
	q, err := getQueueState(tx, sessionID)
	if err != nil {
		return q, err
	}
	if q.Owner == "" || q.Owner != worker {
		return q, store.ErrNotOwner
	}
	return q, nil
}

// markReady puts the session at the end of the ready queue.
func markReady(tx *bolt.Tx, sessionID string, q *queueState) error {
	ready := tx.Bucket(bktReady)
	n, err := ready.NextSequence()
	if err != nil {
		return err
	}
	q.ReadyKey = n
	return ready.Put(be64(n), []byte(sessionID))
}

func inboxEmpty(tx *bolt.Tx, sessionID string) bool {
	b := tx.Bucket(bktInbox).Bucket([]byte(sessionID))
	if b == nil {
		return true
	}
	k, _ := b.Cursor().First()
	return k == nil
}

// Enqueue appends the input to the session's inbox and, when nobody owns the
// session and it is not queued yet, puts it at the end of the ready queue.
func (s *Store) Enqueue(ctx context.Context, in store.Input) (store.Input, error) {
	if err := in.Validate(); err != nil {
		return store.Input{}, fmt.Errorf("boltstore: enqueue: %w", err)
	}
	if in.At.IsZero() {
		in.At = time.Now()
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		inboxes := tx.Bucket(bktInbox)
		n, err := inboxes.NextSequence()
		if err != nil {
			return err
		}
		if in.ID == "" {
			in.ID = "in-" + strconv.FormatUint(n, 10)
		}
		inbox, err := inboxes.CreateBucketIfNotExists([]byte(in.SessionID))
		if err != nil {
			return err
		}
		if err := putJSON(inbox, be64(n), in); err != nil {
			return err
		}
		if err := s.retainSession(tx, in.SessionID, s.opts.clock.Now()); err != nil {
			return err
		}
		q, err := getQueueState(tx, in.SessionID)
		if err != nil {
			return err
		}
		if q.Owner != "" || q.ReadyKey != 0 {
			return nil
		}
		if err := markReady(tx, in.SessionID, &q); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bktQState), []byte(in.SessionID), q)
	})
	if err != nil {
		return store.Input{}, fmt.Errorf("boltstore: enqueue %s: %w", in.SessionID, err)
	}
	s.queue.broadcast()
	return in, nil
}

// Claim takes the session at the head of the ready queue, waiting for one.
func (s *Store) Claim(ctx context.Context, worker string) (string, error) {
	if worker == "" {
		return "", fmt.Errorf("boltstore: claim: %w: empty worker", store.ErrInvalid)
	}
	for {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("boltstore: claim by %s: %w", worker, err)
		}
		wake := s.queue.ch()
		var sessionID string
		err := s.db.Update(func(tx *bolt.Tx) error {
			ready := tx.Bucket(bktReady)
			k, v := ready.Cursor().First()
			if k == nil {
				return errNothing
			}
			sessionID = string(v)
			if err := ready.Delete(k); err != nil {
				return err
			}
			q, err := getQueueState(tx, sessionID)
			if err != nil {
				return err
			}
			q.Owner, q.ReadyKey = worker, 0
			if err := putJSON(tx.Bucket(bktQState), []byte(sessionID), q); err != nil {
				return err
			}
			owned, err := tx.Bucket(bktOwned).CreateBucketIfNotExists([]byte(worker))
			if err != nil {
				return err
			}
			return owned.Put([]byte(sessionID), nil)
		})
		switch {
		case err == nil:
			return sessionID, nil
		case !errors.Is(err, errNothing):
			return "", fmt.Errorf("boltstore: claim by %s: %w", worker, err)
		}
		if err := s.wait(ctx, wake, nil); err != nil {
			return "", fmt.Errorf("boltstore: claim by %s: %w", worker, err)
		}
	}
}

// NextInput takes the oldest input of an owned session, waiting for one.
func (s *Store) NextInput(ctx context.Context, sessionID, worker string) (store.Input, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.Input{}, fmt.Errorf("boltstore: next input %s for %s: %w", sessionID, worker, err)
		}
		wake := s.queue.ch()
		var in store.Input
		err := s.db.Update(func(tx *bolt.Tx) error {
			if _, err := ownedQueueState(tx, sessionID, worker); err != nil {
				return err
			}
			inbox := tx.Bucket(bktInbox).Bucket([]byte(sessionID))
			if inbox == nil {
				return errNothing
			}
			k, v := inbox.Cursor().First()
			if k == nil {
				return errNothing
			}
			if err := jsonUnmarshal(v, &in); err != nil {
				return err
			}
			return inbox.Delete(k)
		})
		switch {
		case err == nil:
			return in, nil
		case !errors.Is(err, errNothing):
			return store.Input{}, fmt.Errorf("boltstore: next input %s for %s: %w", sessionID, worker, err)
		}
		if err := s.wait(ctx, wake, nil); err != nil {
			return store.Input{}, fmt.Errorf("boltstore: next input %s for %s: %w", sessionID, worker, err)
		}
	}
}

// Requeue puts an input back before every other input of the session: under
// the key just below the inbox's first (keys come from a sequence starting
// at 1, and at most one input per process is ever put back).
func (s *Store) Requeue(ctx context.Context, in store.Input, worker string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, err := ownedQueueState(tx, in.SessionID, worker); err != nil {
			return err
		}
		inbox, err := tx.Bucket(bktInbox).CreateBucketIfNotExists([]byte(in.SessionID))
		if err != nil {
			return err
		}
		key := uint64(1)
		if k, _ := inbox.Cursor().First(); k != nil {
			key = binary.BigEndian.Uint64(k)
			if key == 0 {
				return fmt.Errorf("%w: no key left before the inbox's first input", store.ErrInvalid)
			}
			key--
		}
		return putJSON(inbox, be64(key), in)
	})
	if err != nil {
		return fmt.Errorf("boltstore: requeue %s for %s: %w", in.ID, in.SessionID, err)
	}
	s.queue.broadcast()
	return nil
}

// Release drops ownership; input left in the inbox makes the session ready.
func (s *Store) Release(ctx context.Context, sessionID, worker string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		q, err := ownedQueueState(tx, sessionID, worker)
		if err != nil {
			return err
		}
		q.Owner = ""
		if err := disown(tx, worker, sessionID); err != nil {
			return err
		}
		if inboxEmpty(tx, sessionID) {
			if err := tx.Bucket(bktQState).Delete([]byte(sessionID)); err != nil {
				return err
			}
			return s.retainSession(tx, sessionID, s.opts.clock.Now())
		}
		if err := markReady(tx, sessionID, &q); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bktQState), []byte(sessionID), q)
	})
	if err != nil {
		return fmt.Errorf("boltstore: release %s by %s: %w", sessionID, worker, err)
	}
	// NextInput calls of the old owner wake up and learn they lost it.
	s.queue.broadcast()
	return nil
}

// Owned lists the sessions worker owns.
func (s *Store) Owned(ctx context.Context, worker string) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *bolt.Tx) error {
		owned := tx.Bucket(bktOwned).Bucket([]byte(worker))
		if owned == nil {
			return nil
		}
		return owned.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: owned by %s: %w", worker, err)
	}
	return out, nil
}
