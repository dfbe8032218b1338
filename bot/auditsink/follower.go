package auditsink

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// Defaults of a Follower.
const (
	// DefaultEvery is how often a Follower looks at the log when it has
	// nothing to deliver, and at a claim another replica holds.
	DefaultEvery = time.Second
	// DefaultClaimTTL is how long a claim stands unless renewed: how long
	// a crashed holder's sink waits before another replica takes it over.
	DefaultClaimTTL = 15 * time.Second
	// page is how many entries one read of the log returns.
	page = 100
	// maxIdle bounds the wait after a look that failed (the store down).
	maxIdle = 30 * time.Second
	// finishTimeout bounds a cursor write or release made after Run's
	// context ended: what the sink accepted must still be recorded.
	finishTimeout = 5 * time.Second
)

// ErrClaimLost is returned by a Sink's keep when this replica no longer
// holds the sink's claim (it lapsed and another took it): the Sink stops
// delivering and returns it.
var ErrClaimLost = errors.New("auditsink: the sink's claim is held by another replica now")

// Store is what a Follower needs of the store.
type Store interface {
	ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error)
	AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error
	ReleaseAuditSink(ctx context.Context, sink, holder string) error
	AuditHead(ctx context.Context) (store.AuditLink, error)
	AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error)
	LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error)
	AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error)
}

// Sink is where a Follower delivers the log.
type Sink interface {
	// Begin is called each time this replica becomes the sink's holder,
	// with the sink's record, and returns the cursor to deliver after. A
	// sink never started chooses where it starts (s.Started is false);
	// one that was looks for what it may have delivered after s.Cursor
	// without the cursor moving (a holder that died between the two).
	Begin(ctx context.Context, s store.AuditSink) (store.AuditCursor, error)
	// Deliver delivers the first entries of page, in order, and returns
	// how many it took (at least one) and the note to keep with the
	// cursor. Before each retry it calls keep, which renews the claim and
	// fails with ErrClaimLost once another replica holds it; Deliver then
	// returns that error.
	Deliver(ctx context.Context, page []store.AuditEntry, keep func(context.Context) error) (n int, note string, err error)
	// Seal delivers checkpoint cp, as Deliver an entry, and returns the
	// note to keep with the cursor.
	Seal(ctx context.Context, cp store.AuditCheckpoint, keep func(context.Context) error) (note string, err error)
}

// Status is what a Follower last saw of its sink.
type Status struct {
	// Holding: this replica delivers to the sink now.
	Holding bool
	// Begun: holding it, this replica has chosen where it delivers from;
	// every entry appended since reaches the sink.
	Begun bool
	// Looked: the last look at the store succeeded, so the figures are
	// current.
	Looked bool
	// Backlog is how many entries were appended after the sink's cursor,
	// at the last look.
	Backlog uint64
	// Delivered is when the sink's cursor last moved, by whichever
	// replica (zero: never).
	Delivered time.Time
}

// Follower delivers the audit log to one sink (see the package doc).
type Follower struct {
	// Name is the sink's name in the store (store.ValidAuditSinkName).
	Name string
	// Holder names this replica; unique among replicas and lives.
	Holder string
	Store  Store
	Sink   Sink
	Log    zerolog.Logger
	// Clock (nil: the wall clock), Every (0: DefaultEvery) and TTL (0:
	// DefaultClaimTTL) as their defaults say.
	Clock store.Clock
	Every time.Duration
	TTL   time.Duration
	// Key, when set, is what a checkpoint must verify under to be
	// delivered: a forged one is logged and passed over, never vouched
	// for beyond the store.
	Key ed25519.PublicKey

	mu      sync.Mutex
	status  Status
	renewed time.Time // when the claim was last renewed, by Clock
	gapFrom uint64    // the last seq gap logged, so it is logged once
	at      uint64    // the seq of the sink's cursor, as this replica last knew it
}

// Status returns what the Follower last saw.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *Follower) defaults() {
	if f.Clock == nil {
		f.Clock = store.WallClock{}
	}
	if f.Every <= 0 {
		f.Every = DefaultEvery
	}
	if f.TTL <= 0 {
		f.TTL = DefaultClaimTTL
	}
}

// Run delivers until ctx ends, then releases the claim and returns nil. A
// failure is logged and the look repeated, backing off up to maxIdle.
func (f *Follower) Run(ctx context.Context) error {
	f.defaults()
	if !store.ValidAuditSinkName(f.Name) || f.Holder == "" || f.Store == nil || f.Sink == nil {
		return fmt.Errorf("auditsink: follower of %q by %q: %w", f.Name, f.Holder, store.ErrInvalid)
	}
	log := f.Log.With().Str("sink", f.Name).Str("holder", f.Holder).Logger()
	defer f.release(ctx, log)
	failures := 0
	for {
		more, err := f.round(ctx, log)
		idle := f.Every
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			idle = min(f.Every<<min(failures, 10), maxIdle)
			log.Warn().Err(err).Dur("retry_in", idle).Msg("audit sink: delivery held up")
		default:
			failures = 0
		}
		if more && err == nil {
			continue
		}
		if store.Sleep(ctx, f.Clock, idle) != nil {
			return nil
		}
	}
}

