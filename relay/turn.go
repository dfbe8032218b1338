package relay

import (
	"slices"
	"sync"
)

// turnState is what the reader goroutine tells the session loop: whether a
// turn is running, so the idle timer only runs between turns, and who
// asked to stop it.
type turnState struct {
	mu         sync.Mutex
	inTurn     bool
	lastFailed bool          // the last turn's result was an error
	notify     chan struct{} // capacity 1: "look at the state again"

	// stopBy is who asked to interrupt the running turn (a user id, ""
	// when unknown); stopAsked is true from the interrupt until the
	// turn's result. stopBy outlives the result until the next message is
	// sent, so requests Claude withdraws late are still attributed.
	stopBy    string
	stopAsked bool

	// lastUUID is the uuid of the newest top-level assistant message: the
	// line that shows the transcript file holds the whole turn.
	lastUUID string

	// by are the people whose messages the running turn answers: the one
	// that began it and any sent while it ran.
	by []string
}

// newTurnState starts in a turn: the process is given its first message
// as soon as it starts.
func newTurnState() *turnState {
	return &turnState{inTurn: true, notify: make(chan struct{}, 1)}
}

// begin marks a message by user sent: a new turn, not stopped by anyone
// yet (or, while a turn runs, one more person it answers). A stop still
// waiting for its turn's result is kept: a message sent right after Stop
// must not lose the "stopped by" of the turn it aborted.
func (t *turnState) begin(user string) {
	t.mu.Lock()
	if !t.stopAsked {
		t.stopBy = ""
	}
	if !t.inTurn {
		t.by = nil
	}
	if user != "" && !slices.Contains(t.by, user) {
		t.by = append(t.by, user)
	}
	t.mu.Unlock()
	t.set(true, false)
}

// askers are the people whose messages the running turn answers.
func (t *turnState) askers() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.by)
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

// set records whether a turn runs; failed is the result of a turn that
// ended. The session loop is told to look again.
func (t *turnState) set(inTurn, failed bool) {
	t.mu.Lock()
	t.inTurn = inTurn
	if !inTurn {
		t.lastFailed = failed
	}
	t.mu.Unlock()
	select {
	case t.notify <- struct{}{}:
	default:
	}
}

// noteMessage records the uuid of a top-level assistant message.
func (t *turnState) noteMessage(uuid string) {
	t.mu.Lock()
	t.lastUUID = uuid
	t.mu.Unlock()
}

// lastMessage is the uuid noteMessage recorded last.
func (t *turnState) lastMessage() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastUUID
}

// state reports whether a turn runs and whether the last one failed.
func (t *turnState) state() (inTurn, lastFailed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inTurn, t.lastFailed
}
