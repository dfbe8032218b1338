package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// runSession owns a claimed session for one claude process, then hands it
// back (see handBack). Inputs taken from the queue but never delivered go
// back first in line and the session is released, so it is claimed again
// like any ready session: a new process is started only by Run, within
// capacity. victim, when not nil, is the idle process evicted to make room:
// it must be gone before this session's process starts.
func (w *Worker) runSession(ctx context.Context, sl, victim *slot) {
	defer w.cap.drop(sl)
	log := w.log.With().Str("session_id", sl.id).Logger()
	w.handBack(ctx, sl.id, w.session(ctx, sl, victim, log), log)
}

// session runs the claimed session's process, if it needs one, and says
// what is left to do with the session.
func (w *Worker) session(ctx context.Context, sl, victim *slot, log zerolog.Logger) sessionEnd {
	if victim != nil {
		select {
		case <-victim.exited:
		case <-ctx.Done():
			return sessionEnd{} // untouched: its input still waits in the inbox
		}
	}
	in, err := w.st.NextInput(ctx, sl.id, w.cfg.WorkerID)
	if err != nil {
		if ctx.Err() == nil {
			log.Error().Err(err).Msg("first input of claimed session")
		}
		return sessionEnd{state: store.SessionIdle}
	}
	// From here on a failure drops the input: put back, it would be
	// claimed and fail again at once.
	sess, err := w.st.GetSession(ctx, sl.id)
	if err != nil {
		log.Error().Err(err).Str("input_id", in.ID).Msg("loading session")
		return sessionEnd{state: store.SessionFailed}
	}
	if r := w.vetSession(sl.id, sess); r != nil {
		return w.refuseSession(ctx, sl.id, sess, r, log)
	}
	if refusal := w.refuseInput(ctx, sl.id, in, nil, log); refusal != nil {
		// Told once the session is handed back; inputs queued behind it
		// make it ready again.
		return sessionEnd{last: refusal}
	}
	if in.Control != "" {
		// Nothing runs here to act on, and starting claude just to stop it
		// would be absurd. Release without touching the session's state;
		// inputs queued behind this one make it ready again.
		log.Info().Str("input_id", in.ID).Str("control", in.Control).Str("user", in.User).
			Msg("control input for a session with no live process: nothing to do")
		if in.Control == store.ControlSetMode {
			// Refused, not an error: the session itself is fine.
			return sessionEnd{last: &store.Event{Type: store.EventRefused, Text: NoProcessForMode}}
		}
		return sessionEnd{}
	}
	run, err := w.startRun(ctx, sl, sess, in, log)
	if err != nil {
		return sessionEnd{state: store.SessionFailed, last: &store.Event{Type: store.EventError, Text: err.Error()}}
	}
	run.loop(ctx, in)
	return run.finish()
}

// processRun is one claude process for a session in slot sl, from its start
// until it has exited (idle timeout, eviction, crash, shutdown). Only the
// session loop touches its fields; the reader goroutine speaks to it
// through turn.
type processRun struct {
	worker *Worker
	sl     *slot
	sess   store.Session
	log    zerolog.Logger
	pctx   context.Context // outlives shutdown: handlers and stops run until the process is gone

	proc   *Process
	id     string // Session.Process: what a mode switch must name
	turn   *turnState
	bridge *bridge
	feeder *inputFeeder
	saver  *transcriptSaver

	idle      store.Timer   // runs between turns; nil during a turn
	leftovers []store.Input // follow-ups refused while the process gave way, oldest first
}

