package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// Worker claims sessions from the store and runs one claude process per
// session, bridging its control requests to the store and decisions back.
type Worker struct {
	cfg   Config
	st    Store
	log   zerolog.Logger
	clock store.Clock
	cap   *capacity
	tr    *transcripts
	// home is the home of the CLI's user, recorded on every request.
	home string

	// mu guards live, the map of running processes. An exited process's
	// count of malformed lines moves into malformed under it, so
	// MalformedLines counts it once. Capacity has a lock of its own.
	mu        sync.Mutex
	live      map[string]*Process // by session id
	malformed atomic.Int64        // undecodable stdout lines of exited processes

	// endedHere holds the ids of requests this worker ended while their
	// bridge still waited (see endPending): the only "ended" a waiting
	// bridge may take for real. Each entry is taken once by its bridge.
	endedHere sync.Map

	// silent stops the heartbeat (tests: a worker that is lost without
	// shutting down).
	silent atomic.Bool
}

// NewWorker validates cfg.
func NewWorker(cfg Config, st Store, log zerolog.Logger) (*Worker, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	env := childEnv(cfg.claudeEnv)
	tr := &transcripts{st: st, place: placeOf(env, cfg.User), max: cfg.MaxTranscriptBytes}
	if cfg.User != nil {
		env = cfg.User.env(env)
	}
	return &Worker{cfg: cfg, st: st, log: log.With().Str("worker", cfg.WorkerID).Logger(), clock: cfg.Clock,
		cap: newCapacity(cfg.MaxSessions), tr: tr, live: make(map[string]*Process), home: homeIn(env)}, nil
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

// Sessions counts the sessions this worker holds a claude process for, by
// state (SessionsRunning, SessionsWaiting, SessionsIdle), as of now: a
// gauge read when scraped. Sessions queued for a worker are the store's
// to count.
func (w *Worker) Sessions() map[string]int { return w.cap.counts() }

// Run recovers what a previous life under the same WorkerID left, then
// claims and runs sessions until ctx ends. At most MaxSessions claude
// processes run at once, but a process waiting between turns does not hold
// its place against a new session: when the worker is full and one of its
// processes is idle it still claims, and the longest-idle process is
// stopped (as the idle timeout would) before the new session starts. It
// stops its processes and returns nil on cancellation.
func (w *Worker) Run(ctx context.Context) error {
	// Alive before owning anything, so no reaper takes a session this
	// worker is about to recover or claim.
	if err := w.st.Heartbeat(ctx, w.cfg.WorkerID, w.cfg.WorkerTimeout); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("relay: heartbeat: %w", err)
	}
	if err := w.recoverOwned(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.liveness(ctx)
	}()
	for {
		if err := w.cap.waitRoom(ctx, true); err != nil {
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
		sl, victim := w.cap.admit(id)
		if sl == nil {
			// Every process turned busy between the claim and now. Give
			// the session back so another worker, or this one later, runs it.
			log := w.log.With().Str("session_id", id).Logger()
			log.Debug().Msg("claimed a session but every process turned busy: releasing it")
			w.release(ctx, id, log)
			continue
		}
		if victim != nil {
			w.log.Info().Str("session_id", victim.id).Str("for_session", id).Msg("stopping the longest-idle claude to make room")
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
		if w.cap.waitRoom(claimCtx, false) == nil {
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
		err := w.giveUpLeftover(ctx, id, "the slackgate worker restarted while this request was waiting", log)
		if errors.Is(err, store.ErrNotOwner) {
			continue // taken over by another worker meanwhile: it ends them
		}
		if err != nil {
			return err
		}
		// A decision stored just before the crash may never have reached
		// Claude (its card says what was decided, not that it ran): say so
		// in the thread, after the release, like a takeover does.
		w.publish(ctx, id, store.Event{Type: store.EventError, Text: RestartedMessage}, log)
	}
	return nil
}

// RestartedMessage is what a session's thread is told when a worker
// restarting under the same WORKER_ID gives up the session its previous
// run left.
const RestartedMessage = "the slackgate worker restarted and stopped Claude with it; an answer given in the last moments " +
	"may not have reached Claude. The next message resumes the session"

// giveUpLeftover ends the pending requests of a session whose process is
// gone with its worker (a previous life of this one, or a lost worker this
// one took over), marks it idle and releases it; inputs still queued make
// it ready, so the next worker resumes it.
func (w *Worker) giveUpLeftover(ctx context.Context, id, reason string, log zerolog.Logger) error {
	w.endPending(ctx, id, reason, log)
	if _, err := w.st.UpdateSession(ctx, id, func(s *store.Session) error {
		s.State, s.Worker = store.SessionIdle, ""
		return nil
	}); err != nil && !errors.Is(err, store.ErrNotFound) {
		log.Error().Err(err).Msg("marking recovered session idle")
	}
	if err := w.st.Release(ctx, id, w.cfg.WorkerID); err != nil {
		return fmt.Errorf("relay: release %s: %w", id, err)
	}
	return nil
}

// track makes proc the session's live process.
func (w *Worker) track(sessionID string, proc *Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live[sessionID] = proc
}

// untrack forgets the session's exited process, moving its count of
// malformed lines into the total in the same step, so MalformedLines never
// counts it twice or not at all.
func (w *Worker) untrack(sessionID string, proc *Process) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.live, sessionID)
	w.malformed.Add(proc.Stats().Malformed)
}

// sessionEnd is what is left to do with a session once this worker is
// done with it.
type sessionEnd struct {
	state   store.SessionState // "" leaves the state as it is
	last    *store.Event       // how the process ended (exit or error), nil when it never ran
	requeue []store.Input      // taken from the queue but never delivered, oldest first
}

// handBack gives a session up after its process. The state is stored
// first, so whoever reacts to the last event reads it. Then the order of
// the last event and the release depends on whether the session is ready
// again: with inputs put back it is claimable from the release on, so the
// exit is published before, and is never told after the next process's
// start; otherwise the release comes first, so whoever reads the exit
// finds the session no longer owned.
func (w *Worker) handBack(ctx context.Context, id string, end sessionEnd, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	readyAgain := len(end.requeue) > 0
	if readyAgain {
		w.requeue(ctx, end.requeue, log)
	}
	if end.state != "" {
		w.setState(ctx, id, end.state, log)
	}
	if !readyAgain {
		w.release(ctx, id, log)
	}
	if end.last != nil {
		w.publish(ctx, id, *end.last, log)
	}
	if readyAgain {
		w.release(ctx, id, log)
	}
}

// release gives up ownership of a session, logging a failure.
func (w *Worker) release(ctx context.Context, id string, log zerolog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := w.st.Release(cctx, id, w.cfg.WorkerID); err != nil {
		log.Error().Err(err).Msg("releasing session")
	}
}

var errTakenOver = errors.New("relay: the session runs on another worker")

// setState stores a session's state after its process, with no owner.
func (w *Worker) setState(ctx context.Context, id string, state store.SessionState, log zerolog.Logger) {
	_, err := w.st.UpdateSession(ctx, id, func(s *store.Session) error {
		if s.Worker != "" && s.Worker != w.cfg.WorkerID {
			return errTakenOver
		}
		// The process is gone, and with it a mode switched from Slack:
		// the next one starts in the session's own mode, under a name of
		// its own.
		s.State, s.Worker, s.UpdatedAt, s.LiveMode, s.Process = state, "", w.clock.Now(), "", ""
		return nil
	})
	switch {
	case errors.Is(err, errTakenOver):
		// This worker was counted lost meanwhile; the session's state is
		// its new owner's to tell.
		log.Warn().Msg("the session was taken over by another worker: leaving its state alone")
	case err != nil:
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
		w.endedHere.Store(r.ID, struct{}{})
		_, err := w.st.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeEnded, At: w.clock.Now(), Message: reason})
		if err != nil {
			// Not ended by us after all (a person or the deadline was
			// first), so no bridge will take the mark.
			w.endedHere.Delete(r.ID)
			if !errors.Is(err, store.ErrAlreadyDecided) {
				log.Error().Err(err).Str("request_id", r.ID).Msg("ending pending request")
			}
		}
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
