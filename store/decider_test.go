package store_test

import (
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// A decision an earlier release signed (payload v1) is still carried
// out: the worker that verifies it may run a release ahead of the bot
// that signed it, or the decision was made before an upgrade.
func TestADecisionSignedInPayloadV1StillVerifies(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	d.Signature = ed25519.Sign(priv, []byte(v1Payload))
	if err := store.VerifyDecision(pub, r, d); err != nil {
		t.Fatalf("a v1 signature: %v", err)
	}
	d.ByName = "Eve"
	if err := store.VerifyDecision(pub, r, d); !errors.Is(err, store.ErrBadSignature) {
		t.Errorf("a v1 signature of a changed decision: %v, want ErrBadSignature", err)
	}
}

// Decisions are signed in payload v2, which names who decided in one
// group; changing any part of it, or who it names as another kind of
// decider, breaks the signature.
func TestAV2DecisionWithATamperedDeciderFails(t *testing.T) {
	pub, priv := testKey(1)
	r, _ := signedFixture(t, priv)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, d := range map[string]store.Decision{
		"Person": {Outcome: store.OutcomeAllow, By: "U1", ByName: "Ada", At: at},
		"Rule":   {Outcome: store.OutcomeDeny, Rule: "no-rm", PolicyDigest: "abc", Message: "no", At: at},
		"Grant":  {Outcome: store.OutcomeAllow, Grant: "grant-1", By: "U1", ByName: "Ada", At: at},
		"Answer": {Outcome: store.OutcomeAllow, Remembered: "ans-1", By: "U1", ByName: "Ada", Answers: map[string]string{"Which?": "A"}, At: at},
	} {
		t.Run(name, func(t *testing.T) {
			if err := store.SignDecision(priv, r, &d); err != nil {
				t.Fatal(err)
			}
			if p, _ := store.DecisionPayload(r, d); string(p[:len("slackgate decision v2\n")]) != "slackgate decision v2\n" {
				t.Fatalf("signed as %q, want payload v2", p)
			}
			if err := store.VerifyDecision(pub, r, d); err != nil {
				t.Fatalf("a fresh v2 signature: %v", err)
			}
			for what, tamper := range map[string]func(*store.Decision){
				"AnotherRule":   func(d *store.Decision) { d.Rule = "other" },
				"AnotherDigest": func(d *store.Decision) { d.PolicyDigest = "def" },
				"AnotherGrant":  func(d *store.Decision) { d.Grant = "grant-2" },
				"AnotherAnswer": func(d *store.Decision) { d.Remembered = "ans-2" },
				"NoDecider":     func(d *store.Decision) { d.Rule, d.Grant, d.Remembered, d.PolicyDigest = "", "", "", "" },
				"ASecondOne":    func(d *store.Decision) { d.Grant, d.Rule = d.Grant+"x", "r2" },
				"AnotherPerson": func(d *store.Decision) { d.By = "U2" },
				"AnotherName":   func(d *store.Decision) { d.ByName = "Eve" },
			} {
				d2 := d
				tamper(&d2)
				if d2.Decider() == d.Decider() && d2.By == d.By && d2.ByName == d.ByName {
					continue // the tamper changed nothing of this decider
				}
				if err := store.VerifyDecision(pub, r, d2); !errors.Is(err, store.ErrBadSignature) {
					t.Errorf("%s: VerifyDecision = %v, want ErrBadSignature", what, err)
				}
			}
		})
	}
}

func TestTheDeciderNamesWhoSettled(t *testing.T) {
	for _, tc := range []struct {
		d    store.Decision
		want store.Decider
	}{
		{store.Decision{By: "U1", ByName: "Ada"}, store.Decider{Kind: store.DecidedByPerson, ID: "U1", Name: "Ada"}},
		{store.Decision{Rule: "r", PolicyDigest: "abc"}, store.Decider{Kind: store.DecidedByRule, ID: "r", PolicyDigest: "abc"}},
		{store.Decision{Grant: "g", By: "U1", ByName: "Ada"}, store.Decider{Kind: store.DecidedByGrant, ID: "g", Name: "Ada"}},
		{store.Decision{Remembered: "a", By: "U1", ByName: "Ada"}, store.Decider{Kind: store.DecidedByAnswer, ID: "a", Name: "Ada"}},
		{store.Decision{Outcome: store.OutcomeExpired}, store.Decider{Kind: store.DecidedBySystem}},
	} {
		if got := tc.d.Decider(); got != tc.want {
			t.Errorf("Decider of %+v = %+v, want %+v", tc.d, got, tc.want)
		}
	}
}
