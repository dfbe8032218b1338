package bot

import (
	"bytes"
	"cmp"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// statusKeep as a phase shows the phase last shown (working if none), with
// the pending count brought up to date. Waiting for approval is derived
// from the pending requests, never passed in.
const statusKeep blocks.Phase = ""

// statusLines owns each session's two live messages in its thread: the
// status line and the fold of the tool uses of its turn (progress). It
// takes the store calls of statusStore, the outbox and the permission
// modes the line offers (mode.go's, as a func).
type statusLines struct {
	statusBook
	st    statusStore
	out   *outbox.Outbox
	log   zerolog.Logger
	modes func(store.Session) []string
}

// statusStore is what the status line reads and writes in the store.
type statusStore interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error)
	CountPending(ctx context.Context, sessionID string) (int, error)
}

// refresh keeps the session's one status message current: a live
// message of the outbox, posted the first time (its ref stored in
// Session.Status), edited in place after at a bounded rate, an edit equal
// to what Slack shows never sent. Failures are logged: the status line is
// a convenience, the thread's messages are the record.
func (l *statusLines) refresh(ctx context.Context, sessionID string, phase blocks.Phase, detail ...string) {
	l.refreshFrom(ctx, sessionID, nil, phase, detail...)
}

// refreshOf is refresh for a caller that has read the session
// already (see session).
func (l *statusLines) refreshOf(ctx context.Context, s store.Session, phase blocks.Phase, detail ...string) {
	l.refreshFrom(ctx, s.ID, &s, phase, detail...)
}

// refreshFrom is refresh, starting from the session as the
// caller read it (nil reads it).
func (l *statusLines) refreshFrom(ctx context.Context, sessionID string, known *store.Session, phase blocks.Phase, detail ...string) {
	entry := l.lock(sessionID)
	defer l.unlock(entry)
	log := l.log.With().Str("session_id", sessionID).Logger()
	s, err := l.session(ctx, sessionID, known)
	if err != nil {
		log.Warn().Err(err).Msg("status: get session")
		return
	}
	entry.learn(s)
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
	// Only the number is shown: counted without reading the requests.
	if st.Pending, err = l.st.CountPending(ctx, sessionID); err != nil {
		log.Warn().Err(err).Msg("status: count pending")
	}
	log = log.With().Str("channel", s.Thread.Channel).Logger()
	st.Modes = l.modes(s)
	l.out.Live(log, outbox.LiveSpec{
		Key:      statusKey(sessionID),
		Channel:  s.Thread.Channel,
		ThreadTS: s.Thread.TS,
		Ref:      s.Status,
		Posted:   func(ref store.MessageRef) { l.record(ctx, log, sessionID, ref) },
	}, renderStatus(s, st))
}

// statusKey names a session's status line among the outbox's live messages.
func statusKey(sessionID string) string { return "status:" + sessionID }

// session is the session a status refresh shows. The caller's copy
// (known) does, unless it names no status message while this bot has none
// posted either: then the store's is read, because another replica (or
// this bot's posted callback) may have recorded one since the caller read
// it, and the line must be edited there rather than posted again. What
// else the line shows of a session (its id, directory and starter) never
// changes.
func (l *statusLines) session(ctx context.Context, id string, known *store.Session) (store.Session, error) {
	if known != nil && (!known.Status.IsZero() || l.out.LivePosted(statusKey(id))) {
		return *known, nil
	}
	return l.st.GetSession(ctx, id)
}

// record stores where the status message went, so other replicas
// and later runs edit it rather than post another.
func (l *statusLines) record(ctx context.Context, log zerolog.Logger, sessionID string, ref store.MessageRef) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outbox.CallTimeout)
	defer cancel()
	if _, err := l.st.UpdateSession(ctx, sessionID, func(s *store.Session) error {
		s.Status = ref
		return nil
	}); err != nil {
		log.Warn().Err(err).Msg("status: record message")
	}
}

