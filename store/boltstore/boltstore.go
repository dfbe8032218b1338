package boltstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/slackgate/slackgate/store"
)

var _ store.Store = (*Store)(nil)

// ErrClosed is returned by calls blocked in (or made after) Close.
var ErrClosed = fmt.Errorf("boltstore: %w", store.ErrClosed)

// errNothing rolls back a write transaction that found nothing to do, so an
// idle wake-up costs no fsync.
var errNothing = errors.New("boltstore: nothing to do")

// The file's layout. Every sequence-ordered key is a big-endian uint64 so
// bbolt's byte order is numeric order.
//
//	requests  request id → Request (JSON)
//	pending   be64(CreatedAt+2^63) ‖ request id → session id; undecided requests, oldest first
//	sessions  session id → Session (JSON)
//	threads   channel ‖ 0x00 ‖ thread ts → session id
//	qstate    session id → queueState (JSON): owner and place in the ready queue
//	ready     be64(seq) → session id; sessions with input and no owner, FIFO
//	inbox     session id → bucket{ be64(seq) → Input (JSON) }; the bucket's sequence numbers every input
//	owned     worker → bucket{ session id → "" }
//	events    be64(seq) → Event (JSON); the event log
//	groups    group → bucket{ "cursor" → be64(last event handed out), "pending" → bucket{ be64(event seq) → delivery (JSON) } }
//	audit     be64(seq) → AuditEntry (JSON), with its chain fields
//	auditchain, auditcps: the audit chain's head and checkpoints (auditchain.go)
//	dedup     key → be64(expiry, unix nanoseconds); keys FirstSeen remembers
//	dedupexp  be64(expiry) ‖ key → ""; the same keys, soonest expiry first, for the sweep
//	expiry, expiryof, auditmarks: retention (retention.go)
//	heartbeats: liveness (workers.go)
//	transcripts  session id → the session's transcript as the worker saved it (transcripts.go)
//	grants, answers, answeridx: standing rules (standing.go)
//	auditsinks   sink name → its claim and cursor (auditsink.go)
var (
	bktRequests    = []byte("requests")
	bktPending     = []byte("pending")
	bktSessions    = []byte("sessions")
	bktThreads     = []byte("threads")
	bktQState      = []byte("qstate")
	bktReady       = []byte("ready")
	bktInbox       = []byte("inbox")
	bktOwned       = []byte("owned")
	bktEvents      = []byte("events")
	bktGroups      = []byte("groups")
	bktAudit       = []byte("audit")
	bktDedup       = []byte("dedup")
	bktDedupExpiry = []byte("dedupexp")

	keyCursor  = []byte("cursor")
	keyPending = []byte("pending")
)

// Store is the bbolt backend. It is safe for concurrent use within one
// process; the file lock keeps a second process out.
type Store struct {
	db   *bolt.DB
	path string
	opts options

	// Wake-ups: a commit that may unblock someone broadcasts on the matching
	// signal; blocked calls take the signal's channel before they look at the
	// data, so no commit between the look and the wait is missed.
	requests signal
	queue    signal
	events   signal

	// boot makes consumer tokens unique across opens of the file, so a
	// delivery held by a consumer of an earlier life is never mistaken for a
	// live one.
	boot      string
	tokens    atomic.Uint64
	liveMu    sync.Mutex
	live      map[string]struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // the sweeper
}

type options struct {
	lockTimeout     time.Duration
	noSync          bool
	redeliveryDelay time.Duration
	retention       time.Duration
	auditRetention  time.Duration
	clock           store.Clock
	sweepEvery      time.Duration
}

// Option configures Open.
type Option func(*options)

// WithLockTimeout bounds how long Open waits for another process to release
// the file (default 1s).
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.lockTimeout = d } }

// WithNoSync skips fsync on commit. A crash of the machine (not of the
// process) may then lose the last commits or corrupt the file: only for
// tests and throwaway data.
func WithNoSync() Option { return func(o *options) { o.noSync = true } }

// WithRedeliveryDelay sets the base of store.RedeliveryDelay: the wait before
// an event whose handler failed is delivered again, doubling with every
// failure (default store.DefaultRedeliveryDelay).
func WithRedeliveryDelay(d time.Duration) Option { return func(o *options) { o.redeliveryDelay = d } }

