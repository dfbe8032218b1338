package bot

import (
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
	defer entry.mu.Unlock()
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

// statusBook serialises work on one session's status message within this
// process (so two events cannot both post a first status message) and
// remembers the phase last shown.
type statusBook struct {
	mu      sync.Mutex
	entries map[string]*statusEntry
}

type statusEntry struct {
	mu    sync.Mutex
	shown blocks.Status // what the line showed last, less the pending count
	known bool
}

// lock returns the session's entry, locked; the caller unlocks it.
func (s *statusBook) lock(sessionID string) *statusEntry {
	s.mu.Lock()
	if s.entries == nil {
		s.entries = map[string]*statusEntry{}
	}
	e := s.entries[sessionID]
	if e == nil {
		e = &statusEntry{}
		s.entries[sessionID] = e
	}
	s.mu.Unlock()
	e.mu.Lock()
	return e
}
