package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// Defaults for Config.
const (
	DefaultMaxSessions = 4
	DefaultIdleTimeout = 10 * time.Minute
	// MaxResultText caps the tool result text published in EventToolResult.
	MaxResultText = 500
	// cleanupTimeout bounds store calls made while shutting down or ending
	// requests, when the caller's context may already be cancelled.
	cleanupTimeout = 10 * time.Second
	// shutdownInterrupt bounds the wait for the CLI to abort a turn when
	// the worker stops.
	shutdownInterrupt = 3 * time.Second
)

// ErrNoProcess: the session has no claude process on this worker.
var ErrNoProcess = errors.New("no running claude process for this session")

// Config is the worker's configuration. cmd/slackgate fills it.
type Config struct {
	ClaudeBin      string        // "" = "claude" on PATH
	PermissionMode string        // default for sessions that do not set one ("" = "default")
	Model          string        // default for sessions that do not set one ("" = the CLI's)
	ExtraArgs      []string      // appended to every claude command line
	RequestTimeout time.Duration // a request undecided this long expires (0 = never)
	MaxSessions    int           // processes at once; idle ones give way to new sessions (0 = DefaultMaxSessions)
	IdleTimeout    time.Duration // a process idle this long after a result stops, if it did not give way first (0 = DefaultIdleTimeout)
	WorkerID       string        // owner name in the store; a restart under the same name recovers ("" = hostname)
	Env            []string      // claude's environment is drawn from it by ClaudeEnv (nil = os.Environ())
	Clock          Clock         // nil = RealClock
	StopGrace      time.Duration // see ProcessOptions
	KillGrace      time.Duration

	PassEnv []string               // more names ClaudeEnv lets through (CLAUDE_ENV)
	DenyEnv func(name string) bool // names that never pass, whatever list they are on; nil = none
	User    *RunAs                 // run claude as this OS user (nil = the worker's own)
}

func (c *Config) normalize() error {
	if c.ClaudeBin == "" {
		c.ClaudeBin = "claude"
	}
	if c.PermissionMode == "" {
		c.PermissionMode = "default"
	}
	if err := ValidMode(c.PermissionMode); err != nil {
		return err
	}
	if c.MaxSessions < 0 || c.RequestTimeout < 0 || c.IdleTimeout < 0 {
		return fmt.Errorf("relay: negative MaxSessions, RequestTimeout or IdleTimeout: %w", store.ErrInvalid)
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("relay: worker id: %w", err)
		}
		c.WorkerID = host
	}
	if c.Clock == nil {
		c.Clock = RealClock{}
	}
	return nil
}

// Worker claims sessions from the store and runs one claude process per
// session, bridging its control requests to the store and decisions back.
type Worker struct {
	cfg   Config
	env   []string // claude's environment, through the allowlist
	st    store.Store
	log   zerolog.Logger
	clock Clock

	malformed atomic.Int64

	mu      sync.Mutex
	live    map[string]*Process
	slots   map[*slot]struct{} // the places in use, at most MaxSessions not evicting
	idleSeq uint64
	changed chan struct{} // closed and replaced whenever a slot changes
}

// NewWorker validates cfg.
func NewWorker(cfg Config, st store.Store, log zerolog.Logger) (*Worker, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	environ := cfg.Env
	if environ == nil {
		environ = os.Environ()
	}
	return &Worker{cfg: cfg, env: ClaudeEnv(environ, cfg.PassEnv, cfg.DenyEnv), st: st, log: log.With().Str("worker", cfg.WorkerID).Logger(), clock: cfg.Clock,
		live: make(map[string]*Process), slots: make(map[*slot]struct{}), changed: make(chan struct{})}, nil
}

// MalformedLines counts stdout lines, from every process this worker ran or
// runs, that could not be decoded (each was logged and skipped).
func (w *Worker) MalformedLines() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.malformed.Load()
	for _, p := range w.live {
		n += p.Stats().Malformed
	}
	return n
}

