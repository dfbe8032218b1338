package boltstore_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// A file written by the release before standing rules (a grant and a
// remembered answer in their own buckets, without a kind) reads back as
// standing rules that verify, and forgets as one.
func TestStandingRulesOfAnEarlierReleaseReadBack(t *testing.T) {
	raw, err := os.ReadFile("../testdata/standing-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var recs struct{ Grant, Answer json.RawMessage }
	if err := json.Unmarshal(raw, &recs); err != nil {
		t.Fatal(err)
	}
	var answer store.Standing
	if err := json.Unmarshal(recs.Answer, &answer); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "slackgate.db")
	_ = open(t, path).Close() // the buckets
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		idx := append(append([]byte(answer.Scope.Key()), 0), answer.Fingerprint...)
		return errors.Join(
			tx.Bucket([]byte("grants")).Put([]byte("grant-1"), recs.Grant),
			tx.Bucket([]byte("answers")).Put([]byte("ans-1"), recs.Answer),
			tx.Bucket([]byte("answeridx")).Put(idx, []byte("ans-1")),
		)
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	s, ctx := open(t, path), context.Background()
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	grants, err := s.Kept(ctx, store.StandingGrant)
	if err != nil || len(grants) != 1 || grants[0].Kind != store.StandingGrant || store.VerifyStanding(pub, grants[0]) != nil {
		t.Fatalf("Kept(grant) = %+v, %v; want the one grant, verifying", grants, err)
	}
	got, err := s.LookupAnswer(ctx, answer.Scope, answer.Fingerprint)
	if err != nil || got.Kind != store.StandingAnswer || store.VerifyStanding(pub, got) != nil {
		t.Fatalf("LookupAnswer = %+v, %v; want the answer, verifying", got, err)
	}
	if _, err := s.Forget(ctx, store.StandingAnswer, "ans-1", "U2", "Kim"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if _, err := s.LookupAnswer(ctx, answer.Scope, answer.Fingerprint); err == nil {
		t.Error("the forgotten answer is still found by its scope and form")
	}
}
