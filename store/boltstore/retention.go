package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/slackgate/slackgate/store"
)

// Retention (see store.Store): settled requests and sessions at rest are
// scheduled to expire in an expiry index when a write leaves them so, and
// Sweep deletes what is due. The audit log is trimmed by time through marks
// that Sweep records: a mark (T, n) says every audit entry up to sequence n
// was appended by time T, so once T is older than the audit retention those
// entries may go, up to the newest checkpoint among them (store's "Audit
// chain").
//
//	expiry      be64(due, unix ns) ‖ kind ‖ id → ""; soonest first
//	expiryof    kind ‖ id → be64(due); the entry of a record, to move or drop it
//	auditmarks  be64(T, unix ns) → be64(last audit sequence at T)
var (
	bktExpiry     = []byte("expiry")
	bktExpiryOf   = []byte("expiryof")
	bktAuditMarks = []byte("auditmarks")
)

// Kinds of records in the expiry index.
const (
	expRequest byte = 'r'
	expSession byte = 's'
)

// sweepBatch bounds what one sweep transaction deletes, so a sweep never
// holds the writer for long; Sweep runs batches until nothing is due.
const sweepBatch = 256

// auditMarksPerRetention is how finely the audit log is trimmed: an entry
// goes at most about 1/auditMarksPerRetention of the audit retention (plus
// a sweep interval) after it is due, and the marks stay this few.
const auditMarksPerRetention = 1000

// DefaultSweepEvery is how often an open store sweeps unless WithSweepEvery
// says otherwise.
const DefaultSweepEvery = time.Minute

// WithRetention sets how long settled requests and sessions at rest stay
// (default store.DefaultRetention); 0 keeps them forever.
func WithRetention(d time.Duration) Option { return func(o *options) { o.retention = d } }

// WithAuditRetention sets how long audit entries stay (default
// store.DefaultAuditRetention); 0 keeps them forever.
func WithAuditRetention(d time.Duration) Option { return func(o *options) { o.auditRetention = d } }

// WithClock sets the clock retention, dedup expiry and heartbeats are
// measured with (default store.WallClock), so tests can let time pass
// without waiting.
func WithClock(c store.Clock) Option { return func(o *options) { o.clock = c } }

// WithSweepEvery sets how often the store sweeps expired records on its own
// (default DefaultSweepEvery); 0 never does, leaving it to Sweep.
func WithSweepEvery(d time.Duration) Option { return func(o *options) { o.sweepEvery = d } }

// sweeper sweeps every sweepEvery until Close. A failed sweep is not
// reported: it leaves records for the next one, and the same file error
// reaches the next call that writes.
func (s *Store) sweeper() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			_ = s.Sweep(context.Background())
		}
	}
}

// Sweep deletes every record whose retention has passed by the store's
// clock: settled requests, sessions at rest with their thread index entry
// and inbox, dedup keys and audit entries. It works in bounded batches, one
// transaction each, so other writers interleave.
func (s *Store) Sweep(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("boltstore: sweep: %w", err)
		}
		select {
		case <-s.done: // Close waits for the sweeper: stop between batches
			return ErrClosed
		default:
		}
		n := 0
		err := s.db.Update(func(tx *bolt.Tx) (err error) {
			n, err = s.sweepBatch(tx, s.opts.clock.Now())
			return err
		})
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
			return ErrClosed
		}
		if err != nil {
			return fmt.Errorf("boltstore: sweep: %w", err)
		}
		if n < sweepBatch {
			return nil
		}
	}
}

// sweepBatch deletes up to sweepBatch due records and reports how many.
func (s *Store) sweepBatch(tx *bolt.Tx, now time.Time) (int, error) {
	n, err := s.expireDue(tx, now, sweepBatch)
	if err != nil {
		return n, err
	}
	m, err := sweepDedup(tx.Bucket(bktDedup), tx.Bucket(bktDedupExpiry), now.UnixNano(), sweepBatch-n)
	if err != nil {
		return n, err
	}
	n += m
	m, err = s.trimAudit(tx, now, sweepBatch-n)
	return n + m, err
}

