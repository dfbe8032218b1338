package boltstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// ActiveSessionsBy scans every session: one machine holds few enough (ended
// ones expire) that an index would cost more in upkeep than it saves.
func (s *Store) ActiveSessionsBy(ctx context.Context, user string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktSessions).ForEach(func(_, v []byte) error {
			var sess struct {
				StartedBy string             `json:"started_by"`
				State     store.SessionState `json:"state"`
			}
			if err := jsonUnmarshal(v, &sess); err != nil {
				return err
			}
			if sess.StartedBy == user && sess.State.Active() {
				n++
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: active sessions by %s: %w", user, err)
	}
	return n, nil
}

// QueuedInputs counts the keys of the session's inbox bucket.
func (s *Store) QueuedInputs(ctx context.Context, sessionID string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		inbox := tx.Bucket(bktInbox).Bucket([]byte(sessionID))
		if inbox == nil {
			return nil
		}
		c := inbox.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: queued inputs of %s: %w", sessionID, err)
	}
	return n, nil
}

// ReadySessions counts the keys of the ready queue, which holds each ready
// session once.
func (s *Store) ReadySessions(ctx context.Context) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bktReady).Stats().KeyN
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: ready sessions: %w", err)
	}
	return n, nil
}

// CountPendingUnder counts the pending index's entries whose session id
// starts with prefix; like CountPending, it reads no request.
func (s *Store) CountPendingUnder(ctx context.Context, prefix string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktPending).ForEach(func(_, v []byte) error {
			if strings.HasPrefix(string(v), prefix) {
				n++
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: count pending under %q: %w", prefix, err)
	}
	return n, nil
}

// SessionsUpdatedSince scans every session, as ActiveSessionsBy does.
func (s *Store) SessionsUpdatedSince(ctx context.Context, starter string, since time.Time) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktSessions).ForEach(func(_, v []byte) error {
			var sess struct {
				StartedBy string    `json:"started_by"`
				UpdatedAt time.Time `json:"updated_at"`
			}
			if err := jsonUnmarshal(v, &sess); err != nil {
				return err
			}
			if sess.StartedBy == starter && !sess.UpdatedAt.Before(since) {
				n++
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: sessions of %s updated since %s: %w", starter, since.Format(time.RFC3339), err)
	}
	return n, nil
}
