package store_test

import (
	"encoding/hex"
	"testing"

	"github.com/slackgate/slackgate/store"
)

// TestDecisionDigestNamesOneSignedDecision: a card's state names the
// decision a click made by its signature, so an unsigned decision (nobody
// clicked it) has no name, and two signatures never share one.
func TestDecisionDigestNamesOneSignedDecision(t *testing.T) {
	if d := store.DecisionDigest(store.Decision{Outcome: store.OutcomeExpired}); d != "" {
		t.Errorf("an unsigned decision's digest = %q, want none", d)
	}
	a := store.DecisionDigest(store.Decision{Signature: []byte("signature a")})
	b := store.DecisionDigest(store.Decision{Signature: []byte("signature b")})
	if _, err := hex.DecodeString(a); err != nil || len(a) != 24 || a == b {
		t.Errorf("digests %q and %q; want 24 hex digits, one per signature", a, b)
	}
	if again := store.DecisionDigest(store.Decision{Outcome: store.OutcomeDeny, Signature: []byte("signature a")}); again != a {
		t.Errorf("the digest of one signature changed with the decision's other fields: %q, want %q", again, a)
	}
	if err := (store.CardMove{Step: store.CardClicked, Decision: a}).Validate(); err != nil {
		t.Errorf("a click's step naming a digest: %v", err)
	}
}