// Run recovers what a previous life under the same WorkerID left, then
// claims and runs sessions until ctx ends. At most MaxSessions claude
// processes run at once, but a process waiting between turns does not hold
// its place against a new session: when the worker is full and one of its
// processes is idle it still claims, and the longest-idle process is
// stopped (as the idle timeout would) before the new session starts. It
// stops its processes and returns nil on cancellation.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.recoverOwned(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		if err := w.waitRoom(ctx, true); err != nil {
			return nil
		}
		id, err := w.claim(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: claim: %w", err)
		}
		if id == "" {
			continue // the room went while waiting: every process turned busy
		}
		sl, victim := w.admit(id)
		if sl == nil {
			// Every process turned busy between the claim and now. Give
			// the session back so another worker, or this one later, runs it.
			log := w.log.With().Str("session_id", id).Logger()
			log.Debug().Msg("claimed a session but every process turned busy: releasing it")
			w.release(ctx, id, log)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runSession(ctx, sl, victim)
		}()
	}
}

// claim waits for a ready session, giving up ("", nil) as soon as the
// worker has no room any more, so a full worker leaves ready sessions to
// others.
func (w *Worker) claim(ctx context.Context) (string, error) {
	claimCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if w.waitRoom(claimCtx, false) == nil {
			stop()
		}
	}()
	id, err := w.st.Claim(claimCtx, w.cfg.WorkerID)
	stop()
	wg.Wait()
	if err != nil && ctx.Err() == nil && claimCtx.Err() != nil && errors.Is(err, context.Canceled) {
		return "", nil
	}
	return id, err
}

// slot is one place in the worker's capacity: a claimed session, from the
// claim until its process has exited. Its fields are guarded by Worker.mu.
type slot struct {
	id string
	// busy: a turn runs, a request may be pending, the process is starting
	// or stopping. Only a slot that is not busy may be evicted.
	busy bool
	// idleSeq orders idle slots: the smallest went idle first.
	idleSeq uint64
	// evicting: chosen to make room; evict is closed to tell its session
	// loop, which stops the process and sends it nothing more.
	evicting bool
	evict    chan struct{}
	// exited is closed when the slot's process has exited (or it never
	// got one): the session that evicted it starts its process then.
	exited chan struct{}
	gone   bool
}

// roomLocked says whether a session can be admitted now, and which idle
// slot must make room for it (nil when there is a free place). Evicting
// slots are already counted for the session that evicted them.
func (w *Worker) roomLocked() (bool, *slot) {
	held := 0
	for sl := range w.slots {
		if !sl.evicting {
			held++
		}
	}
	if held < w.cfg.MaxSessions {
		return true, nil
	}
	var victim *slot
	for sl := range w.slots {
		if !sl.busy && !sl.evicting && (victim == nil || sl.idleSeq < victim.idleSeq) {
			victim = sl
		}
	}
	return victim != nil, victim
}

