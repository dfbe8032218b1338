package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// MoveCard makes one step of a request's card (store.CardState.Apply) in
// one transaction, its claims timed by the store's clock.
func (s *Store) MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("boltstore: card %s of %s: %w", m.Step, id, err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("boltstore: card %s of %s: %w", m.Step, id, err)
	}
	took := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRequest(tx, id)
		if err != nil {
			return err
		}
		if took = r.CardState.Apply(m, r.Pending(), s.opts.clock.Now()); !took {
			return nil
		}
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
	if err != nil {
		return false, fmt.Errorf("boltstore: card %s of %s: %w", m.Step, id, err)
	}
	return took, nil
}
