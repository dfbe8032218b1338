package store

import (
	"context"
	"slices"
	"time"
)

// Input is a user message queued for a session: the first prompt or a
// follow-up from the thread, or a control input. A control input (Control
// set, Text empty) asks the worker to act on the session's process rather
// than send Claude a message; it travels the same queue as messages so it
// reaches the worker that owns the session, after what was queued before it.
type Input struct {
	ID        string    `json:"id"` // set by the store when empty; a bot sets it before signing
	SessionID string    `json:"session_id"`
	Text      string    `json:"text"`
	User      string    `json:"user,omitempty"` // Slack user id
	At        time.Time `json:"at"`
	// Control names the control input (ControlInterrupt, ControlSetMode);
	// "" for a message.
	Control string `json:"control,omitempty"`
	// Mode is the permission mode a ControlSetMode input asks for.
	Mode string `json:"mode,omitempty"`
	// Process (ControlSetMode) is the Session.Process the switch is
	// meant for: a worker switches only that process, and only within
	// ModeSwitchTTL of At, so a copy queued again later switches none.
	Process string `json:"process,omitempty"`
	// Signature is the Ed25519 signature of the bot that queued the input
	// (see SignInput); a worker delivers an input only when it verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Control inputs.
const (
	// ControlInterrupt aborts the session's running turn: Claude withdraws
	// its pending requests (they end OutcomeCancelled) and the turn ends
	// with an error result; the process stays for the next message. A
	// session with no live process has no turn to stop: the worker only
	// logs it, and starts no process for it.
	ControlInterrupt = "interrupt"
	// ControlSetMode switches the running claude process to the
	// permission mode Input.Mode names (the CLI's set_permission_mode);
	// the process after it starts in Session.PermissionMode again. A
	// session with no live process has nothing to switch: the worker
	// tells the thread so (EventRefused).
	ControlSetMode = "set_permission_mode"
)

// ModeSwitchTTL is how long after it was queued (Input.At) a mode switch
// may still be carried out.
const ModeSwitchTTL = 5 * time.Minute

// Modes are the permission modes a ControlSetMode input may ask for.
var Modes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// Validate checks in: it names its session, and a control input is a known
// one and carries no text. An empty ID and a zero At are allowed: the store
// fills them in (see Queue.Enqueue).
func (in Input) Validate() error {
	switch {
	case in.SessionID == "":
		return invalid("input without a session")
	case in.Control != "" && in.Control != ControlInterrupt && in.Control != ControlSetMode:
		return invalid("input for session %s with unknown control %q", in.SessionID, in.Control)
	case in.Control != "" && in.Text != "":
		return invalid("control input %q for session %s with text; a control input has none", in.Control, in.SessionID)
	case in.Control == ControlSetMode && !slices.Contains(Modes, in.Mode):
		return invalid("set_permission_mode input for session %s with unknown mode %q", in.SessionID, in.Mode)
	case in.Control != ControlSetMode && (in.Mode != "" || in.Process != ""):
		return invalid("input for session %s with a mode or process; only set_permission_mode has them", in.SessionID)
	}
	return nil
}

// Queue carries user inputs to workers. A session with queued input and no
// owner is "ready"; a worker claims it and becomes its owner until it
// releases it, so every input of a session reaches the one process running
// it, in order.
type Queue interface {
	// Enqueue appends an input to its session's inbox and marks the session
	// ready unless a worker owns it. It returns the input with its ID set
	// (when empty) and its At set (when zero, to the time of the call).
	// ErrInvalid if in fails Validate.
	Enqueue(ctx context.Context, in Input) (Input, error)
	// Claim blocks until a ready session exists, makes worker its owner and
	// returns its id, or returns ctx.Err(). A Claim that returns an error has
	// claimed nothing, even when ctx ends as the claim is made.
	Claim(ctx context.Context, worker string) (string, error)
	// NextInput blocks until the session's inbox has an input and removes it,
	// or returns ctx.Err(). ErrNotOwner if worker does not own the session.
	NextInput(ctx context.Context, sessionID, worker string) (Input, error)
	// Requeue puts an input the worker took with NextInput but could not
	// deliver back at the head of the session's inbox, so it is the next one
	// out (for this worker or, after Release, the next owner). ErrNotOwner if
	// worker does not own the session.
	Requeue(ctx context.Context, in Input, worker string) error
	// Release gives up ownership; a session with inputs left becomes ready
	// again. ErrNotOwner if worker does not own it.
	Release(ctx context.Context, sessionID, worker string) error
	// Owned lists the sessions a worker owns, so a worker restarting under
	// the same name can end and release what its previous life left behind.
	Owned(ctx context.Context, worker string) ([]string, error)
}