// Open opens (creating it and its directory if needed) the store file at path.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{
		lockTimeout: time.Second, redeliveryDelay: store.DefaultRedeliveryDelay, clock: store.WallClock{},
		retention: store.DefaultRetention, auditRetention: store.DefaultAuditRetention, sweepEvery: DefaultSweepEvery,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if err := privateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: o.lockTimeout,
		NoSync:  o.noSync,
		// Not writing the freelist makes each commit write less (the
		// round trip's p50 roughly halves here); Open rebuilds it by
		// scanning the file instead, which is quick at this store's size.
		// Durability is unchanged: it is derived data. etcd runs this way.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("boltstore: open %s: file is locked (another slackgate already using %s?): %w", path, path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	if err := privateFile(path); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bktRequests, bktPending, bktSessions, bktThreads, bktQState, bktReady, bktInbox, bktOwned, bktEvents, bktGroups, bktAudit, bktDedup, bktDedupExpiry, bktExpiry, bktExpiryOf, bktAuditMarks, bktHeartbeats, bktTranscripts, bktAnswers, bktAnswerIndex, bktGrants, bktTombstones, bktAuditChain, bktAuditCheckpoints, bktAuditSinks} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: create buckets: %w", path, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	s := &Store{
		db:   db,
		path: path,
		opts: o,
		boot: hex.EncodeToString(b[:]),
		live: map[string]struct{}{},
		done: make(chan struct{}),
	}
	if o.sweepEvery > 0 {
		s.wg.Add(1)
		go s.sweeper()
	}
	return s, nil
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.path }

// Close wakes every blocked call (they return ErrClosed), stops the
// sweeper, then waits for running transactions and closes the file. A second Close returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.wg.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore: close: %w", err)
	}
	return nil
}

// wait blocks until wake fires (something changed), timer fires, ctx ends
// (ctx.Err()) or the store closes (ErrClosed).
func (s *Store) wait(ctx context.Context, wake <-chan struct{}, timer <-chan time.Time) error {
	select {
	case <-wake:
		return nil
	case <-timer:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		return ErrClosed
	}
}

// signal is a broadcast: every channel handed out by ch is closed by the next
// broadcast.
type signal struct {
	mu   sync.Mutex
	next chan struct{}
}

func (g *signal) ch() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next == nil {
		g.next = make(chan struct{})
	}
	return g.next
}

func (g *signal) broadcast() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.next != nil {
		close(g.next)
		g.next = nil
	}
}

func be64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

// seqID renders a sequence number as a fixed-width id, so ids sort as numbers.
func seqID(n uint64) string { return fmt.Sprintf("%020d", n) }

func parseSeqID(id string) (uint64, error) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: id %q", store.ErrInvalid, id)
	}
	return n, nil
}

// trimEvery is how many events are appended between two trims of the log.
var trimEvery uint64 = 1024

// maxEvents caps the event log, like the Redis backend's MAXLEN: a trim
// keeps at most this many events even when a group has not reached them,
// so a group that lags, or never comes, cannot grow the file forever.
var maxEvents uint64 = 100_000

// appendEvent adds e to the log inside tx and returns its id. Every
// trimEvery events it also drops the events no group can still deliver, so
// the log does not grow forever.
func appendEvent(tx *bolt.Tx, e store.Event) (string, error) {
	b := tx.Bucket(bktEvents)
	n, err := b.NextSequence()
	if err != nil {
		return "", err
	}
	e.ID = seqID(n)
	if err := putJSON(b, be64(n), e); err != nil {
		return "", err
	}
	if n%trimEvery == 0 {
		if err := trimEvents(tx); err != nil {
			return "", fmt.Errorf("trim events: %w", err)
		}
	}
	return e.ID, nil
}

// trimEvents deletes the events no group needs any more: those below every
// group's cursor that no group holds as an unacknowledged delivery. While no
// group exists it keeps them all, since the first group starts at the oldest
// event. Either way at most maxEvents stay.
func trimEvents(tx *bolt.Tx) error {
	events := tx.Bucket(bktEvents)
	last := events.Sequence()
	keep := last // the newest event stays, for whoever inspects the file
	groups := 0
	err := tx.Bucket(bktGroups).ForEachBucket(func(name []byte) error {
		groups++
		g := tx.Bucket(bktGroups).Bucket(name)
		if c := g.Get(keyCursor); c != nil {
			keep = min(keep, binary.BigEndian.Uint64(c)+1)
		}
		if k, _ := g.Bucket(keyPending).Cursor().First(); k != nil {
			keep = min(keep, binary.BigEndian.Uint64(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if groups == 0 {
		keep = 0
	}
	if last > maxEvents {
		keep = max(keep, last-maxEvents+1)
	}
	c := events.Cursor()
	for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) < keep; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}
