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
	MaxSessions    int           // processes at once (0 = DefaultMaxSessions)
	IdleTimeout    time.Duration // a process idle this long after a result stops (0 = DefaultIdleTimeout)
	WorkerID       string        // owner name in the store; a restart under the same name recovers ("" = hostname)
	Env            []string      // claude's environment (nil = os.Environ())
	Clock          Clock         // nil = RealClock
	StopGrace      time.Duration // see ProcessOptions
	KillGrace      time.Duration
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
	st    store.Store
	log   zerolog.Logger
	clock Clock

	malformed atomic.Int64

	mu   sync.Mutex
	live map[string]*Process
}

// NewWorker validates cfg.
func NewWorker(cfg Config, st store.Store, log zerolog.Logger) (*Worker, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	return &Worker{cfg: cfg, st: st, log: log.With().Str("worker", cfg.WorkerID).Logger(), clock: cfg.Clock,
		live: make(map[string]*Process)}, nil
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
// claims and runs sessions, at most MaxSessions at once, until ctx ends.
// It stops its processes and returns nil on cancellation.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.recoverOwned(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, w.cfg.MaxSessions)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		id, err := w.st.Claim(ctx, w.cfg.WorkerID)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: claim: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			w.runSession(ctx, id)
		}()
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

// runSession owns a claimed session until it goes idle or fails, then
// releases it. The session's final state is stored and the session released
// before the last event (exit or error) is published, so whoever reacts to
// that event reads the final state.
func (w *Worker) runSession(ctx context.Context, id string) {
	log := w.log.With().Str("session_id", id).Logger()
	released := false
	finish := func(state store.SessionState) {
		released = true
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if _, err := w.st.UpdateSession(cctx, id, func(s *store.Session) error {
			s.State, s.Worker, s.UpdatedAt = state, "", w.clock.Now()
			return nil
		}); err != nil {
			log.Error().Err(err).Msg("updating session state")
		}
		if err := w.st.Release(cctx, id, w.cfg.WorkerID); err != nil {
			log.Error().Err(err).Msg("releasing session")
		}
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
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := w.st.Release(cctx, id, w.cfg.WorkerID); err != nil {
			log.Error().Err(err).Msg("releasing session")
		}
		return
	}
	next := &in
	for next != nil {
		sess, err := w.st.GetSession(ctx, id)
		if err != nil {
			log.Error().Err(err).Msg("loading session")
			finish(store.SessionFailed)
			return
		}
		last, leftover, failed := w.runProcess(ctx, sess, *next, log)
		if leftover != nil && leftover.Control != "" {
			// The process it was meant for is gone: there is nothing to act on.
			log.Info().Str("input_id", leftover.ID).Str("control", leftover.Control).Str("user", leftover.User).
				Msg("control input arrived as the process ended: nothing to do")
			leftover = nil
		}
		if ctx.Err() != nil && leftover != nil {
			// Shutting down: the input was taken from the queue but not
			// delivered. Put it back first in line; finish releases the
			// session, so the next owner starts with it.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			if err := w.st.Requeue(cctx, *leftover, w.cfg.WorkerID); err != nil {
				log.Error().Err(err).Str("input_id", leftover.ID).Msg("input lost at shutdown: cannot put it back in the queue")
			}
			cancel()
			leftover = nil
		}
		if leftover == nil {
			state := store.SessionIdle
			if failed {
				state = store.SessionFailed
			}
			finish(state)
		}
		w.publish(context.WithoutCancel(ctx), sess.ID, last, log)
		next = leftover
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

// runProcess runs one claude process for sess, starting with first, until it
// exits (idle timeout, crash, shutdown). It returns the event that tells how
// it ended (exit, or error when it could not start) for the caller to
// publish, an input that was taken from the queue but not delivered (to
// start the next process with), and whether the session failed.
func (w *Worker) runProcess(ctx context.Context, sess store.Session, first store.Input, log zerolog.Logger) (store.Event, *store.Input, bool) {
	pctx := context.WithoutCancel(ctx) // handlers outlive shutdown until the process is gone
	turn := &turnState{busy: true, notify: make(chan struct{}, 1)}
	b := &bridge{w: w, sess: sess, log: log, turn: turn, toolNames: make(map[string]string), started: sess.Started}
	opts := ProcessOptions{
		Bin: w.cfg.ClaudeBin, SessionID: sess.ID, Resume: sess.Started, WorkDir: sess.WorkDir,
		PermissionMode: orDefault(sess.PermissionMode, w.cfg.PermissionMode),
		Model:          orDefault(sess.Model, w.cfg.Model),
		ExtraArgs:      w.cfg.ExtraArgs, Env: w.cfg.Env, StopGrace: w.cfg.StopGrace, KillGrace: w.cfg.KillGrace,
	}
	proc, err := StartProcess(pctx, opts, ConnHandlers{OnMessage: b.onMessage, OnCanUseTool: b.onCanUseTool}, log)
	if err != nil {
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
	defer func() {
		// Move the process's count into the total in one step, so
		// MalformedLines never counts it twice or not at all.
		w.mu.Lock()
		delete(w.live, sess.ID)
		w.malformed.Add(proc.Stats().Malformed)
		w.mu.Unlock()
	}()

	// The feeder hands queued inputs to the loop in order. An input it took
	// from the queue but could not hand over comes back as leftover.
	feedCtx, stopFeed := context.WithCancel(ctx)
	inputs := make(chan store.Input)
	var leftover *store.Input
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
				leftover = &in
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
loop:
	for {
		select {
		case in := <-inputs:
			if in.Control != "" {
				// Not a message: the idle timer keeps running.
				w.control(ctx, proc, turn, in, b, log)
				continue
			}
			stopIdle()
			send(in)
		case <-turn.notify:
			if busy, _ := turn.get(); busy {
				stopIdle()
			} else if idle == nil {
				idle = w.clock.NewTimer(w.cfg.IdleTimeout)
				idleC = idle.C()
			}
		case <-idleC:
			idle, idleC = nil, nil
			log.Info().Dur("idle_timeout", w.cfg.IdleTimeout).Msg("stopping idle claude")
			stoppedByUs = true
			stopFeed() // an input arriving now is handed to the next process
			proc.Stop(pctx, "idle")
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
	exit := proc.Wait()
	_, lastErr := turn.get()
	// Exit code 1 after an error result (deny+interrupt, max turns) is how
	// the CLI reports that turn, not a crash.
	crashed := !stoppedByUs && !proc.stopRequested() && exit.Code != 0 && !(exit.Code == 1 && lastErr)
	log.Info().Int("code", exit.Code).Str("reason", exit.Reason).Bool("crashed", crashed).
		Int64("malformed_lines", proc.Stats().Malformed).Msg("claude exited")
	w.endPending(pctx, sess.ID, "the Claude process ended ("+exit.Reason+") while this request was waiting", log)
	return store.Event{Type: store.EventExit, Exit: &exit}, leftover, crashed
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
