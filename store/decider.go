package store

// DeciderKind is what settled a request.
type DeciderKind string

const (
	DecidedByPerson DeciderKind = "person" // a person at a card (or several, Decision.Approvals)
	DecidedByRule   DeciderKind = "rule"   // a policy rule, without a card
	DecidedByGrant  DeciderKind = "grant"  // a grant an approver kept, without a card
	DecidedByAnswer DeciderKind = "answer" // a remembered answer, without a card
	DecidedBySystem DeciderKind = "system" // a deadline, a withdrawal, an ended process, a refusal
)

// Decider is who settled a request, in one field: what a decision's
// signature (payload v2) names, what the metrics count and what tells a
// request that never had a card from one that may have.
type Decider struct {
	Kind DeciderKind `json:"kind"`
	// ID is the person's user id, the rule's name, the grant's or the
	// remembered answer's id; empty for the system.
	ID string `json:"id"`
	// Name is the display name of the person the decision is in the name
	// of (who decided, added the grant or remembered the answer).
	Name string `json:"name"`
	// PolicyDigest is the SHA-256 of the policy file a rule is in.
	PolicyDigest string `json:"policy_digest"`
}

// Decider is who settled the request with d, from the fields that name
// it. PolicyDigest is carried whatever the kind, so a digest added to any
// decision changes what its signature covers.
func (d Decision) Decider() Decider {
	var who Decider
	switch {
	case d.Remembered != "":
		who = Decider{Kind: DecidedByAnswer, ID: d.Remembered, Name: d.ByName}
	case d.Rule != "":
		who = Decider{Kind: DecidedByRule, ID: d.Rule}
	case d.Grant != "":
		who = Decider{Kind: DecidedByGrant, ID: d.Grant, Name: d.ByName}
	case d.By != "":
		who = Decider{Kind: DecidedByPerson, ID: d.By, Name: d.ByName}
	default:
		who = Decider{Kind: DecidedBySystem}
	}
	who.PolicyDigest = d.PolicyDigest
	return who
}

// oneDecider reports whether d names at most one of a remembered answer,
// a rule and a grant: Decider could not name two, so a decision that
// does is never signed (nor verifies) in payload v2.
func (d Decision) oneDecider() bool {
	n := 0
	for _, id := range []string{d.Remembered, d.Rule, d.Grant} {
		if id != "" {
			n++
		}
	}
	return n <= 1
}

// Standing reports whether the decider settles a request in place of its
// card (a rule, a grant, a remembered answer): such a request never had
// one.
func (k DeciderKind) Standing() bool {
	return k == DecidedByRule || k == DecidedByGrant || k == DecidedByAnswer
}
