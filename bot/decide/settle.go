package decide

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// Store is what settling needs of the store: Decide, which returns the
// settled request, or store.ErrAlreadyDecided with the request as the
// first decision left it, and Approve, which counts one approval of
// several.
type Store interface {
	Decide(ctx context.Context, id string, d store.Decision) (store.Request, error)
	Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error)
}

// Config is what a Decider is built from.
type Config struct {
	Store Store
	// Key signs every decision; its public half verifies sessions.
	Key   ed25519.PrivateKey
	Clock store.Clock
	// Policy is the team policy applied now (nil: none); Facts is a
	// request of a session as the policy reads it.
	Policy func() *policy.Policy
	Facts  func(store.Request, store.Session) policy.Request
	// People answers May's questions about people.
	People People
}

// Decider settles requests for one bot.
type Decider struct {
	st     Store
	key    ed25519.PrivateKey
	clock  store.Clock
	policy func() *policy.Policy
	facts  func(store.Request, store.Session) policy.Request
	people People
}

// New builds a Decider from c.
func New(c Config) *Decider {
	return &Decider{st: c.Store, key: c.Key, clock: c.Clock, policy: c.Policy, facts: c.Facts, people: c.People}
}

// Settle signs d, which settles r, over r as loaded and settles r with it.
// first, when not nil, runs with the signed decision just before the
// store sees it: a record that must exist before the decision does (a
// click claiming to show its outcome) is keyed by its signature. It
// returns the settled request; with store.ErrAlreadyDecided, the request
// as the decision that came first left it.
func (x *Decider) Settle(ctx context.Context, r store.Request, d store.Decision, first func(signed store.Decision)) (store.Request, error) {
	if err := store.SignDecision(x.key, r, &d); err != nil {
		return store.Request{}, fmt.Errorf("decide: sign the decision of %s: %w", r.ID, err)
	}
	if first != nil {
		first(d)
	}
	return x.st.Decide(ctx, r.ID, d)
}

// SettleUnsigned settles request id with d, a decision neither a person
// nor a standing decider made (an API request withdrawn or past its
// deadline): unsigned, as the worker's own expiries are, so it can only
// cancel, expire or end a request, never allow or deny one.
func (x *Decider) SettleUnsigned(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	if d.Outcome == store.OutcomeAllow || d.Outcome == store.OutcomeDeny {
		return store.Request{}, fmt.Errorf("decide: an unsigned %s of %s: %w", d.Outcome, id, store.ErrInvalid)
	}
	return x.st.Decide(ctx, id, d)
}