// expireDue handles up to limit due entries of the expiry index.
func (s *Store) expireDue(tx *bolt.Tx, now time.Time, limit int) (int, error) {
	var due [][]byte
	c := tx.Bucket(bktExpiry).Cursor()
	for k, _ := c.First(); k != nil && len(due) < limit; k, _ = c.Next() {
		if int64(binary.BigEndian.Uint64(k[:8])) > now.UnixNano() {
			break
		}
		due = append(due, bytes.Clone(k))
	}
	for _, k := range due {
		kind, id := k[8], string(k[9:])
		if err := unschedule(tx, kind, id); err != nil {
			return 0, err
		}
		var err error
		switch kind {
		case expRequest:
			err = expireRequest(tx, id)
		case expSession:
			err = s.expireSession(tx, id, now)
		}
		if err != nil {
			return 0, fmt.Errorf("expire %c %s: %w", kind, id, err)
		}
	}
	return len(due), nil
}

// expireRequest deletes a settled request; a pending one (which is never
// scheduled) stays.
func expireRequest(tx *bolt.Tx, id string) error {
	r, err := getRequest(tx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.Pending()) {
		return nil
	}
	if err != nil {
		return err
	}
	return tx.Bucket(bktRequests).Delete([]byte(id))
}

// expireSession deletes a session still at rest, with its thread entry,
// inbox and transcript. One that was taken up again in a way its writes did
// not reschedule (it cannot happen through the Store's methods) is looked
// at afresh.
func (s *Store) expireSession(tx *bolt.Tx, id string, now time.Time) error {
	sess, err := getSession(tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !atRest(tx, sess) {
		return s.retainSession(tx, id, now)
	}
	if threads := tx.Bucket(bktThreads); !sess.Thread.IsZero() && string(threads.Get(threadKey(sess.Thread))) == id {
		if err := threads.Delete(threadKey(sess.Thread)); err != nil {
			return err
		}
	}
	if tx.Bucket(bktInbox).Bucket([]byte(id)) != nil {
		if err := tx.Bucket(bktInbox).DeleteBucket([]byte(id)); err != nil {
			return err
		}
	}
	if err := tx.Bucket(bktTranscripts).Delete([]byte(id)); err != nil {
		return err
	}
	return tx.Bucket(bktSessions).Delete([]byte(id))
}

// atRest reports whether sess may expire: idle or failed, not owned or
// ready, no input queued, no request pending.
func atRest(tx *bolt.Tx, sess store.Session) bool {
	if !sess.State.AtRest() || tx.Bucket(bktQState).Get([]byte(sess.ID)) != nil || !inboxEmpty(tx, sess.ID) {
		return false
	}
	// Pending requests are few (each waits for a person).
	c := tx.Bucket(bktPending).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if string(v) == sess.ID {
			return false
		}
	}
	return true
}

// retainSession schedules the session to expire a retention from now when
// it is at rest, and holds it otherwise. Every write that may change
// whether a session is at rest calls it in its transaction.
func (s *Store) retainSession(tx *bolt.Tx, id string, now time.Time) error {
	sess, err := getSession(tx, id)
	if errors.Is(err, store.ErrNotFound) {
		return unschedule(tx, expSession, id)
	}
	if err != nil {
		return err
	}
	if s.opts.retention <= 0 || !atRest(tx, sess) {
		return unschedule(tx, expSession, id)
	}
	return schedule(tx, expSession, id, now.Add(s.opts.retention))
}

// retainRequest schedules a settled request to expire a retention from now.
func (s *Store) retainRequest(tx *bolt.Tx, id string, now time.Time) error {
	if s.opts.retention <= 0 {
		return nil
	}
	return schedule(tx, expRequest, id, now.Add(s.opts.retention))
}

func expiryOfKey(kind byte, id string) []byte { return append([]byte{kind}, id...) }

