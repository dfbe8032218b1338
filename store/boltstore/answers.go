package boltstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// Remembered answers (store.Answers):
//
//	answers    answer id → RememberedAnswer (JSON)
//	answeridx  scope key ‖ 0x00 ‖ fingerprint → answer id; one answer per form and scope
var (
	bktAnswers     = []byte("answers")
	bktAnswerIndex = []byte("answeridx")
)

func answerIndexKey(scope store.AnswerScope, fingerprint string) []byte {
	k := append([]byte(scope.Key()), 0)
	return append(k, fingerprint...)
}

func newAnswerID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "ans-" + hex.EncodeToString(b[:])
}

// Remember implements store.Answers: the answer, its index entry, the
// removal of the answer it replaces and the audit entry in one transaction.
func (s *Store) Remember(ctx context.Context, a store.RememberedAnswer) (store.RememberedAnswer, error) {
	if err := a.Validate(); err != nil {
		return a, fmt.Errorf("boltstore: remember answer: %w", err)
	}
	if a.ID == "" {
		a.ID = newAnswerID()
	}
	if a.At.IsZero() {
		a.At = time.Now()
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		answers, idx := tx.Bucket(bktAnswers), tx.Bucket(bktAnswerIndex)
		key := answerIndexKey(a.Scope, a.Fingerprint)
		old := idx.Get(key)
		if !bytes.Equal(old, []byte(a.ID)) && answers.Get([]byte(a.ID)) != nil {
			return store.ErrExists // the id names another answer
		}
		if old != nil {
			if err := answers.Delete(bytes.Clone(old)); err != nil {
				return err
			}
		}
		if err := putJSON(answers, []byte(a.ID), a); err != nil {
			return err
		}
		if err := idx.Put(key, []byte(a.ID)); err != nil {
			return err
		}
		return appendAudit(tx, store.RememberedAudit(a))
	})
	if err != nil {
		return a, fmt.Errorf("boltstore: remember answer for %s: %w", a.Scope.Key(), err)
	}
	return a, nil
}

// LookupAnswer implements store.Answers.
func (s *Store) LookupAnswer(ctx context.Context, scope store.AnswerScope, fingerprint string) (store.RememberedAnswer, error) {
	var a store.RememberedAnswer
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
		return a, fmt.Errorf("boltstore: lookup answer for %s: %w", scope.Key(), err)
	}
	return a, nil
}

// ListAnswers implements store.Answers.
func (s *Store) ListAnswers(ctx context.Context) ([]store.RememberedAnswer, error) {
	out, err := listKept(s, bktAnswers, func(a store.RememberedAnswer) time.Time { return a.At })
	if err != nil {
		return nil, fmt.Errorf("boltstore: list answers: %w", err)
	}
	return out, nil
}

// ForgetAnswer implements store.Answers.
func (s *Store) ForgetAnswer(ctx context.Context, id, by, byName string) (store.RememberedAnswer, error) {
	var a store.RememberedAnswer
	if by == "" {
		return a, fmt.Errorf("boltstore: forget answer %s: %w: who forgets it is required", id, store.ErrInvalid)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		answers, idx := tx.Bucket(bktAnswers), tx.Bucket(bktAnswerIndex)
		found, err := getJSON(answers, []byte(id), &a)
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		if err := answers.Delete([]byte(id)); err != nil {
			return err
		}
		key := answerIndexKey(a.Scope, a.Fingerprint)
		if bytes.Equal(idx.Get(key), []byte(id)) {
			if err := idx.Delete(key); err != nil {
				return err
			}
		}
		return appendAudit(tx, store.ForgottenAudit(a, by, byName, time.Now()))
	})
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("boltstore: forget answer %s: %w", id, err)
	}
	return a, nil
}
