package storetest

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// signingKey stands for a bot's key in the signed-record tests.
var signingKey = ed25519.NewKeyFromSeed([]byte("storetest: a bot's signing seed!"))

// testSignedRecords: a session, an input and a remembered answer a bot
// signed before it wrote them still verify as a worker (or another bot)
// reads them back, through the store's encoding and the writes a session
// or an input goes through on its way (the worker's state updates, a
// requeue).
func (h *harness) testSignedRecords(t *testing.T) {
	pub := signingKey.Public().(ed25519.PublicKey)
	t.Run("Session", func(t *testing.T) {
		s, s2 := h.pair(t)
		ctx := h.ctx(t)
		sess := newSession()
		sess.API = true
		requireNoError(t, store.SignSession(signingKey, &sess), "SignSession")
		requireNoError(t, s.CreateSession(ctx, sess), "CreateSession")
		_, err := s2.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
			x.State, x.Worker, x.Started, x.UpdatedAt = store.SessionRunning, "w1", true, base.Add(time.Minute)
			return nil
		})
		requireNoError(t, err, "UpdateSession")
		got, err := s2.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		if !got.API {
			t.Error("the session lost its API mark")
		}
		requireNoError(t, store.VerifySession(pub, got), "VerifySession of the stored session")
	})
	t.Run("Input", func(t *testing.T) {
		s, s2 := h.pair(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		msg, stop := input(sid, "it's <b>&</b> done"), store.Input{SessionID: sid, Control: store.ControlInterrupt, User: "U2", At: base}
		for i, in := range []*store.Input{&msg, &stop} {
			in.ID = uniq("in")
			requireNoError(t, store.SignInput(signingKey, in), "SignInput")
			_, err := s.Enqueue(ctx, *in)
			requireNoError(t, err, "Enqueue")
			if i == 0 {
				h.claimNow(t, s2, "w1")
			}
		}
		first := h.nextNow(t, s2, sid, "w1")
		requireNoError(t, store.VerifyInput(pub, first), "VerifyInput of the queued message")
		requireNoError(t, s2.Requeue(ctx, first, "w1"), "Requeue")
		for _, want := range []store.Input{msg, stop} {
			got := h.nextNow(t, s2, sid, "w1")
			requireInput(t, want, got)
			requireNoError(t, store.VerifyInput(pub, got), "VerifyInput of "+got.ID)
		}
	})
	t.Run("Answer", func(t *testing.T) {
		s, s2 := h.pair(t)
		ctx := h.ctx(t)
		a := rememberedAnswer(t, store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}, "Postgres")
		a.ID = uniq("ans")
		requireNoError(t, store.SignStanding(signingKey, &a), "SignStanding")
		stored, err := s.Keep(ctx, a)
		requireNoError(t, err, "Keep")
		if stored.ID != a.ID {
			t.Fatalf("Keep changed the signed answer's id to %s, want %s", stored.ID, a.ID)
		}
		got, err := s2.LookupAnswer(ctx, a.Scope, a.Fingerprint)
		requireNoError(t, err, "LookupAnswer")
		requireNoError(t, store.VerifyStanding(pub, got), "VerifyStanding of the stored answer")
		listed, err := s2.Kept(ctx, store.StandingAnswer)
		requireNoError(t, err, "Kept")
		if len(listed) != 1 || store.VerifyStanding(pub, listed[0]) != nil {
			t.Errorf("Kept = %+v, want the one answer, still verifying", listed)
		}
	})
	t.Run("AnAnswerIDNamingAnotherAnswerIsRefused", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		a := rememberedAnswer(t, store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}, "Postgres")
		a.ID = uniq("ans")
		_, err := s.Keep(ctx, a)
		requireNoError(t, err, "Keep")
		// The same id again for the same form and scope replaces it.
		a.Answers = map[string]string{"Which database?": "SQLite"}
		_, err = s.Keep(ctx, a)
		requireNoError(t, err, "Keep again under the same id")
		other := rememberedAnswer(t, store.Scope{Kind: store.ScopeChannel, Value: "C9"}, "Postgres")
		other.ID = a.ID
		_, err = s.Keep(ctx, other)
		requireIs(t, err, store.ErrExists, "Keep of another scope's answer under a taken id")
		got, err := s.LookupAnswer(ctx, a.Scope, a.Fingerprint)
		requireNoError(t, err, "LookupAnswer")
		if got.ID != a.ID || got.Answers["Which database?"] != "SQLite" {
			t.Errorf("LookupAnswer = %+v, want the replaced answer untouched by the refused one", got)
		}
		_, err = s.LookupAnswer(ctx, other.Scope, other.Fingerprint)
		requireIs(t, err, store.ErrNotFound, "LookupAnswer of the refused answer")
	})
}
