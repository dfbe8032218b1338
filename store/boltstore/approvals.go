package boltstore

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// Approve implements store.Approvals: the request's record, with its
// approvals, is read and rewritten in one transaction.
func (s *Store) Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error) {
	if err := store.ValidateApprove(a, need); err != nil {
		return store.Request{}, false, fmt.Errorf("boltstore: approve %s: %w", id, err)
	}
	var r store.Request
	var last bool
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		r, err = getRequest(tx, id)
		if err != nil {
			return err
		}
		if r.Decision != nil {
			return store.ErrAlreadyDecided
		}
		added, l, err := store.AddApproval(&r, a, need)
		if err != nil || !added {
			return err
		}
		last = l
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
	switch {
	case errors.Is(err, store.ErrAlreadyDecided), errors.Is(err, store.ErrInputChanged):
		return r, false, fmt.Errorf("boltstore: approve %s: %w", id, err)
	case err != nil:
		return store.Request{}, false, fmt.Errorf("boltstore: approve %s: %w", id, err)
	}
	return r, last, nil
}
