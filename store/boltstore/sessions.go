package boltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

func threadKey(m store.MessageRef) []byte {
	return []byte(m.Channel + "\x00" + m.TS)
}

func getSession(tx *bolt.Tx, id string) (store.Session, error) {
	var sess store.Session
	found, err := getJSON(tx.Bucket(bktSessions), []byte(id), &sess)
	if err != nil {
		return sess, err
	}
	if !found {
		return sess, store.ErrNotFound
	}
	return sess, nil
}

// CreateSession stores sess and indexes it by thread (a session without a
// thread is not indexed).
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	if err := sess.Validate(); err != nil {
		return fmt.Errorf("boltstore: create session %q: %w", sess.ID, err)
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = time.Now()
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		sessions, threads := tx.Bucket(bktSessions), tx.Bucket(bktThreads)
		if sessions.Get([]byte(sess.ID)) != nil {
			return fmt.Errorf("%w: session id", store.ErrExists)
		}
		if !sess.Thread.IsZero() {
			if other := threads.Get(threadKey(sess.Thread)); other != nil {
				return fmt.Errorf("%w: thread has session %s", store.ErrExists, other)
			}
			if err := threads.Put(threadKey(sess.Thread), []byte(sess.ID)); err != nil {
				return err
			}
		}
		if err := putJSON(sessions, []byte(sess.ID), sess); err != nil {
			return err
		}
		return s.retainSession(tx, sess.ID, s.opts.clock.Now())
	})
	if err != nil {
		return fmt.Errorf("boltstore: create session %s: %w", sess.ID, err)
	}
	return nil
}

// GetSession returns the session with id.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	var sess store.Session
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		sess, err = getSession(tx, id)
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("boltstore: get session %s: %w", id, err)
	}
	return sess, nil
}

// SessionByThread follows the thread index.
func (s *Store) SessionByThread(ctx context.Context, thread store.MessageRef) (store.Session, error) {
	var sess store.Session
	err := s.db.View(func(tx *bolt.Tx) error {
		id := tx.Bucket(bktThreads).Get(threadKey(thread))
		if id == nil || thread.IsZero() {
			return store.ErrNotFound
		}
		var err error
		sess, err = getSession(tx, string(id))
		return err
	})
	if err != nil {
		return store.Session{}, fmt.Errorf("boltstore: session by thread %s/%s: %w", thread.Channel, thread.TS, err)
	}
	return sess, nil
}

// UpdateSession runs fn inside the write transaction, so it runs exactly
// once and nobody else writes in between. Changing the id or the thread is
// ErrInvalid.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error) {
	var (
		out   store.Session
		fnErr error
	)
	err := s.db.Update(func(tx *bolt.Tx) error {
		cur, err := getSession(tx, id)
		if err != nil {
			return err
		}
		next := cur
		if fnErr = fn(&next); fnErr != nil {
			return fnErr
		}
		if next.ID != cur.ID || next.Thread != cur.Thread {
			return fmt.Errorf("%w: the id and thread of a session cannot change", store.ErrInvalid)
		}
		out = next
		if err := putJSON(tx.Bucket(bktSessions), []byte(id), next); err != nil {
			return err
		}
		return s.retainSession(tx, id, s.opts.clock.Now())
	})
	if fnErr != nil {
		return store.Session{}, fnErr
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("boltstore: update session %s: %w", id, err)
	}
	return out, nil
}
