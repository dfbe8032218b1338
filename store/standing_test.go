package store_test

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/slackgate/slackgate/store"
)

// standingV1 reads a grant and a remembered answer as the release before
// standing rules stored and signed them (testdata/standing-v1.json, key
// seed all zeros), and that key's public half.
func standingV1(t *testing.T) (grant, answer json.RawMessage, pub ed25519.PublicKey) {
	t.Helper()
	raw, err := os.ReadFile("testdata/standing-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs struct{ Grant, Answer json.RawMessage }
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatal(err)
	}
	return recs.Grant, recs.Answer, ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
}

func TestRecordsKeptByTheReleaseBeforeStandingRulesStillVerify(t *testing.T) {
	grant, answer, pub := standingV1(t)
	for kind, raw := range map[store.StandingKind]json.RawMessage{store.StandingGrant: grant, store.StandingAnswer: answer} {
		var s store.Standing
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		s.Kind = kind // as a store sets it from where the record lives
		if err := s.Validate(); err != nil {
			t.Errorf("%s of the release before: %v", kind, err)
		}
		if err := store.VerifyStanding(pub, s); err != nil {
			t.Errorf("%s of the release before does not verify: %v", kind, err)
		}
	}
}

// A store writer who moves a signed record into the other kind's keys
// gains nothing: each kind verifies only as itself.
func TestAStandingRuleVerifiesOnlyAsItsOwnKind(t *testing.T) {
	grant, answer, pub := standingV1(t)
	for kind, raw := range map[store.StandingKind]json.RawMessage{store.StandingAnswer: grant, store.StandingGrant: answer} {
		var s store.Standing
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		s.Kind = kind
		if err := store.VerifyStanding(pub, s); !errors.Is(err, store.ErrBadSignature) && !errors.Is(err, store.ErrInvalid) {
			t.Errorf("a record read as a %s: err = %v, want it refused", kind, err)
		}
	}
}
