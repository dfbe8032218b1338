package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// pendingKey orders undecided requests by creation time (shifted so times
// before 1970 sort first), then id.
func pendingKey(r store.Request) []byte {
	k := make([]byte, 8, 8+len(r.ID))
	binary.BigEndian.PutUint64(k, uint64(r.CreatedAt.UnixNano())^(1<<63))
	return append(k, r.ID...)
}

func getRequest(tx *bolt.Tx, id string) (store.Request, error) {
	var r store.Request
	found, err := getJSON(tx.Bucket(bktRequests), []byte(id), &r)
	if err != nil {
		return r, err
	}
	if !found {
		return r, store.ErrNotFound
	}
	return r, nil
}

// CreateRequest stores r, its audit entry and EventRequestCreated in one transaction.
func (s *Store) CreateRequest(ctx context.Context, r store.Request) error {
	if err := r.ValidateNew(); err != nil {
		return fmt.Errorf("boltstore: create request %q: %w", r.ID, err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		reqs := tx.Bucket(bktRequests)
		if reqs.Get([]byte(r.ID)) != nil {
			return store.ErrExists
		}
		if err := putJSON(reqs, []byte(r.ID), r); err != nil {
			return err
		}
		if err := tx.Bucket(bktPending).Put(pendingKey(r), []byte(r.SessionID)); err != nil {
			return err
		}
		if err := s.retainSession(tx, r.SessionID, s.opts.clock.Now()); err != nil {
			return err
		}
		if err := appendAudit(tx, store.CreatedAudit(r)); err != nil {
			return err
		}
		_, err := appendEvent(tx, store.CreatedEvent(r))
		return err
	})
	if err != nil {
		return fmt.Errorf("boltstore: create request %s: %w", r.ID, err)
	}
	s.events.broadcast()
	return nil
}

// GetRequest returns the request with id.
func (s *Store) GetRequest(ctx context.Context, id string) (store.Request, error) {
	var r store.Request
	err := s.db.View(func(tx *bolt.Tx) (err error) {
		r, err = getRequest(tx, id)
		return err
	})
	if err != nil {
		return store.Request{}, fmt.Errorf("boltstore: get request %s: %w", id, err)
	}
	return r, nil
}

// ListPending walks the pending index, which is already in creation order.
func (s *Store) ListPending(ctx context.Context, sessionID string) ([]store.Request, error) {
	var out []store.Request
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktPending).ForEach(func(k, v []byte) error {
			if sessionID != "" && string(v) != sessionID {
				return nil
			}
			r, err := getRequest(tx, string(k[8:]))
			if err != nil {
				return fmt.Errorf("pending %s: %w", k[8:], err)
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: list pending %q: %w", sessionID, err)
	}
	return out, nil
}

// CountPending counts the pending index's entries of the session (all of
// them for ""): the index holds exactly the pending requests, so no
// request is read.
func (s *Store) CountPending(ctx context.Context, sessionID string) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bktPending).ForEach(func(_, v []byte) error {
			if sessionID == "" || string(v) == sessionID {
				n++
			}
			return nil
		})
	})
	if err != nil {
		return 0, fmt.Errorf("boltstore: count pending %q: %w", sessionID, err)
	}
	return n, nil
}

// Decide settles the request, appends its audit entry and publishes
// EventRequestSettled in one transaction; bbolt's single writer makes the
// first Decide the only one.
func (s *Store) Decide(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	if err := d.Validate(); err != nil {
		return store.Request{}, fmt.Errorf("boltstore: decide %s: %w", id, err)
	}
	var r store.Request
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		r, err = getRequest(tx, id)
		if err != nil {
			return err
		}
		if r.Decision != nil {
			return store.ErrAlreadyDecided
		}
		r.Decision = &d
		if err := putJSON(tx.Bucket(bktRequests), []byte(id), r); err != nil {
			return err
		}
		if err := tx.Bucket(bktPending).Delete(pendingKey(r)); err != nil {
			return err
		}
		if err := s.retainSettled(tx, r); err != nil {
			return err
		}
		if err := appendAudit(tx, store.SettledAudit(r, d)); err != nil {
			return err
		}
		_, err = appendEvent(tx, store.SettledEvent(r, d))
		return err
	})
	if errors.Is(err, store.ErrAlreadyDecided) {
		return r, fmt.Errorf("boltstore: decide %s: %w", id, err)
	}
	if err != nil {
		return store.Request{}, fmt.Errorf("boltstore: decide %s: %w", id, err)
	}
	s.requests.broadcast()
	s.events.broadcast()
	return r, nil
}