// round claims (or renews) the sink and, holding it, delivers one page of
// the log. more reports a full page: there may be more at once.
func (f *Follower) round(ctx context.Context, log zerolog.Logger) (more bool, err error) {
	s, err := f.Store.ClaimAuditSink(ctx, f.Name, f.Holder, f.TTL)
	if err != nil {
		f.set(func(st *Status) { st.Looked = false })
		return false, fmt.Errorf("claim: %w", err)
	}
	holding := s.Holder == f.Holder
	f.mu.Lock()
	was, begun := f.status.Holding, f.status.Begun
	f.renewed = f.Clock.Now()
	f.mu.Unlock()
	if err := f.look(ctx, s, holding); err != nil || !holding {
		if was && !holding {
			log.Info().Str("by", s.Holder).Msg("audit sink: another replica delivers now")
		}
		return false, err
	}
	cur := s.Cursor
	if !begun || !s.Started {
		if cur, err = f.begin(ctx, s, log); err != nil {
			return false, err
		}
		f.mu.Lock()
		f.at, f.status.Begun = cur.Seq, true
		f.mu.Unlock()
	}
	entries, err := f.Store.AuditLog(ctx, cur.Entry, page)
	if err != nil {
		return false, fmt.Errorf("read the log after %q: %w", cur.Entry, err)
	}
	f.noteGap(cur, entries, log)
	full := len(entries) == page
	for len(entries) > 0 {
		n, note, err := f.Sink.Deliver(ctx, entries, f.keep)
		if err != nil {
			return false, fmt.Errorf("deliver entry %s (seq %d): %w", entries[0].ID, entries[0].Seq, err)
		}
		if n < 1 || n > len(entries) {
			return false, fmt.Errorf("deliver entry %s: the sink took %d of %d entries", entries[0].ID, n, len(entries))
		}
		if cur, err = f.advance(ctx, cur, entries[n-1], note); err != nil {
			return false, err
		}
		entries = entries[n:]
	}
	return full, f.seals(ctx, cur, log)
}

// seals delivers the checkpoints after the cursor's whose entries the
// sink has: each once, in order. When the store's checkpoints went back
// (an operator's reset, or a store that lost them) its newest is
// delivered at once, whatever came before: it is what shows the change.
func (f *Follower) seals(ctx context.Context, cur store.AuditCursor, log zerolog.Logger) error {
	last, err := f.Store.LastAuditCheckpoint(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("read the newest checkpoint: %w", err)
	case last.Seq == cur.Sealed:
		return nil
	}
	due := []store.AuditCheckpoint{last}
	if last.Seq > cur.Sealed {
		if due, err = f.Store.AuditCheckpoints(ctx, cur.Sealed+1); err != nil {
			return fmt.Errorf("read the checkpoints after seq %d: %w", cur.Sealed, err)
		}
	} else {
		log.Warn().Uint64("sealed_seq", cur.Sealed).Uint64("newest_seq", last.Seq).Bool("reset", last.Reset).
			Msg("audit sink: the store's newest checkpoint is behind the last one delivered; delivering it")
	}
	for _, cp := range due {
		if cp.Seq > cur.Seq && cp.Seq > cur.Sealed {
			return nil // its entries are not delivered yet
		}
		var note string
		if f.Key != nil && store.VerifyAuditCheckpoint(f.Key, cp) != nil {
			log.Error().Uint64("checkpoint_seq", cp.Seq).Msg("audit sink: a checkpoint in the store does not verify; not delivered")
			note = cur.Note
		} else if note, err = f.Sink.Seal(ctx, cp, f.keep); err != nil {
			return fmt.Errorf("deliver the checkpoint at seq %d: %w", cp.Seq, err)
		}
		next := cur
		next.Sealed, next.Note, next.At = cp.Seq, note, f.Clock.Now()
		if err := f.store(ctx, next); err != nil {
			return fmt.Errorf("move the cursor past the checkpoint at seq %d: %w", cp.Seq, err)
		}
		cur = next
	}
	return nil
}

// look records the sink's backlog, read from the chain's head.
func (f *Follower) look(ctx context.Context, s store.AuditSink, holding bool) error {
	head, err := f.Store.AuditHead(ctx)
	if err != nil {
		f.set(func(st *Status) { st.Looked, st.Holding, st.Begun = false, holding, st.Begun && holding })
		return fmt.Errorf("read the log's head: %w", err)
	}
	f.set(func(st *Status) {
		st.Looked, st.Holding, st.Delivered = true, holding, s.Cursor.At
		st.Begun = st.Begun && holding
	})
	f.mu.Lock()
	f.at = s.Cursor.Seq
	f.mu.Unlock()
	f.behind(head)
	return nil
}

