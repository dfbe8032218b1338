package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// liveness beats every third of WorkerTimeout, so two beats may be lost
// before the worker counts as lost, and after each beat looks for lost
// workers and takes their sessions over. Every worker reaps: the takeover
// is atomic in the store, so racing reapers do each session once.
func (w *Worker) liveness(ctx context.Context) {
	every := w.cfg.WorkerTimeout / 3
	for {
		t := w.clock.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if !w.silent.Load() {
			if err := w.st.Heartbeat(ctx, w.cfg.WorkerID, w.cfg.WorkerTimeout); err != nil && ctx.Err() == nil {
				w.log.Error().Err(err).Msg("heartbeat")
			}
		}
		if err := w.reap(ctx); err != nil && ctx.Err() == nil {
			w.log.Error().Err(err).Msg("looking for lost workers")
		}
	}
}

// LostMessage is what the pending requests of a lost worker's sessions
// end with.
func LostMessage(timeout time.Duration) string {
	return fmt.Sprintf("the session's worker was lost (no heartbeat for %s)", timeout)
}

// reap takes over every session of every lost worker and gives it up as a
// restart would: its requests end, it goes idle, and it is released.
func (w *Worker) reap(ctx context.Context) error {
	dead, err := w.st.DeadWorkers(ctx)
	if err != nil {
		return err
	}
	for _, lost := range dead {
		if lost == w.cfg.WorkerID {
			continue // our own beat failed; the next one restores it
		}
		ids, err := w.st.Owned(ctx, lost)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := w.takeOver(ctx, id, lost); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Worker) takeOver(ctx context.Context, id, lost string) error {
	log := w.log.With().Str("session_id", id).Str("lost_worker", lost).Logger()
	err := w.st.TakeOver(ctx, id, lost, w.cfg.WorkerID)
	if errors.Is(err, store.ErrNotOwner) {
		return nil // another reaper was first, or the worker is back
	}
	if err != nil {
		return err
	}
	log.Warn().Dur("worker_timeout", w.cfg.WorkerTimeout).Msg("took over a session of a lost worker")
	if err := w.giveUpLeftover(ctx, id, LostMessage(w.cfg.WorkerTimeout), log); err != nil {
		return err
	}
	// Told after the release, so whoever reads it finds the session free
	// for the next message.
	w.publish(ctx, id, store.Event{Type: store.EventError, Text: LostMessage(w.cfg.WorkerTimeout) +
		"; the next message resumes the session on another worker"}, log)
	return nil
}

// ownsSession reports whether this worker still owns the session; on an
// error it says yes, so a doubt never turns into acceptance.
func (w *Worker) ownsSession(ctx context.Context, id string, log zerolog.Logger) bool {
	ids, err := w.st.Owned(ctx, w.cfg.WorkerID)
	if err != nil {
		log.Error().Err(err).Msg("checking ownership")
		return true
	}
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