// progress folds the tool uses of a session's turn into one live message.
type progress struct {
	turn  int
	steps []progressStep
}

type progressStep struct {
	blocks.ToolStep
	carded bool // the call got a card: the card shows it, the fold does not
}

// cardTools always get a card, so their use is never folded: the card
// says everything, and their input (questions, plans) is not one line.
var cardTools = map[string]bool{"AskUserQuestion": true, "ExitPlanMode": true}

// showProgress updates the fold of the session's turn with what e changed:
// a tool use adds a step, a failed result marks its step, a request takes
// its call out (the card shows it), the end of a turn sends the last state
// and starts a new fold. flush puts a first post still waiting ahead of
// the results lane, so the thread reads in order.
func (l *statusLines) showProgress(log zerolog.Logger, s store.Session, e store.Event, r *store.Request) {
	entry := l.lock(s.ID)
	defer l.unlock(entry)
	entry.learn(s)
	p := &entry.progress
	changed, end := p.apply(e, r)
	if !changed && !end && e.Type != store.EventAssistantText {
		return
	}
	var steps []blocks.ToolStep
	for _, st := range p.steps {
		if !st.carded {
			steps = append(steps, st.ToolStep)
		}
	}
	l.out.Live(log, outbox.LiveSpec{
		Key:        fmt.Sprintf("progress:%s:%d", s.ID, p.turn),
		Channel:    s.Thread.Channel,
		ThreadTS:   s.Thread.TS,
		DelayFirst: true,
		Final:      end,
		Flush:      e.Type != store.EventToolUse && e.Type != store.EventToolResult,
	}, toMsg(blocks.ProgressMessage(steps)))
	if end {
		*p = progress{turn: p.turn + 1}
	}
}

// apply records e in the fold; it reports whether the fold changed and
// whether the turn ended.
func (p *progress) apply(e store.Event, r *store.Request) (changed, end bool) {
	switch e.Type {
	case store.EventToolUse:
		if cardTools[e.Tool] {
			return false, false
		}
		p.steps = append(p.steps, progressStep{ToolStep: blocks.ToolStep{Tool: e.Tool, Input: e.Input}})
		return true, false
	case store.EventToolResult:
		for i := len(p.steps) - 1; i >= 0; i-- {
			if st := &p.steps[i]; st.Tool == e.Tool && st.Failed == "" {
				if !e.IsError || st.carded {
					return false, false
				}
				st.Failed = cmp.Or(strings.TrimSpace(e.Text), "error")
				return true, false
			}
		}
		return false, false
	case store.EventRequestCreated:
		for i := len(p.steps) - 1; i >= 0 && r != nil; i-- {
			if st := &p.steps[i]; !st.carded && st.Tool == r.ToolName && sameJSON(st.Input, r.Input) {
				st.carded = true
				return true, false
			}
		}
		return false, false
	case store.EventResult, store.EventExit, store.EventInterrupted, store.EventError:
		return false, true
	}
	return false, false
}

// sameJSON reports whether two JSON documents are equal once compacted.
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
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
	mu       sync.Mutex
	shown    blocks.Status // what the line showed last, less the pending count
	known    bool
	progress progress // the fold of the current turn
	// thread is the session's thread once a session read showed it (a
	// session's thread never changes): tool uses and results, which show
	// nothing else of the session, are folded without reading it again.
	thread atomic.Pointer[store.MessageRef]

	id   string
	refs int // goroutines holding or waiting for mu; guarded by statusBook.mu
}

// learn records what of s the entry keeps.
func (e *statusEntry) learn(s store.Session) {
	if e.thread.Load() == nil {
		thread := s.Thread
		e.thread.Store(&thread)
	}
}

// threadOf returns a session's thread when its entry has learnt it.
func (s *statusBook) threadOf(sessionID string) (store.MessageRef, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el := s.entries[sessionID]; el != nil {
		if t := el.Value.(*statusEntry).thread.Load(); t != nil {
			return *t, true
		}
	}
	return store.MessageRef{}, false
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