// behind records the backlog: the entries after the cursor up to head.
func (f *Follower) behind(head store.AuditLink) {
	f.set(func(st *Status) {
		st.Backlog = 0
		if head.Seq > f.at {
			st.Backlog = head.Seq - f.at
		}
	})
}

// begin asks the sink where to start, now that this replica holds it,
// and stores that cursor when it differs from the store's.
func (f *Follower) begin(ctx context.Context, s store.AuditSink, log zerolog.Logger) (store.AuditCursor, error) {
	cur, err := f.Sink.Begin(ctx, s)
	if err != nil {
		return cur, fmt.Errorf("begin: %w", err)
	}
	if !s.Started || cur != s.Cursor {
		if err := f.Store.AdvanceAuditSink(ctx, f.Name, f.Holder, cur); err != nil {
			return cur, fmt.Errorf("begin: store the cursor: %w", err)
		}
	}
	log.Info().Str("after", cur.Entry).Uint64("after_seq", cur.Seq).Bool("new", !s.Started).Msg("audit sink: delivering")
	return cur, nil
}

// advance stores the cursor past e, which the sink accepted, even when
// ctx ended meanwhile.
func (f *Follower) advance(ctx context.Context, cur store.AuditCursor, e store.AuditEntry, note string) (store.AuditCursor, error) {
	next := store.AuditCursor{Entry: e.ID, Seq: cur.Seq, At: f.Clock.Now(), Note: note, Sealed: cur.Sealed}
	if e.Seq > 0 {
		next.Seq = e.Seq
	}
	if err := f.store(ctx, next); err != nil {
		return cur, fmt.Errorf("move the cursor past %s: %w", e.ID, err)
	}
	f.set(func(st *Status) {
		st.Delivered = next.At
		if st.Backlog > 0 {
			st.Backlog -= min(st.Backlog, next.Seq-min(next.Seq, cur.Seq))
		}
	})
	f.mu.Lock()
	f.at = next.Seq
	f.mu.Unlock()
	return next, nil
}

// store writes the cursor, even when ctx ended meanwhile: what the sink
// accepted must be recorded.
func (f *Follower) store(ctx context.Context, next store.AuditCursor) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	err := f.Store.AdvanceAuditSink(wctx, f.Name, f.Holder, next)
	if errors.Is(err, store.ErrNotOwner) {
		f.set(func(st *Status) { st.Holding = false })
	}
	return err
}

// keep renews the claim once a third of its ttl has passed since the last
// renewal; ErrClaimLost when another replica holds it now. It also looks
// at the log's head again, so the backlog grows while a delivery retries.
func (f *Follower) keep(ctx context.Context) error {
	if head, err := f.Store.AuditHead(ctx); err == nil {
		f.behind(head)
	}
	f.mu.Lock()
	due := f.Clock.Now().Sub(f.renewed) >= f.TTL/3
	f.mu.Unlock()
	if !due {
		return ctx.Err()
	}
	s, err := f.Store.ClaimAuditSink(ctx, f.Name, f.Holder, f.TTL)
	if err != nil {
		return fmt.Errorf("renew the claim: %w", err)
	}
	if s.Holder != f.Holder {
		f.set(func(st *Status) { st.Holding = false })
		return fmt.Errorf("%w (%s)", ErrClaimLost, s.Holder)
	}
	f.mu.Lock()
	f.renewed = f.Clock.Now()
	f.mu.Unlock()
	return nil
}

// noteGap logs, once, entries trimmed from the store before the sink got
// them (the seq after the cursor's is not the next one read).
func (f *Follower) noteGap(cur store.AuditCursor, entries []store.AuditEntry, log zerolog.Logger) {
	if len(entries) == 0 || cur.Seq == 0 || entries[0].Seq <= cur.Seq+1 || f.gapFrom == cur.Seq {
		return
	}
	f.gapFrom = cur.Seq
	log.Error().Uint64("delivered_seq", cur.Seq).Uint64("next_seq", entries[0].Seq).
		Msg("audit sink: entries between these were trimmed from the store (AUDIT_RETENTION) before the sink got them")
}

// release gives the claim up, so another replica takes over at once.
func (f *Follower) release(ctx context.Context, log zerolog.Logger) {
	if !f.Status().Holding {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	if err := f.Store.ReleaseAuditSink(rctx, f.Name, f.Holder); err != nil {
		log.Warn().Err(err).Msg("audit sink: release the claim (another replica takes over once it lapses)")
	}
	f.set(func(st *Status) { st.Holding = false })
}

func (f *Follower) set(fn func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.status)
}
