package store

import (
	"context"
	"slices"
	"time"
)

// A request that needs someone other than the person who started its
// session reaches further than its card: announcements (copies of it with
// the same buttons, in a notify channel or a person's DM), one reminder,
// and one escalation to more people. Reach records all of it on the
// request, so any bot replica can settle every copy and no step happens
// twice, whichever replica or restart comes to it.

// ReachStep is a one-time step of reaching people for a pending request.
type ReachStep string

const (
	// StepReminded: the card's thread and every copy were told, once,
	// that the request still waits and who may decide it.
	StepReminded ReachStep = "reminded"
	// StepEscalated: the request was announced to more people
	// (ReachMark.To), who may decide it from then on.
	StepEscalated ReachStep = "escalated"
)

// Valid reports whether st is a known step.
func (st ReachStep) Valid() bool { return st == StepReminded || st == StepEscalated }

// Reach is how far a request reached beyond its card: its copies and the
// steps taken, each at most once.
type Reach struct {
	// Copies are the announcements of the request: messages with the
	// card's buttons, shown settled once the request is.
	Copies []MessageRef `json:"copies,omitempty"`
	// Reminded and Escalated are when each step was taken (zero: not yet).
	Reminded  time.Time `json:"reminded,omitzero"`
	Escalated time.Time `json:"escalated,omitzero"`
	// EscalatedTo are the user and user group ids it was escalated to.
	EscalatedTo []string `json:"escalated_to,omitempty"`
}

// IsZero reports whether the request reached nobody beyond its card.
func (r Reach) IsZero() bool {
	return len(r.Copies) == 0 && r.Reminded.IsZero() && r.Escalated.IsZero() && len(r.EscalatedTo) == 0
}

// Done reports when step was taken (zero: not yet).
func (r Reach) Done(step ReachStep) time.Time {
	if step == StepEscalated {
		return r.Escalated
	}
	return r.Reminded
}

// HasCopy reports whether ref is one of the request's copies.
func (r Reach) HasCopy(ref MessageRef) bool { return slices.Contains(r.Copies, ref) }

// ReachMark is one step MarkReach records.
type ReachMark struct {
	Step ReachStep `json:"step"`
	At   time.Time `json:"at"`
	To   []string  `json:"to,omitempty"` // StepEscalated: who it reached
}

// Validate checks m as MarkReach takes it: a known step and a time.
func (m ReachMark) Validate() error {
	switch {
	case !m.Step.Valid():
		return invalid("unknown reach step %q", m.Step)
	case m.At.IsZero():
		return invalid("%s mark without a time", m.Step)
	case m.Step != StepEscalated && len(m.To) > 0:
		return invalid("%s mark naming people; only an escalation does", m.Step)
	}
	return nil
}

// Apply records m in r (the backends' one rule of what a mark changes).
func (r *Reach) Apply(m ReachMark) {
	if m.Step == StepEscalated {
		r.Escalated, r.EscalatedTo = m.At, slices.Clone(m.To)
		return
	}
	r.Reminded = m.At
}

// Reaches records how a request reached people beyond its card.
type Reaches interface {
	// AddCopy records ref as a copy of request id (once however often it
	// is added) and reports whether the request was still pending then,
	// atomically with the write, so a copy posted while the request was
	// settled is shown settled by its poster. ErrNotFound for an unknown
	// id, ErrInvalid for an empty ref.
	AddCopy(ctx context.Context, id string, ref MessageRef) (pending bool, err error)
	// MarkReach records that m.Step was taken for request id and reports
	// whether this call took it: false when the step was taken before (by
	// anyone, across processes) or the request is settled. Of concurrent
	// callers with one step, exactly one sees true. ErrNotFound for an
	// unknown id; ErrInvalid when m fails Validate.
	MarkReach(ctx context.Context, id string, m ReachMark) (bool, error)
}