// schedule sets when a record expires, replacing an earlier schedule.
func schedule(tx *bolt.Tx, kind byte, id string, due time.Time) error {
	if err := unschedule(tx, kind, id); err != nil {
		return err
	}
	at := be64(uint64(due.UnixNano()))
	k := append(append(bytes.Clone(at), kind), id...)
	if err := tx.Bucket(bktExpiry).Put(k, nil); err != nil {
		return err
	}
	return tx.Bucket(bktExpiryOf).Put(expiryOfKey(kind, id), at)
}

// unschedule drops a record's expiry, if it has one.
func unschedule(tx *bolt.Tx, kind byte, id string) error {
	of := tx.Bucket(bktExpiryOf)
	at := of.Get(expiryOfKey(kind, id))
	if at == nil {
		return nil
	}
	k := append(append(bytes.Clone(at), kind), id...)
	if err := tx.Bucket(bktExpiry).Delete(k); err != nil {
		return err
	}
	return of.Delete(expiryOfKey(kind, id))
}

// trimAudit records a mark when the last one is old enough, then deletes up
// to limit audit entries covered by marks older than the audit retention,
// cutting only at a checkpoint (auditCut) and keeping that checkpoint.
func (s *Store) trimAudit(tx *bolt.Tx, now time.Time, limit int) (int, error) {
	if s.opts.auditRetention <= 0 || limit <= 0 {
		return 0, nil
	}
	marks, audit := tx.Bucket(bktAuditMarks), tx.Bucket(bktAudit)
	step := max(s.opts.auditRetention/auditMarksPerRetention, 1)
	if k, _ := marks.Cursor().Last(); k == nil || now.UnixNano()-int64(binary.BigEndian.Uint64(k)) >= int64(step) {
		if err := marks.Put(be64(uint64(now.UnixNano())), be64(audit.Sequence())); err != nil {
			return 0, err
		}
	}
	cutoff := now.Add(-s.opts.auditRetention).UnixNano()
	var upTo uint64
	var due [][]byte
	mc := marks.Cursor()
	for k, v := mc.First(); k != nil && int64(binary.BigEndian.Uint64(k)) <= cutoff; k, v = mc.Next() {
		upTo, due = binary.BigEndian.Uint64(v), append(due, bytes.Clone(k))
	}
	// The newest due mark says all the older ones do; it stays until a
	// checkpoint lets the log be cut that far.
	for _, m := range due[:max(len(due)-1, 0)] {
		if err := marks.Delete(m); err != nil {
			return 0, err
		}
	}
	cut, anchor, err := auditCut(tx, upTo)
	if err != nil || cut == 0 {
		return 0, err
	}
	n := 0
	c := audit.Cursor()
	k, _ := c.First()
	for ; k != nil && binary.BigEndian.Uint64(k) <= cut && n < limit; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	if k != nil && binary.BigEndian.Uint64(k) <= cut {
		return n, nil // more next batch
	}
	return n, dropCheckpointsBefore(tx, anchor)
}

// retainSettled schedules a request Decide just settled, and its session,
// which may have waited only for it to come to rest.
func (s *Store) retainSettled(tx *bolt.Tx, r store.Request) error {
	now := s.opts.clock.Now()
	if err := s.retainRequest(tx, r.ID, now); err != nil {
		return err
	}
	return s.retainSession(tx, r.SessionID, now)
}

// disown drops sessionID from the worker's owned set, and the set once it
// is empty, so worker names that come and go (a pod's host name) leave
// nothing behind.
func disown(tx *bolt.Tx, worker, sessionID string) error {
	owned := tx.Bucket(bktOwned).Bucket([]byte(worker))
	if owned == nil {
		return nil
	}
	if err := owned.Delete([]byte(sessionID)); err != nil {
		return err
	}
	if k, _ := owned.Cursor().First(); k != nil {
		return nil
	}
	return tx.Bucket(bktOwned).DeleteBucket([]byte(worker))
}