// Refuse replaces a settled request's decision with the refusal d, appends
// its audit entry and publishes EventRequestSettled in one transaction.
func (s *Store) Refuse(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	if err := d.ValidateRefusal(); err != nil {
		return store.Request{}, fmt.Errorf("boltstore: refuse %s: %w", id, err)
	}
	var r store.Request
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		r, err = getRequest(tx, id)
		if err != nil {
			return err
		}
		if err := r.CanRefuse(); err != nil {
			return err
		}
		claimed := *r.Decision
		r.Decision = &d
		if err := putJSON(tx.Bucket(bktRequests), []byte(id), r); err != nil {
			return err
		}
		if err := appendAudit(tx, store.RefusedAudit(r, claimed, d)); err != nil {
			return err
		}
		_, err = appendEvent(tx, store.SettledEvent(r, d))
		return err
	})
	if err != nil {
		return store.Request{}, fmt.Errorf("boltstore: refuse %s: %w", id, err)
	}
	s.events.broadcast()
	return r, nil
}

// WaitDecision looks at the request, and while it is pending waits for the
// next decision made in this process.
func (s *Store) WaitDecision(ctx context.Context, id string) (store.Decision, error) {
	for {
		if err := ctx.Err(); err != nil {
			return store.Decision{}, fmt.Errorf("boltstore: wait decision %s: %w", id, err)
		}
		wake := s.requests.ch()
		r, err := s.GetRequest(ctx, id)
		if err != nil {
			return store.Decision{}, err
		}
		if r.Decision != nil {
			return *r.Decision, nil
		}
		if err := s.wait(ctx, wake, nil); err != nil {
			return store.Decision{}, fmt.Errorf("boltstore: wait decision %s: %w", id, err)
		}
	}
}

// SetCard records where the request's card was posted, and whether it is
// pending, in one transaction.
func (s *Store) SetCard(ctx context.Context, id string, card store.MessageRef) (pending bool, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRequest(tx, id)
		if err != nil {
			return err
		}
		r.Card, pending = card, r.Pending()
		return putJSON(tx.Bucket(bktRequests), []byte(id), r)
	})
	if err != nil {
		return false, fmt.Errorf("boltstore: set card %s: %w", id, err)
	}
	return pending, nil
}

// AppendAudit appends an entry of its own (AuditToolRan).
func (s *Store) AppendAudit(ctx context.Context, a store.AuditEntry) error {
	if a.At.IsZero() {
		a.At = s.opts.clock.Now()
	}
	if err := a.ValidateAppend(); err != nil {
		return fmt.Errorf("boltstore: append audit: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("boltstore: append audit: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error { return appendAudit(tx, a) })
	if err != nil {
		return fmt.Errorf("boltstore: append audit: %w", err)
	}
	return nil
}

// AuditLog reads the audit bucket from the entry after `after`.
func (s *Store) AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error) {
	var from uint64 = 1
	if after != "" {
		n, err := parseSeqID(after)
		if err != nil {
			return nil, fmt.Errorf("boltstore: audit log: %w", err)
		}
		from = n + 1
	}
	var out []store.AuditEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bktAudit).Cursor()
		for k, v := c.Seek(be64(from)); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var a store.AuditEntry
			if err := jsonUnmarshal(v, &a); err != nil {
				return err
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: audit log: %w", err)
	}
	return out, nil
}