// changedLocked wakes everyone waiting for the room to change.
func (w *Worker) changedLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// waitRoom blocks until the worker has room (want) or has none (!want),
// recomputed whenever a slot changes: no polling.
func (w *Worker) waitRoom(ctx context.Context, want bool) error {
	for {
		w.mu.Lock()
		room, _ := w.roomLocked()
		changed := w.changed
		w.mu.Unlock()
		if room == want {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admit takes a place for a claimed session, evicting the longest-idle
// slot when the worker is full. It returns nil when there is no room, and
// the victim's exited channel (nil when none) the session must wait for
// before it starts a process.
func (w *Worker) admit(id string) (*slot, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room, victim := w.roomLocked()
	if !room {
		return nil, nil
	}
	var after <-chan struct{}
	if victim != nil {
		victim.evicting = true
		close(victim.evict)
		after = victim.exited
		w.log.Info().Str("session_id", victim.id).Str("for_session", id).Msg("stopping the longest-idle claude to make room")
	}
	sl := &slot{id: id, busy: true, evict: make(chan struct{}), exited: make(chan struct{})}
	w.slots[sl] = struct{}{}
	w.changedLocked()
	return sl, after
}

// markBusy records that a message is about to be sent to the slot's
// process. It reports false when the slot is being evicted: the message
// must not be sent, since the process is going away to make room.
func (w *Worker) markBusy(sl *slot) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sl.evicting {
		return false
	}
	if !sl.busy {
		sl.busy = true
		w.changedLocked()
	}
	return true
}

// markIdle records that the slot's turn ended: its process may now give
// way to a new session.
func (w *Worker) markIdle(sl *slot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sl.busy && !sl.gone {
		w.idleSeq++
		sl.busy, sl.idleSeq = false, w.idleSeq
		w.changedLocked()
	}
}

// dropSlot frees the slot's place once its process has exited. Calling it
// again does nothing.
func (w *Worker) dropSlot(sl *slot) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sl.gone {
		return
	}
	sl.gone, sl.busy = true, true
	delete(w.slots, sl)
	close(sl.exited)
	w.changedLocked()
}

// release gives up ownership of a session, logging a failure.
func (w *Worker) release(ctx context.Context, id string, log zerolog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := w.st.Release(cctx, id, w.cfg.WorkerID); err != nil {
		log.Error().Err(err).Msg("releasing session")
	}
}

// recoverOwned ends the pending requests of sessions this worker name still
// owns (its previous process crashed) and releases them.
func (w *Worker) recoverOwned(ctx context.Context) error {
	ids, err := w.st.Owned(ctx, w.cfg.WorkerID)
	if err != nil {
		return fmt.Errorf("relay: owned sessions: %w", err)
	}
	for _, id := range ids {
		log := w.log.With().Str("session_id", id).Logger()
		log.Info().Msg("recovering session left by a previous run of this worker")
		w.endPending(ctx, id, "the slackgate worker restarted while this request was waiting", log)
		if _, err := w.st.UpdateSession(ctx, id, func(s *store.Session) error {
			s.State, s.Worker = store.SessionIdle, ""
			return nil
		}); err != nil && !errors.Is(err, store.ErrNotFound) {
			log.Error().Err(err).Msg("marking recovered session idle")
		}
		if err := w.st.Release(ctx, id, w.cfg.WorkerID); err != nil {
			return fmt.Errorf("relay: release %s: %w", id, err)
		}
	}
	return nil
}

// endPending decides every pending request of a session as ended.
func (w *Worker) endPending(ctx context.Context, sessionID, reason string, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	reqs, err := w.st.ListPending(ctx, sessionID)
	if err != nil {
		log.Error().Err(err).Msg("listing pending requests to end them")
		return
	}
	for _, r := range reqs {
		_, err := w.st.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeEnded, At: w.clock.Now(), Message: reason})
		if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
			log.Error().Err(err).Str("request_id", r.ID).Msg("ending pending request")
		}
	}
}

