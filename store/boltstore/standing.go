package boltstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// Standing rules (store.Standings), each kind in its own bucket, as
// before they were one kind:
//
//	grants     grant id → Standing (JSON)
//	answers    answer id → Standing (JSON)
//	answeridx  scope key ‖ 0x00 ‖ fingerprint → answer id; one answer per form and scope
var (
	bktGrants      = []byte("grants")
	bktAnswers     = []byte("answers")
	bktAnswerIndex = []byte("answeridx")
)

// bucketOf is where records of kind live.
func bucketOf(kind store.StandingKind) ([]byte, error) {
	switch kind {
	case store.StandingGrant:
		return bktGrants, nil
	case store.StandingAnswer:
		return bktAnswers, nil
	}
	return nil, fmt.Errorf("%w: standing rule of unknown kind %q", store.ErrInvalid, kind)
}

func answerIndexKey(scope store.Scope, fingerprint string) []byte {
	k := append([]byte(scope.Key()), 0)
	return append(k, fingerprint...)
}

// Keep implements store.Standings: the record, an answer's index entry
// and the removal of the answer it replaces, and the audit entry, in one
// transaction.
func (s *Store) Keep(ctx context.Context, st store.Standing) (store.Standing, error) {
	if st.ID == "" {
		var b [12]byte
		_, _ = rand.Read(b[:])
		st.ID = string(st.Kind) + "-" + hex.EncodeToString(b[:])
	}
	if st.At.IsZero() {
		st.At = time.Now()
	}
	if err := st.Validate(); err != nil {
		return st, fmt.Errorf("boltstore: keep: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		name, _ := bucketOf(st.Kind)
		b, old := tx.Bucket(name), []byte(nil)
		if st.Kind == store.StandingAnswer {
			old = tx.Bucket(bktAnswerIndex).Get(answerIndexKey(st.Scope, st.Fingerprint))
		}
		if !bytes.Equal(old, []byte(st.ID)) && b.Get([]byte(st.ID)) != nil {
			return store.ErrExists // the id names another record
		}
		if old != nil {
			if err := b.Delete(bytes.Clone(old)); err != nil {
				return err
			}
		}
		if err := putJSON(b, []byte(st.ID), st); err != nil {
			return err
		}
		if st.Kind == store.StandingAnswer {
			if err := tx.Bucket(bktAnswerIndex).Put(answerIndexKey(st.Scope, st.Fingerprint), []byte(st.ID)); err != nil {
				return err
			}
		}
		return appendAudit(tx, st.KeptAudit())
	})
	if err != nil {
		return st, fmt.Errorf("boltstore: keep %s %s for %s: %w", st.Kind, st.ID, st.Scope.Key(), err)
	}
	return st, nil
}

// LookupAnswer implements store.Standings.
func (s *Store) LookupAnswer(ctx context.Context, scope store.Scope, fingerprint string) (store.Standing, error) {
	a := store.Standing{}
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bktAnswerIndex).Get(answerIndexKey(scope, fingerprint))
		if id == nil {
			return store.ErrNotFound
		}
		found, err := getJSON(tx.Bucket(bktAnswers), id, &a)
		if err == nil && !found {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return store.Standing{}, fmt.Errorf("boltstore: lookup answer for %s: %w", scope.Key(), err)
	}
	a.Kind = store.StandingAnswer
	return a, nil
}

// Kept implements store.Standings.
func (s *Store) Kept(ctx context.Context, kind store.StandingKind) ([]store.Standing, error) {
	name, err := bucketOf(kind)
	if err != nil {
		return nil, fmt.Errorf("boltstore: list: %w", err)
	}
	var out []store.Standing
	err = s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(_, v []byte) error {
			var st store.Standing
			if err := jsonUnmarshal(v, &st); err != nil {
				return err
			}
			st.Kind = kind
			out = append(out, st)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: list %ss: %w", kind, err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.After(out[j].At) })
	return out, nil
}

// Forget implements store.Standings.
func (s *Store) Forget(ctx context.Context, kind store.StandingKind, id, by, byName string) (store.Standing, error) {
	st := store.Standing{}
	name, err := bucketOf(kind)
	if err == nil && by == "" {
		err = fmt.Errorf("%w: who forgets it is required", store.ErrInvalid)
	}
	if err == nil {
		err = s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			found, err := getJSON(b, []byte(id), &st)
			if err != nil {
				return err
			}
			if !found {
				return store.ErrNotFound
			}
			st.Kind = kind
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
			if idx, key := tx.Bucket(bktAnswerIndex), answerIndexKey(st.Scope, st.Fingerprint); kind == store.StandingAnswer && bytes.Equal(idx.Get(key), []byte(id)) {
				if err := idx.Delete(key); err != nil {
					return err
				}
			}
			return appendAudit(tx, st.ForgottenAudit(by, byName, time.Now()))
		})
	}
	if err != nil {
		return store.Standing{}, fmt.Errorf("boltstore: forget %s %s: %w", kind, id, err)
	}
	return st, nil
}
