package boltstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// bktAuditSinks maps a sink's name to its sinkRecord (JSON): the claim and
// the cursor change together, in one transaction, so a cursor is written
// only under a live claim.
var bktAuditSinks = []byte("auditsinks")

// sinkRecord is one sink's claim and cursor.
type sinkRecord struct {
	Holder  string            `json:"holder,omitempty"`
	Until   int64             `json:"until,omitempty"` // unix nanoseconds by the store's clock
	Cursor  store.AuditCursor `json:"cursor"`
	Started bool              `json:"started,omitempty"`
}

// live reports whether the claim has not lapsed at now.
func (r sinkRecord) live(now time.Time) bool { return r.Holder != "" && r.Until > now.UnixNano() }

// ClaimAuditSink implements store.AuditSinks.
func (s *Store) ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error) {
	if err := store.ValidateAuditSinkClaim(sink, holder, ttl); err != nil {
		return store.AuditSink{}, fmt.Errorf("boltstore: claim audit sink: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return store.AuditSink{}, fmt.Errorf("boltstore: claim audit sink %s: %w", sink, err)
	}
	var rec sinkRecord
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktAuditSinks)
		if _, err := getJSON(b, []byte(sink), &rec); err != nil {
			return err
		}
		now := s.opts.clock.Now()
		if rec.live(now) && rec.Holder != holder {
			return errNothing
		}
		rec.Holder, rec.Until = holder, now.Add(ttl).UnixNano()
		return putJSON(b, []byte(sink), rec)
	})
	if err != nil && !errors.Is(err, errNothing) {
		return store.AuditSink{}, fmt.Errorf("boltstore: claim audit sink %s: %w", sink, err)
	}
	return store.AuditSink{Holder: rec.Holder, Cursor: rec.Cursor, Started: rec.Started}, nil
}

// AdvanceAuditSink implements store.AuditSinks.
func (s *Store) AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error {
	err := store.ValidateAuditSinkClaim(sink, holder, 1)
	if err == nil {
		err = cur.Validate()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("boltstore: advance audit sink %s: %w", sink, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktAuditSinks)
		var rec sinkRecord
		if _, err := getJSON(b, []byte(sink), &rec); err != nil {
			return err
		}
		if !rec.live(s.opts.clock.Now()) || rec.Holder != holder {
			return fmt.Errorf("%s does not hold it: %w", holder, store.ErrNotOwner)
		}
		rec.Cursor, rec.Started = cur, true
		return putJSON(b, []byte(sink), rec)
	})
	if err != nil {
		return fmt.Errorf("boltstore: advance audit sink %s: %w", sink, err)
	}
	return nil
}

// ReleaseAuditSink implements store.AuditSinks.
func (s *Store) ReleaseAuditSink(ctx context.Context, sink, holder string) error {
	if err := store.ValidateAuditSinkClaim(sink, holder, 1); err != nil {
		return fmt.Errorf("boltstore: release audit sink: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: release audit sink %s: %w", sink, err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bktAuditSinks)
		var rec sinkRecord
		if _, err := getJSON(b, []byte(sink), &rec); err != nil {
			return err
		}
		if rec.Holder != holder {
			return errNothing
		}
		rec.Holder, rec.Until = "", 0
		return putJSON(b, []byte(sink), rec)
	})
	if err != nil && !errors.Is(err, errNothing) {
		return fmt.Errorf("boltstore: release audit sink %s: %w", sink, err)
	}
	return nil
}
