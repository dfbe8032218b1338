package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/slackgate/slackgate/store"
)

// What the external tests reach inside a Worker. Production acts on a
// session only through the store (a control input on its queue).

// ErrNoProcess: the session has no claude process on this worker.
var ErrNoProcess = errors.New("no running claude process for this session")

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

// PID returns the process id of the session's claude process, for tests
// that kill it.
func (w *Worker) PID(sessionID string) (int, error) {
	p, err := w.process(sessionID)
	if err != nil {
		return 0, err
	}
	return p.PID(), nil
}

// StopSession stops the session's process (see Process.Stop) and returns
// when it has exited, as a person stopping it from outside would.
func (w *Worker) StopSession(ctx context.Context, sessionID string) error {
	p, err := w.process(sessionID)
	if err != nil {
		return err
	}
	p.Stop(ctx, store.ExitStopped)
	return nil
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
	return p.conn.SetPermissionMode(ctx, mode)
}

// Silence stops the worker's heartbeat and nothing else, as a worker that
// hangs or is cut off from the store would: it keeps its sessions and
// processes until someone takes them over.
func (w *Worker) Silence() { w.silent.Store(true) }

// WaitSessions blocks until the worker's session counts (Sessions) satisfy
// ok; it wakes whenever a place changes, without polling.
func (w *Worker) WaitSessions(ctx context.Context, ok func(map[string]int) bool) error {
	for {
		w.cap.mu.Lock()
		changed := w.cap.changed
		w.cap.mu.Unlock()
		if ok(w.Sessions()) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