// runSession owns a claimed session for one claude process, then releases
// it. The session's final state is stored before the last event (exit or
// error) is published, so whoever reacts to that event reads it. Inputs
// taken from the queue but never delivered go back first in line and the
// session is released, so it is claimed again like any ready session: a
// new process is started only by Run, within capacity.
func (w *Worker) runSession(ctx context.Context, sl *slot, after <-chan struct{}) {
	defer w.dropSlot(sl)
	id := sl.id
	log := w.log.With().Str("session_id", id).Logger()
	if after != nil {
		// The process evicted for this session must be gone first.
		select {
		case <-after:
		case <-ctx.Done():
			// Untouched: its input still waits in the inbox.
			w.release(ctx, id, log)
			return
		}
	}
	released := false
	finish := func(state store.SessionState) {
		released = true
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		w.setState(cctx, id, state, log)
		w.release(cctx, id, log)
	}
	defer func() {
		if !released {
			finish(store.SessionIdle)
		}
	}()
	in, err := w.st.NextInput(ctx, id, w.cfg.WorkerID)
	if err != nil {
		if ctx.Err() == nil {
			log.Error().Err(err).Msg("first input of claimed session")
		}
		return
	}
	if in.Control != "" {
		// Nothing runs here to act on, and starting claude just to stop it
		// would be absurd. Release without touching the session's state;
		// inputs queued behind this one make it ready again.
		log.Info().Str("input_id", in.ID).Str("control", in.Control).Str("user", in.User).
			Msg("control input for a session with no live process: nothing to do")
		released = true
		w.release(ctx, id, log)
		return
	}
	sess, err := w.st.GetSession(ctx, id)
	if err != nil {
		// The input is dropped: put back, it would be claimed and fail
		// again at once.
		log.Error().Err(err).Str("input_id", in.ID).Msg("loading session")
		finish(store.SessionFailed)
		return
	}
	last, leftovers, failed := w.runProcess(ctx, sl, sess, in, log)
	kept := leftovers[:0]
	for _, l := range leftovers {
		if l.Control != "" {
			// The process it was meant for is gone: there is nothing to act on.
			log.Info().Str("input_id", l.ID).Str("control", l.Control).Str("user", l.User).
				Msg("control input arrived as the process ended: nothing to do")
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) == 0 {
		state := store.SessionIdle
		if failed {
			state = store.SessionFailed
		}
		finish(state)
		w.publish(context.WithoutCancel(ctx), id, last, log)
		return
	}
	// Messages arrived as the process ended. Put them back (the session is
	// queued again, even after a crash: the crash is told by the exit) and
	// publish the exit before releasing: the session is ready again from
	// the release on, and the exit must not be told after the next
	// process's start.
	released = true
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	w.requeue(cctx, kept, log)
	w.setState(cctx, id, store.SessionQueued, log)
	w.publish(cctx, id, last, log)
	w.release(cctx, id, log)
}

// setState stores a session's state after its process, with no owner.
func (w *Worker) setState(ctx context.Context, id string, state store.SessionState, log zerolog.Logger) {
	if _, err := w.st.UpdateSession(ctx, id, func(s *store.Session) error {
		s.State, s.Worker, s.UpdatedAt = state, "", w.clock.Now()
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("updating session state")
	}
}

// requeue puts inputs taken from the queue but not delivered back at the
// head of the session's inbox, in their order, while the worker still owns
// the session.
func (w *Worker) requeue(ctx context.Context, ins []store.Input, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	for i := len(ins) - 1; i >= 0; i-- {
		if err := w.st.Requeue(ctx, ins[i], w.cfg.WorkerID); err != nil {
			log.Error().Err(err).Str("input_id", ins[i].ID).Msg("input lost: cannot put it back in the queue")
			continue
		}
		log.Info().Str("input_id", ins[i].ID).Msg("input put back in the queue for the session's next process")
	}
}

func (w *Worker) publish(ctx context.Context, sessionID string, e store.Event, log zerolog.Logger) {
	e.SessionID = sessionID
	if e.At.IsZero() {
		e.At = w.clock.Now()
	}
	if _, err := w.st.Publish(ctx, e); err != nil {
		log.Error().Err(err).Str("event", string(e.Type)).Msg("publishing event")
	}
}

// turnState is what the reader goroutine tells the session loop: whether a
// turn is running, so the idle timer only runs between turns.
type turnState struct {
	mu          sync.Mutex
	busy        bool
	lastIsError bool
	notify      chan struct{} // capacity 1: "look at the state again"

	// stopBy is who asked to interrupt the running turn (a Slack user id,
	// "" when unknown); stopAsked is true from the interrupt until the
	// turn's result. stopBy outlives the result until the next message is
	// sent, so requests Claude withdraws late are still attributed.
	stopBy    string
	stopAsked bool
}

// begin marks a message sent: a new turn, not stopped by anyone yet. A
// stop still waiting for its turn's result is kept: a message sent right
// after Stop must not lose the "stopped by" of the turn it aborted.
func (t *turnState) begin() {
	t.mu.Lock()
	if !t.stopAsked {
		t.stopBy = ""
	}
	t.mu.Unlock()
	t.set(true, false)
}

// askStop records an interrupt of the running turn by user.
func (t *turnState) askStop(user string) {
	t.mu.Lock()
	t.stopBy, t.stopAsked = user, true
	t.mu.Unlock()
}

// takeStop reports, once, whether the turn that just ended was asked to
// stop, and by whom.
func (t *turnState) takeStop() (user string, asked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	asked, t.stopAsked = t.stopAsked, false
	return t.stopBy, asked
}

// stopper is who stopped the current turn, if a person did.
func (t *turnState) stopper() (user string, stopped bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopBy, t.stopBy != "" || t.stopAsked
}

func (t *turnState) set(busy, isError bool) {
	t.mu.Lock()
	t.busy = busy
	if !busy {
		t.lastIsError = isError
	}
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

func (t *turnState) get() (busy, lastIsError bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.busy, t.lastIsError
}

// runProcess runs one claude process for sess in slot sl, starting with
// first, until it exits (idle timeout, eviction, crash, shutdown). It
// returns the event that tells how it ended (exit, or error when it could
// not start) for the caller to publish, the inputs that were taken from the
// queue but not delivered (oldest first), and whether the session failed.
// The slot is dropped as soon as the process has exited.
func (w *Worker) runProcess(ctx context.Context, sl *slot, sess store.Session, first store.Input, log zerolog.Logger) (store.Event, []store.Input, bool) {
	pctx := context.WithoutCancel(ctx) // handlers outlive shutdown until the process is gone
	turn := &turnState{busy: true, notify: make(chan struct{}, 1)}
	b := &bridge{w: w, sess: sess, log: log, turn: turn, toolNames: make(map[string]string), started: sess.Started}
	opts := ProcessOptions{
		Bin: w.cfg.ClaudeBin, SessionID: sess.ID, Resume: sess.Started, WorkDir: sess.WorkDir,
		PermissionMode: orDefault(sess.PermissionMode, w.cfg.PermissionMode),
		Model:          orDefault(sess.Model, w.cfg.Model),
		ExtraArgs:      w.cfg.ExtraArgs, Env: w.env, User: w.cfg.User, StopGrace: w.cfg.StopGrace, KillGrace: w.cfg.KillGrace,
	}
	proc, err := StartProcess(pctx, opts, ConnHandlers{OnMessage: b.onMessage, OnCanUseTool: b.onCanUseTool}, log)
	if err != nil {
		w.dropSlot(sl)
		log.Error().Err(err).Msg("cannot start claude")
		return store.Event{Type: store.EventError, Text: err.Error()}, nil, true
	}
	log = log.With().Int("pid", proc.PID()).Logger()
	log.Info().Bool("resume", opts.Resume).Msg("claude started")
	if _, err := w.st.UpdateSession(pctx, sess.ID, func(s *store.Session) error {
		s.State, s.Worker, s.UpdatedAt = store.SessionRunning, w.cfg.WorkerID, w.clock.Now()
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("marking session running")
	}
	b.publish(pctx, store.Event{Type: store.EventSessionStarted, Text: fmt.Sprintf("claude started (pid %d, resume %t)", proc.PID(), opts.Resume)})
	w.mu.Lock()
	w.live[sess.ID] = proc
	w.mu.Unlock()
	gone := func() {
		// Move the process's count into the total in one step, so
		// MalformedLines never counts it twice or not at all; then free
		// its place, so a session waiting for it starts only now.
		w.mu.Lock()
		delete(w.live, sess.ID)
		w.malformed.Add(proc.Stats().Malformed)
		w.mu.Unlock()
		w.dropSlot(sl)
	}

	// The feeder hands queued inputs to the loop in order. An input it took
	// from the queue but could not hand over comes back as leftover.
	feedCtx, stopFeed := context.WithCancel(ctx)
	inputs := make(chan store.Input)
	var leftovers []store.Input // taken but not delivered, oldest first
	var fed *store.Input        // the feeder's own leftover, read after feedWG.Wait
	var feedWG sync.WaitGroup
	feedWG.Add(1)
	go func() {
		defer feedWG.Done()
		for {
			in, err := w.st.NextInput(feedCtx, sess.ID, w.cfg.WorkerID)
			if err != nil {
				if feedCtx.Err() == nil {
					log.Error().Err(err).Msg("next input")
				}
				return
			}
			select {
			case inputs <- in:
			case <-feedCtx.Done():
				fed = &in
				return
			}
		}
	}()

	send := func(in store.Input) {
		turn.begin()
		if err := proc.Send(pctx, in.Text); err != nil {
			log.Error().Err(err).Str("input_id", in.ID).Msg("sending input to claude")
		}
	}
	send(first)
	var idle Timer
	var idleC <-chan time.Time
	stopIdle := func() {
		if idle != nil {
			idle.Stop()
			idle, idleC = nil, nil
		}
	}
	var stoppedByUs bool
	done := ctx.Done()
	// stopIdleProcess is the clean stop of a process between turns (idle
	// timeout or eviction): the session is released idle and resumed by
	// its next input.
	stopIdleProcess := func() {
		stoppedByUs = true
		stopFeed() // an input arriving now goes back to the queue
		proc.Stop(pctx, "idle")
	}
loop:
	for {
		select {
		case in := <-inputs:
			if in.Control != "" {
				// Not a message: the idle timer keeps running.
				w.control(ctx, proc, turn, in, b, log)
				continue
			}
			if !w.markBusy(sl) {
				// The process was chosen to make room just before this
				// follow-up came: it goes back to the queue, and the
				// session is claimed again within capacity.
				leftovers = append(leftovers, in)
				log.Info().Str("input_id", in.ID).Msg("stopping idle claude to make room; follow-up goes back to the queue")
				stopIdleProcess()
				break loop
			}
			stopIdle()
			send(in)
		case <-turn.notify:
			if busy, _ := turn.get(); busy {
				stopIdle()
				w.markBusy(sl) // false when evicting: the evict case stops it
			} else if idle == nil {
				idle = w.clock.NewTimer(w.cfg.IdleTimeout)
				idleC = idle.C()
				w.markIdle(sl)
			}
		case <-sl.evict:
			log.Info().Msg("stopping idle claude to make room for another session")
			stopIdleProcess()
			break loop
		case <-idleC:
			idle, idleC = nil, nil
			log.Info().Dur("idle_timeout", w.cfg.IdleTimeout).Msg("stopping idle claude")
			w.markBusy(sl) // stopping: no longer a process that can give way
			stopIdleProcess()
			break loop
		case <-done:
			done = nil
			stoppedByUs = true
			stopFeed()
			if busy, _ := turn.get(); busy {
				// Closing stdin mid-turn makes the CLI fail its pending
				// prompts and call the model again, which may run tools
				// that need no approval while we are going away. End the
				// requests (their cards say why), then abort the turn.
				w.endPending(pctx, sess.ID, "slackgate stopped before anyone answered", log)
				ictx, cancel := context.WithTimeout(pctx, shutdownInterrupt)
				if err := proc.Interrupt(ictx); err != nil {
					log.Warn().Err(err).Msg("interrupting the turn at shutdown")
				}
				cancel()
			}
			proc.Stop(pctx, "worker shutting down")
			break loop
		case <-proc.Exited():
			break loop
		}
	}
	stopIdle()
	stopFeed()
	feedWG.Wait()
	if fed != nil {
		leftovers = append(leftovers, *fed)
	}
	exit := proc.Wait()
	gone()
	_, lastErr := turn.get()
	// Exit code 1 after an error result (deny+interrupt, max turns) is how
	// the CLI reports that turn, not a crash.
	crashed := !stoppedByUs && !proc.stopRequested() && exit.Code != 0 && !(exit.Code == 1 && lastErr)
	log.Info().Int("code", exit.Code).Str("reason", exit.Reason).Bool("crashed", crashed).
		Int64("malformed_lines", proc.Stats().Malformed).Msg("claude exited")
	w.endPending(pctx, sess.ID, "the Claude process ended ("+exit.Reason+") while this request was waiting", log)
	return store.Event{Type: store.EventExit, Exit: &exit}, leftovers, crashed
}

// control acts on a control input for the session's live process. An
// interrupt with no turn running has nothing to stop and is only logged.
// Waiting for the CLI's acknowledgement holds up the session loop, bounded
// by cleanupTimeout and by the process's end.
func (w *Worker) control(ctx context.Context, proc *Process, turn *turnState, in store.Input, b *bridge, log zerolog.Logger) {
	log = log.With().Str("input_id", in.ID).Str("control", in.Control).Str("user", in.User).Logger()
	if in.Control != store.ControlInterrupt {
		log.Warn().Msg("unknown control input ignored")
		return
	}
	if busy, _ := turn.get(); !busy {
		log.Info().Msg("interrupt with no turn running: nothing to stop")
		return
	}
	turn.askStop(in.User)
	ictx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := proc.Interrupt(ictx); err != nil {
		turn.takeStop()
		log.Error().Err(err).Msg("interrupting claude")
		b.publish(context.WithoutCancel(ctx), store.Event{Type: store.EventError, Text: "Could not stop Claude's turn: " + err.Error()})
		return
	}
	log.Info().Msg("turn interrupted")
}

// process returns the live process of a session on this worker.
func (w *Worker) process(sessionID string) (*Process, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.live[sessionID]
	if !ok {
		return nil, fmt.Errorf("relay: session %s: %w", sessionID, ErrNoProcess)
	}
	return p, nil
}

// PID returns the process id of the session's claude process (for
// diagnostics, and for tests that kill it).
func (w *Worker) PID(sessionID string) (int, error) {
	p, err := w.process(sessionID)
	if err != nil {
		return 0, err
	}
	return p.PID(), nil
}

// StopSession stops the session's process (close stdin, then signals; see
// Process.Stop) and returns when it has exited. Its pending requests end;
// inputs still queued start a new process later.
func (w *Worker) StopSession(ctx context.Context, sessionID string) error {
	p, err := w.process(sessionID)
	if err != nil {
		return err
	}
	p.Stop(ctx, "stopped")
	return nil
}

// Interrupt aborts the session's current turn; its pending requests are
// withdrawn by Claude and end cancelled.
func (w *Worker) Interrupt(ctx context.Context, sessionID string) error {
	p, err := w.process(sessionID)
	if err != nil {
		return err
	}
	return p.Interrupt(ctx)
}

// SetPermissionMode changes the permission mode of the session's process.
func (w *Worker) SetPermissionMode(ctx context.Context, sessionID, mode string) error {
	if err := ValidMode(mode); err != nil {
		return err
	}
	p, err := w.process(sessionID)
	if err != nil {
		return err
	}
	return p.SetPermissionMode(ctx, mode)
}

// bridge connects one process to the store: its output becomes events, its
// can_use_tool requests become store requests.
type bridge struct {
	w    *Worker
	sess store.Session
	log  zerolog.Logger
	turn *turnState

	// toolNames and started are touched only on the reader goroutine.
	toolNames map[string]string
	started   bool
}

func (b *bridge) publish(ctx context.Context, e store.Event) {
	b.w.publish(ctx, b.sess.ID, e, b.log)
}

func (b *bridge) onMessage(ctx context.Context, m Message) {
	switch {
	case m.Result != nil:
		r := m.Result
		by, asked := b.turn.takeStop()
		b.turn.set(false, r.IsError)
		b.publish(ctx, store.Event{Type: store.EventResult, IsError: r.IsError, Result: &store.Result{
			Subtype: r.Subtype, IsError: r.IsError, Turns: r.NumTurns, DurationMS: r.DurationMS,
			CostUSD: r.TotalCostUSD, Text: r.Result, Errors: r.Errors,
		}})
		if asked && r.IsError {
			// After the result, so the thread reads "turn ended with an
			// error", then who stopped it. A turn that finished on its
			// own before the interrupt landed was not stopped.
			b.publish(ctx, store.Event{Type: store.EventInterrupted, Text: by})
		}
	case m.System != nil:
		if m.System.Subtype != "init" {
			return // status lines also follow set_permission_mode between turns
		}
		b.turn.set(true, false) // init opens every turn
		if !b.started {
			b.started = true
			// The CLI has taken the session id: from now on it must be resumed.
			if _, err := b.w.st.UpdateSession(ctx, b.sess.ID, func(s *store.Session) error {
				s.Started = true
				return nil
			}); err != nil {
				b.log.Error().Err(err).Msg("marking session started")
			}
		}
	case m.Assistant != nil:
		b.turn.set(true, false)
		if m.Assistant.ParentToolUseID != nil {
			return // a subagent's inner traffic: too chatty for the thread
		}
		blocks, err := m.Assistant.Message.Blocks()
		if err != nil {
			b.log.Debug().Err(err).Msg("assistant content")
			return
		}
		for _, bl := range blocks {
			switch bl.Type {
			case "text":
				if strings.TrimSpace(bl.Text) != "" {
					b.publish(ctx, store.Event{Type: store.EventAssistantText, Text: bl.Text})
				}
			case "tool_use":
				b.toolNames[bl.ID] = bl.Name
				b.publish(ctx, store.Event{Type: store.EventToolUse, Tool: bl.Name, Input: bl.Input})
			}
		}
	case m.User != nil:
		if m.User.IsReplay || m.User.ParentToolUseID != nil {
			return
		}
		blocks, err := m.User.Message.Blocks()
		if err != nil {
			return
		}
		for _, bl := range blocks {
			if bl.Type != "tool_result" {
				continue
			}
			b.publish(ctx, store.Event{Type: store.EventToolResult, Tool: b.toolNames[bl.ToolUseID],
				Text: capText(toolResultText(bl.Content), MaxResultText), IsError: bl.IsError})
		}
	}
}

// onCanUseTool records the request, waits for its decision (or its
// deadline) and returns the answer for Claude.
func (b *bridge) onCanUseTool(ctx context.Context, cliID string, c CanUseTool) (PermissionResult, bool) {
	w := b.w
	now := w.clock.Now()
	var deadline time.Time
	if w.cfg.RequestTimeout > 0 {
		deadline = now.Add(w.cfg.RequestTimeout)
	}
	req := NewRequest(b.sess.ID, cliID, c, now, deadline)
	log := b.log.With().Str("request_id", req.ID).Str("tool", c.ToolName).Logger()
	if err := w.st.CreateRequest(ctx, req); err != nil {
		log.Error().Err(err).Msg("recording control request")
		return Deny("slackgate could not record this permission request, so it was denied: "+err.Error(), false), true
	}
	log.Info().Str("kind", string(req.Kind)).Msg("waiting for a decision")

	// The deadline is enforced through store.Decide, so a person deciding at
	// the same moment and the expiry race fairly: exactly one wins, and the
	// winner is what WaitDecision returns.
	waitCtx, stopDeadline := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if w.cfg.RequestTimeout > 0 {
		timer := w.clock.NewTimer(w.cfg.RequestTimeout)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer timer.Stop()
			select {
			case <-timer.C():
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
				defer cancel()
				_, err := w.st.Decide(dctx, req.ID, store.Decision{Outcome: store.OutcomeExpired, At: w.clock.Now(),
					Message: ExpiredMessage(w.cfg.RequestTimeout)})
				if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
					log.Error().Err(err).Msg("expiring request")
				}
			case <-waitCtx.Done():
			}
		}()
	}
	d, err := w.st.WaitDecision(ctx, req.ID)
	stopDeadline()
	wg.Wait()
	if err != nil && ctx.Err() == nil {
		// The store failed us, not Claude: answer, or the CLI waits forever.
		log.Error().Err(err).Msg("waiting for the decision")
		return Deny("slackgate lost track of this permission request, so it was denied: "+err.Error(), false), true
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrWithdrawn) {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			d := store.Decision{Outcome: store.OutcomeCancelled, At: w.clock.Now(),
				Message: "Claude withdrew this request (the turn was interrupted or it was answered another way)"}
			if by, stopped := b.turn.stopper(); stopped {
				d.By, d.Message = by, "Claude's turn was stopped"
			}
			_, err := w.st.Decide(dctx, req.ID, d)
			if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
				log.Error().Err(err).Msg("cancelling withdrawn request")
			}
			log.Info().Msg("request withdrawn by claude")
		}
		// ErrStreamClosed: runProcess ends the pending requests with the exit reason.
		return PermissionResult{}, false
	}
	res, ok, err := ResultFor(req, d)
	if err != nil {
		log.Error().Err(err).Msg("building the answer")
		return Deny("slackgate could not build an answer from the decision: "+err.Error(), false), true
	}
	log.Info().Str("outcome", string(d.Outcome)).Str("by", d.By).Bool("sent", ok).Msg("request settled")
	return res, ok
}

// toolResultText flattens a tool_result's content (a string or blocks).
func toolResultText(raw []byte) string {
	m := APIMessage{Content: raw}
	blocks, err := m.Blocks()
	if err != nil {
		return string(raw)
	}
	var sb strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(bl.Text)
		}
	}
	return sb.String()
}

// capText shortens s to at most n bytes on a rune boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
