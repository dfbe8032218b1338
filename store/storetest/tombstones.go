package storetest

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testTombstones(t *testing.T) {
	t.Run("FirstBuryStandsAndKindsStayApart", h.testBury)
}

func (h *harness) testBury(t *testing.T) {
	s1, s2 := h.pair(t)
	ctx := h.ctx(t)
	first := store.Tombstone{Kind: store.StandingGrant, ID: "grant-1", By: "U1", ByName: "ada", At: base, Signature: []byte("sig-1")}
	requireNoError(t, s1.Bury(ctx, first), "Bury")
	later := first
	later.By, later.At, later.Signature = "U2", base.Add(time.Hour), []byte("sig-2")
	requireNoError(t, s2.Bury(ctx, later), "Bury again")
	requireNoError(t, s1.Bury(ctx, store.Tombstone{Kind: store.StandingAnswer, ID: "grant-1", By: "U3", At: base}), "Bury of an answer with the same id")
	got, err := s2.Tombstones(ctx, store.StandingGrant)
	requireNoError(t, err, "Tombstones")
	if len(got) != 1 || got[0].By != "U1" || !got[0].At.Equal(base) || string(got[0].Signature) != "sig-1" || got[0].ByName != "ada" {
		t.Errorf("grant tombstones %+v, want the first one alone, as buried", got)
	}
	answers, err := s1.Tombstones(ctx, store.StandingAnswer)
	requireNoError(t, err, "Tombstones")
	if len(answers) != 1 || answers[0].By != "U3" {
		t.Errorf("answer tombstones %+v, want U3's", answers)
	}
	for name, bad := range map[string]store.Tombstone{
		"NoKind": {ID: "x", By: "U1", At: base},
		"NoID":   {Kind: store.StandingGrant, By: "U1", At: base},
		"NoWho":  {Kind: store.StandingGrant, ID: "x", At: base},
	} {
		requireIs(t, s1.Bury(ctx, bad), store.ErrInvalid, "Bury "+name)
	}
}
