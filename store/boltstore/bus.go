package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// delivery is an event handed to a consumer of a group and not acknowledged
// yet. Holder is the token of the Consume call handling it; "" means nobody
// holds it and it may be delivered again from RetryAt on. A holder that is
// not live in this process (it returned, or belonged to an earlier open of
// the file) counts as nobody.
type delivery struct {
	Holder     string `json:"holder,omitempty"`
	Deliveries int    `json:"deliveries"`
	RetryAt    int64  `json:"retry_at,omitempty"` // unix nanoseconds
}

// Publish appends e to the event log.
func (s *Store) Publish(ctx context.Context, e store.Event) (string, error) {
	if err := e.Validate(); err != nil {
		return "", fmt.Errorf("boltstore: publish %s: %w", e.Type, err)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	var id string
	err := s.db.Update(func(tx *bolt.Tx) (err error) {
		id, err = appendEvent(tx, e)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("boltstore: publish %s: %w", e.Type, err)
	}
	s.events.broadcast()
	return id, nil
}

// Consume hands events to fn one at a time. Each turn it first looks for a
// delivery nobody holds (a failed one whose delay has passed, or one left by
// a consumer that is gone), oldest first, and otherwise moves the group's
// cursor to the next event of the log.
func (s *Store) Consume(ctx context.Context, group, consumer string, fn func(context.Context, store.Event) error) error {
	if group == "" || consumer == "" {
		return fmt.Errorf("boltstore: consume: %w: empty group or consumer", store.ErrInvalid)
	}
	if err := s.createGroup(group); err != nil {
		return fmt.Errorf("boltstore: consume %s: %w", group, err)
	}
	token := fmt.Sprintf("%s@%s#%d", consumer, s.boot, s.tokens.Add(1))
	s.setLive(token, true)
	defer func() {
		s.setLive(token, false)
		// Whatever this consumer held is free now: wake the others.
		s.events.broadcast()
	}()

	for ctx.Err() == nil {
		wake := s.events.ch()
		seq, e, retryIn, err := s.take(group, token)
		if errors.Is(err, errNothing) {
			var timer <-chan time.Time
			var t *time.Timer
			if retryIn > 0 {
				t = time.NewTimer(retryIn)
				timer = t.C
			}
			err := s.wait(ctx, wake, timer)
			if t != nil {
				t.Stop()
			}
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("boltstore: consume %s: %w", group, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("boltstore: consume %s: %w", group, err)
		}
		ferr := fn(ctx, e)
		if err := s.settle(group, token, seq, ferr, ctx.Err() != nil); err != nil {
			return fmt.Errorf("boltstore: consume %s: event %s: %w", group, e.ID, err)
		}
	}
	return nil
}

func (s *Store) setLive(token string, live bool) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if live {
		s.live[token] = struct{}{}
	} else {
		delete(s.live, token)
	}
}

func (s *Store) isLive(token string) bool {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	_, ok := s.live[token]
	return ok
}

// createGroup starts a new group at the oldest event still in the log (its
// cursor just before it); an existing group keeps its cursor.
func (s *Store) createGroup(group string) error {
	exists := false
	if err := s.db.View(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bktGroups).Bucket([]byte(group)) != nil
		return nil
	}); err != nil || exists {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		groups := tx.Bucket(bktGroups)
		if groups.Bucket([]byte(group)) != nil {
			return nil
		}
		g, err := groups.CreateBucket([]byte(group))
		if err != nil {
			return err
		}
		if _, err := g.CreateBucket(keyPending); err != nil {
			return err
		}
		events := tx.Bucket(bktEvents)
		cursor := events.Sequence()
		if k, _ := events.Cursor().First(); k != nil {
			cursor = binary.BigEndian.Uint64(k) - 1
		}
		return g.Put(keyCursor, be64(cursor))
	})
}

// take picks the next delivery for token and marks it held. With nothing to
// deliver it returns errNothing and, when a failed delivery is waiting out its
// delay, how long until it is due.
func (s *Store) take(group, token string) (seq uint64, e store.Event, retryIn time.Duration, err error) {
	now := time.Now()
	idle := false
	err = s.db.Update(func(tx *bolt.Tx) error {
		g := tx.Bucket(bktGroups).Bucket([]byte(group))
		if g == nil {
			return fmt.Errorf("group %s vanished", group)
		}
		pending := g.Bucket(keyPending)
		events := tx.Bucket(bktEvents)
		var d delivery
		var gone [][]byte // deliveries whose event the log's cap dropped
		c := pending.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if events.Get(k) == nil {
				gone = append(gone, bytes.Clone(k))
				continue
			}
			var cand delivery
			if err := jsonUnmarshal(v, &cand); err != nil {
				return err
			}
			if cand.Holder != "" && s.isLive(cand.Holder) {
				continue
			}
			if cand.RetryAt > now.UnixNano() {
				if wait := time.Duration(cand.RetryAt - now.UnixNano()); retryIn == 0 || wait < retryIn {
					retryIn = wait
				}
				continue
			}
			seq, d = binary.BigEndian.Uint64(k), cand
			break
		}
		for _, k := range gone {
			if err := pending.Delete(k); err != nil {
				return err
			}
		}
		if seq == 0 {
			cursor := binary.BigEndian.Uint64(g.Get(keyCursor))
			k, _ := events.Cursor().Seek(be64(cursor + 1))
			if k == nil {
				if len(gone) == 0 {
					return errNothing
				}
				idle = true // but keep the deletions
				return nil
			}
			seq = binary.BigEndian.Uint64(k)
			if err := g.Put(keyCursor, be64(seq)); err != nil {
				return err
			}
		}
		found, err := getJSON(events, be64(seq), &e)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("event %d missing from the log", seq)
		}
		d.Holder, d.Deliveries, d.RetryAt = token, d.Deliveries+1, 0
		return putJSON(pending, be64(seq), d)
	})
	if err == nil && idle {
		err = errNothing
	}
	return seq, e, retryIn, err
}

// settle records how fn did: nil acknowledges; an error frees the delivery
// for a retry after store.RedeliveryDelay (counted from now, when fn has
// returned), or drops it after store.MaxDeliveries;
// a cancelled consumer frees it at once, for another consumer to take.
func (s *Store) settle(group, token string, seq uint64, ferr error, cancelled bool) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		pending := tx.Bucket(bktGroups).Bucket([]byte(group)).Bucket(keyPending)
		var d delivery
		found, err := getJSON(pending, be64(seq), &d)
		if err != nil {
			return err
		}
		if !found || d.Holder != token {
			return errNothing // not ours any more
		}
		switch {
		case ferr == nil, !cancelled && d.Deliveries >= store.MaxDeliveries:
			return pending.Delete(be64(seq))
		case cancelled:
			d.Holder, d.RetryAt = "", 0
		default:
			d.Holder, d.RetryAt = "", time.Now().Add(store.RedeliveryDelay(s.opts.redeliveryDelay, d.Deliveries)).UnixNano()
		}
		return putJSON(pending, be64(seq), d)
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	if err != nil {
		return err
	}
	if ferr != nil {
		s.events.broadcast()
	}
	return nil
}
