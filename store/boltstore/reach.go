package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// AddCopy records a copy of the request, and whether it is pending, in one
// transaction.
func (s *Store) AddCopy(ctx context.Context, id string, ref store.MessageRef) (pending bool, err error) {
	if ref.Channel == "" || ref.TS == "" {
		return false, fmt.Errorf("boltstore: add copy of %s: %w: empty message reference", id, store.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("boltstore: add copy of %s: %w", id, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRequest(tx, id)
		if err != nil {
			return err
		}
		pending = r.Pending()
		if r.Reach.HasCopy(ref) {
			return nil
		}
		r.Reach.Copies = append(r.Reach.Copies, ref)
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
	if err != nil {
		return false, fmt.Errorf("boltstore: add copy of %s: %w", id, err)
	}
	return pending, nil
}

// MarkReach takes a reach step of a pending request once, in one transaction.
func (s *Store) MarkReach(ctx context.Context, id string, m store.ReachMark) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("boltstore: mark %s of %s: %w", m.Step, id, err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("boltstore: mark %s of %s: %w", m.Step, id, err)
	}
	took := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRequest(tx, id)
		if err != nil {
			return err
		}
		if !r.Pending() || !r.Reach.Done(m.Step).IsZero() {
			return nil
		}
		r.Reach.Apply(m)
		took = true
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
	if err != nil {
		return false, fmt.Errorf("boltstore: mark %s of %s: %w", m.Step, id, err)
	}
	return took, nil
}
