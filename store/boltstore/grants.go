package boltstore

import (
	"context"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// Grants (store.Grants):
//
//	grants  grant id → Grant (JSON)
var bktGrants = []byte("grants")

// AddGrant implements store.Grants: the grant and its audit entry in one
// transaction.
func (s *Store) AddGrant(ctx context.Context, g store.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("boltstore: add grant: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktGrants)
		if b.Get([]byte(g.ID)) != nil {
			return store.ErrExists
		}
		if err := putJSON(b, []byte(g.ID), g); err != nil {
			return err
		}
		return appendAudit(tx, store.GrantAddedAudit(g))
	})
	if err != nil {
		return fmt.Errorf("boltstore: add grant %s: %w", g.ID, err)
	}
	return nil
}

// ListGrants implements store.Grants.
func (s *Store) ListGrants(ctx context.Context) ([]store.Grant, error) {
	out, err := listKept(s, bktGrants, func(g store.Grant) time.Time { return g.At })
	if err != nil {
		return nil, fmt.Errorf("boltstore: list grants: %w", err)
	}
	return out, nil
}

// listKept returns every record in bucket (grants, remembered answers:
// what approvers keep for later), newest first by at.
func listKept[T any](s *Store, bucket []byte, at func(T) time.Time) ([]T, error) {
	var out []T
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			var rec T
			if err := jsonUnmarshal(v, &rec); err != nil {
				return err
			}
			out = append(out, rec)
			return nil
		})
	})
	sort.SliceStable(out, func(i, j int) bool { return at(out[i]).After(at(out[j])) })
	return out, err
}

// ForgetGrant implements store.Grants.
func (s *Store) ForgetGrant(ctx context.Context, id, by, byName string) (store.Grant, error) {
	var g store.Grant
	if by == "" {
		return g, fmt.Errorf("boltstore: forget grant %s: %w: who forgets it is required", id, store.ErrInvalid)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktGrants)
		found, err := getJSON(b, []byte(id), &g)
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		return appendAudit(tx, store.GrantForgottenAudit(g, by, byName, time.Now()))
	})
	if err != nil {
		return store.Grant{}, fmt.Errorf("boltstore: forget grant %s: %w", id, err)
	}
	return g, nil
}
