package bot

import (
	"cmp"
	"container/list"
	"context"
	"sync"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// statusKeep as a phase shows the phase last shown (working if none), with
// the pending count brought up to date. Waiting for approval is derived
// from the pending requests, never passed in.
const statusKeep blocks.Phase = ""

// refreshStatus keeps the session's one status message current: posted
// the first time (its ref stored in Session.Status), edited in place after,
// edits coalesced by the outbox. Failures are logged: the status line is
// a convenience, the thread's messages are the record.
func (b *Bot) refreshStatus(ctx context.Context, sessionID string, phase blocks.Phase, detail ...string) {
	entry := b.status.lock(sessionID)
	defer b.status.unlock(entry)
	log := b.log.With().Str("session_id", sessionID).Logger()
	s, err := b.st.GetSession(ctx, sessionID)
	if err != nil {
		log.Warn().Err(err).Msg("status: get session")
		return
	}
	// "Queued" is said once, right after the session is created; a worker
	// may already have moved it on (and said so) by the time it is shown.
	if phase == blocks.PhaseQueued && (entry.known || s.State != store.SessionQueued) {
		phase = statusKeep
	}
	st := blocks.Status{Phase: phase}
	if len(detail) > 0 {
		st.Detail = detail[0]
	}
	if phase == statusKeep {
		st = blocks.Status{Phase: blocks.PhaseWorking}
		if entry.known {
			st = entry.shown
		}
	}
	entry.shown, entry.known = st, true
	pending, err := b.st.ListPending(ctx, sessionID)
	if err != nil {
		log.Warn().Err(err).Msg("status: list pending")
	}
	st.Pending = len(pending)
	m := renderStatus(s, st)
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	if !s.Status.IsZero() {
		b.out.UpdateLater(log, s.Status, m)
		return
	}
	ts, err := b.out.Post(ctx, log, s.Thread.Channel, s.Thread.TS, m)
	if err != nil {
		log.Warn().Err(err).Msg("status: post")
		return
	}
	ref := store.MessageRef{Channel: s.Thread.Channel, TS: ts}
	if _, err := b.st.UpdateSession(ctx, sessionID, func(s *store.Session) error {
		s.Status = ref
		return nil
	}); err != nil {
		log.Warn().Err(err).Msg("status: record message")
	}
}

// defaultStatusSessions is how many sessions' status entries one bot
// keeps. A forgotten entry costs little: the next refresh of that session
// shows "working" instead of the phase last shown, as after a restart.
const defaultStatusSessions = 1024

// statusBook serialises work on one session's status message within this
// process (so two events cannot both post a first status message) and
// remembers the phase last shown. It remembers at most max sessions (the
// least recently used are forgotten first), and never forgets one whose
// entry is held or awaited, so serialisation survives the bound.
type statusBook struct {
	max int // 0 means defaultStatusSessions

	mu      sync.Mutex
	entries map[string]*list.Element // of *statusEntry
	order   list.List                // most recently used first
}

type statusEntry struct {
	mu    sync.Mutex
	shown blocks.Status // what the line showed last, less the pending count
	known bool

	id   string
	refs int // goroutines holding or waiting for mu; guarded by statusBook.mu
}

// lock returns the session's entry, locked; the caller gives it back with
// unlock.
func (s *statusBook) lock(sessionID string) *statusEntry {
	s.mu.Lock()
	if s.entries == nil {
		s.entries = map[string]*list.Element{}
	}
	el := s.entries[sessionID]
	if el == nil {
		el = s.order.PushFront(&statusEntry{id: sessionID})
		s.entries[sessionID] = el
	} else {
		s.order.MoveToFront(el)
	}
	e := el.Value.(*statusEntry)
	e.refs++
	s.evictLocked()
	s.mu.Unlock()
	e.mu.Lock()
	return e
}

// unlock releases an entry lock returned.
func (s *statusBook) unlock(e *statusEntry) {
	e.mu.Unlock()
	s.mu.Lock()
	e.refs--
	s.evictLocked()
	s.mu.Unlock()
}

// evictLocked forgets the least recently used entries nobody holds until
// the book is within its bound.
func (s *statusBook) evictLocked() {
	limit := cmp.Or(s.max, defaultStatusSessions)
	for el := s.order.Back(); el != nil && s.order.Len() > limit; {
		prev := el.Prev()
		if e := el.Value.(*statusEntry); e.refs == 0 {
			s.order.Remove(el)
			delete(s.entries, e.id)
		}
		el = prev
	}
}
