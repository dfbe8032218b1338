package boltstore

import (
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// SetTrimEvery changes how often the event log is trimmed until the returned
// func restores it.
func SetTrimEvery(n uint64) (restore func()) {
	old := trimEvery
	trimEvery = n
	return func() { trimEvery = old }
}

// SetMaxEvents changes the event log's cap until the returned func restores
// it.
func SetMaxEvents(n uint64) (restore func()) {
	old := maxEvents
	maxEvents = n
	return func() { maxEvents = old }
}

// EventIDs lists the ids of the events left in the log.
func (s *Store) EventIDs() ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktEvents).ForEach(func(_, v []byte) error {
			var e struct{ ID string }
			if err := jsonUnmarshal(v, &e); err != nil {
				return err
			}
			ids = append(ids, e.ID)
			return nil
		})
	})
	return ids, err
}

// PendingIDs lists the ids of the events a group has handed out and not had
// acknowledged.
func (s *Store) PendingIDs(group string) ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktGroups).Bucket([]byte(group)).Bucket(keyPending).ForEach(func(k, _ []byte) error {
			ids = append(ids, seqID(binary.BigEndian.Uint64(k)))
			return nil
		})
	})
	return ids, err
}

// Records counts the keys of every bucket except the capped event log, the
// audit log, its marks, head, checkpoints and sinks, and consumer groups; nested buckets (inboxes,
// owned sets) count as one each plus their keys.
func (s *Store) Records() (int, error) {
	skip := map[string]bool{"events": true, "audit": true, "auditmarks": true, "auditchain": true, "auditcps": true, "auditsinks": true, "groups": true}
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if skip[string(name)] {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				n++
				if v == nil {
					n += b.Bucket(k).Stats().KeyN
				}
				return nil
			})
		})
	})
	return n, err
}

// HeartbeatUntil returns when worker's last heartbeat lapses (zero if it
// never beat).
func HeartbeatUntil(s *Store, worker string) (until time.Time, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bktHeartbeats).Get([]byte(worker)); len(v) == 8 {
			until = time.Unix(0, int64(binary.BigEndian.Uint64(v)))
		}
		return nil
	})
	return until, err
}

// WriteApprovals writes a request's approvals straight into its record,
// the way someone who can write the file but holds no bot's key could.
func WriteApprovals(s *Store, id string, as []store.Approval) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRequest(tx, id)
		if err != nil {
			return err
		}
		r.Approvals = as
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
}