// startRun starts claude for sess, to be given first, marks the session
// running and tells so. When claude cannot start, the slot is dropped at
// once.
func (w *Worker) startRun(ctx context.Context, sl *slot, sess store.Session, first store.Input, log zerolog.Logger) (*processRun, error) {
	pctx := context.WithoutCancel(ctx)
	turn := newTurnState()
	b := newBridge(w, sl, sess, turn, log)
	saver := w.prepareTranscript(pctx, sess, b, log)
	opts := w.cfg.processOptions(sess)
	proc, err := StartProcess(pctx, opts, b.handlers(), log)
	if err != nil {
		w.cap.drop(sl)
		log.Error().Err(err).Msg("cannot start claude")
		return nil, err
	}
	log = log.With().Int("pid", proc.PID()).Logger()
	log.Info().Bool("resume", opts.Resume).Msg("claude started")
	id := uuid.NewString()
	if _, err := w.st.UpdateSession(pctx, sess.ID, func(s *store.Session) error {
		s.State, s.Worker, s.UpdatedAt, s.Process = store.SessionRunning, w.cfg.WorkerID, w.clock.Now(), id
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("marking session running")
	}
	b.publish(pctx, store.Event{Type: store.EventSessionStarted, Text: fmt.Sprintf("claude started (pid %d, resume %t)", proc.PID(), opts.Resume)})
	w.track(sess.ID, proc)
	return &processRun{worker: w, sl: sl, sess: sess, log: log, pctx: pctx, proc: proc, id: id, turn: turn, bridge: b,
		feeder: w.startFeeder(ctx, sess.ID, first.ID, log), saver: saver}, nil
}

// prepareTranscript restores the transcript of a session about to be
// resumed (see transcripts.restore) and returns the saver of the process
// that will run it. A resume with no transcript anywhere is told in the
// thread: the CLI will fail it.
func (w *Worker) prepareTranscript(ctx context.Context, sess store.Session, b *bridge, log zerolog.Logger) *transcriptSaver {
	var restored fileStamp
	if sess.Started {
		rctx, cancel := context.WithTimeout(ctx, transcriptSaveTimeout)
		stamp, found, err := w.tr.restore(rctx, sess.ID, log)
		cancel()
		switch {
		case err != nil:
			log.Error().Err(err).Msg("restoring the session's transcript")
		case !found:
			log.Warn().Msg("the session's transcript is neither on this worker nor in the store")
			b.publish(ctx, store.Event{Type: store.EventError, Text: NoTranscriptMessage})
		}
		restored = stamp
	}
	return newTranscriptSaver(ctx, w.tr, sess.ID, restored, log)
}

// loop sends first, then hands the process its queued inputs and follows
// its turns until it must stop or has exited.
func (r *processRun) loop(ctx context.Context, first store.Input) {
	r.send(first)
	for {
		select {
		case in := <-r.feeder.inputs:
			if !r.onInput(ctx, in) {
				return
			}
		case <-r.turn.notify:
			r.onTurnChange()
		case <-r.sl.evict:
			r.log.Info().Msg("stopping idle claude to make room for another session")
			r.stopBetweenTurns(store.ExitEvicted)
			return
		case <-r.idleC():
			r.idle = nil
			r.log.Info().Dur("idle_timeout", r.worker.cfg.IdleTimeout).Msg("stopping idle claude")
			r.worker.cap.markBusy(r.sl) // stopping: no longer a process that can give way
			r.stopBetweenTurns(store.ExitIdle)
			return
		case <-ctx.Done():
			r.shutdown()
			return
		case <-r.proc.Exited():
			return
		}
	}
}

// onInput delivers a queued input. It reports false when the process gives
// way instead, and the loop must end.
func (r *processRun) onInput(ctx context.Context, in store.Input) bool {
	if in.Control != "" {
		// Not a message: the idle timer keeps running.
		r.onControl(ctx, in)
		return true
	}
	if !r.worker.cap.markBusy(r.sl) {
		// The process was chosen to make room just before this follow-up
		// came: it goes back to the queue, and the session is claimed
		// again within capacity.
		r.leftovers = append(r.leftovers, in)
		r.log.Info().Str("input_id", in.ID).Msg("stopping idle claude to make room; follow-up goes back to the queue")
		r.stopBetweenTurns(store.ExitEvicted)
		return false
	}
	r.stopIdle()
	r.send(in)
	return true
}

func (r *processRun) send(in store.Input) {
	r.turn.begin(in.User)
	if err := r.proc.Send(r.pctx, in.Text); err != nil {
		r.log.Error().Err(err).Str("input_id", in.ID).Msg("sending input to claude")
	}
}

// onTurnChange follows what the reader saw: during a turn the process
// keeps its place; between turns the idle timer runs and it may give way.
func (r *processRun) onTurnChange() {
	if inTurn, _ := r.turn.state(); inTurn {
		r.stopIdle()
		r.worker.cap.markBusy(r.sl) // false when evicting: the evict case stops it
	} else if r.idle == nil {
		r.idle = r.worker.clock.NewTimer(r.worker.cfg.IdleTimeout)
		r.worker.cap.markIdle(r.sl)
		r.saver.afterTurn(r.turn.lastMessage())
	}
}

// idleC fires when the process has been idle for IdleTimeout; nil (never)
// during a turn.
func (r *processRun) idleC() <-chan time.Time {
	if r.idle == nil {
		return nil
	}
	return r.idle.C()
}

func (r *processRun) stopIdle() {
	if r.idle != nil {
		r.idle.Stop()
		r.idle = nil
	}
}

// onControl acts on a control input for the live process. An interrupt
// with no turn running has nothing to stop and is only logged. Waiting for
// the CLI's acknowledgement holds up the session loop, bounded by
// cleanupTimeout and by the process's end.
func (r *processRun) onControl(ctx context.Context, in store.Input) {
	log := r.log.With().Str("input_id", in.ID).Str("control", in.Control).Str("user", in.User).Logger()
	if in.Control == store.ControlSetMode {
		r.setMode(ctx, in, log)
		return
	}
	if in.Control != store.ControlInterrupt {
		log.Warn().Msg("unknown control input ignored")
		return
	}
	if inTurn, _ := r.turn.state(); !inTurn {
		log.Info().Msg("interrupt with no turn running: nothing to stop")
		return
	}
	r.turn.askStop(in.User)
	ictx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := r.proc.Interrupt(ictx); err != nil {
		r.turn.takeStop()
		log.Error().Err(err).Msg("interrupting claude")
		r.bridge.publish(context.WithoutCancel(ctx), store.Event{Type: store.EventError, Text: "Could not stop Claude's turn: " + err.Error()})
		return
	}
	log.Info().Msg("turn interrupted")
}

// stopBetweenTurns is the clean stop of a process between turns (idle
// timeout or eviction): the session is released idle and resumed by its
// next input.
func (r *processRun) stopBetweenTurns(cause store.ExitCause) {
	r.feeder.halt() // an input arriving now stays in the queue
	r.proc.Stop(r.pctx, cause)
}

// shutdown stops the process because the worker stops.
func (r *processRun) shutdown() {
	r.feeder.halt()
	if inTurn, _ := r.turn.state(); inTurn {
		// Closing stdin mid-turn makes the CLI fail its pending prompts
		// and call the model again, which may run tools that need no
		// approval while we are going away. End the requests (their cards
		// say why), then abort the turn.
		r.worker.endPending(r.pctx, r.sess.ID, "slackgate stopped before anyone answered", r.log)
		ictx, cancel := context.WithTimeout(r.pctx, shutdownInterrupt)
		if err := r.proc.Interrupt(ictx); err != nil {
			r.log.Warn().Err(err).Msg("interrupting the turn at shutdown")
		}
		cancel()
	}
	r.proc.Stop(r.pctx, store.ExitShutdown)
}

// finish waits for the process to exit, frees its place, ends its pending
// requests and saves its transcript, and says what is left to do with the
// session.
func (r *processRun) finish() sessionEnd {
	r.stopIdle()
	leftovers := append(r.leftovers, r.feeder.stop()...)
	exit := r.proc.Wait()
	r.worker.untrack(r.sess.ID, r.proc)
	r.worker.cap.drop(r.sl) // a session waiting for this place starts only now
	_, lastFailed := r.turn.state()
	crashed := crashed(exit, r.proc.stopRequested(), lastFailed)
	if exit.Cause == "" {
		exit.Cause = store.ExitFinished
		if crashed {
			exit.Cause = store.ExitCrashed
		}
	}
	r.log.Info().Int("code", exit.Code).Str("cause", string(exit.Cause)).Str("reason", exit.Reason).
		Int64("malformed_lines", r.proc.Stats().Malformed).Msg("claude exited")
	r.worker.endPending(r.pctx, r.sess.ID, "the Claude process ended ("+exit.Reason+") while this request was waiting", r.log)
	r.saver.final() // after the cards are settled: a slow store delays only the hand-back

	last := &store.Event{Type: store.EventExit, Exit: &exit}
	if kept := r.messagesOnly(leftovers); len(kept) > 0 {
		// Messages arrived as the process ended: they go back, and the
		// session is queued again, even after a crash (the exit tells it).
		return sessionEnd{state: store.SessionQueued, last: last, requeue: kept}
	}
	if crashed {
		return sessionEnd{state: store.SessionFailed, last: last}
	}
	return sessionEnd{state: store.SessionIdle, last: last}
}

// crashed says whether a process ended by failing on its own. One we
// stopped did not crash, and exit code 1 after an error result
// (deny+interrupt, max turns) is how the CLI reports that turn.
func crashed(exit store.Exit, stopped, lastTurnFailed bool) bool {
	if stopped || exit.Code == 0 {
		return false
	}
	return exit.Code != 1 || !lastTurnFailed
}

// messagesOnly drops control inputs from leftovers: the process they were
// meant for is gone, so there is nothing to act on.
func (r *processRun) messagesOnly(leftovers []store.Input) []store.Input {
	var kept []store.Input
	for _, l := range leftovers {
		if l.Control != "" {
			r.log.Info().Str("input_id", l.ID).Str("control", l.Control).Str("user", l.User).
				Msg("control input arrived as the process ended: nothing to do")
			continue
		}
		kept = append(kept, l)
	}
	return kept
}

// inputFeeder takes a session's queued inputs in order and hands them to
// the session loop, on a goroutine it owns until stop. It hands over only
// inputs the worker admits (see admitInput), each id once in the life of
// the process: a signed input queued again by someone with store access is
// dropped as a replay. After the process ends, a copy of an input it was
// given can still be queued and run once more, in the same session and the
// same person's name (the signature binds it to both): that repeats words
// a person sent, with the session's signed mode and directory, and what
// needs a person's decision still waits for one; keeping every delivered
// id would need state a store writer could erase anyway.
type inputFeeder struct {
	inputs <-chan store.Input
	cancel context.CancelFunc
	wg     sync.WaitGroup
	taken  *store.Input // taken from the queue but not handed over; read after wg.Wait
}

func (w *Worker) startFeeder(ctx context.Context, sessionID, firstID string, log zerolog.Logger) *inputFeeder {
	ctx, cancel := context.WithCancel(ctx)
	inputs := make(chan store.Input)
	f := &inputFeeder{inputs: inputs, cancel: cancel}
	delivered := map[string]bool{firstID: true} // the feeder goroutine's alone
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			in, err := w.st.NextInput(ctx, sessionID, w.cfg.WorkerID)
			if err != nil {
				if ctx.Err() == nil {
					log.Error().Err(err).Msg("next input")
				}
				return
			}
			if !w.admitInput(ctx, sessionID, in, delivered, log) {
				continue
			}
			delivered[in.ID] = true
			select {
			case inputs <- in:
			case <-ctx.Done():
				f.taken = &in
				return
			}
		}
	}()
	return f
}

// halt stops taking inputs without waiting: one arriving from now on stays
// in the queue.
func (f *inputFeeder) halt() { f.cancel() }

// stop halts the feeder, waits for its goroutine and returns the input it
// took but could not hand over, if any.
func (f *inputFeeder) stop() []store.Input {
	f.cancel()
	f.wg.Wait()
	if f.taken == nil {
		return nil
	}
	in := *f.taken
	f.taken = nil
	return []store.Input{in}
}
