package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func grant(scope store.Scope, minutes int) store.Standing {
	at := base.Add(time.Duration(minutes) * time.Minute)
	return store.Standing{Kind: store.StandingGrant, ID: uniq("grant"), Scope: scope, Rules: []string{"Bash(npm test:*)", "Edit(src/**)"},
		By: "U1", ByName: "Lee", At: at, Expires: time.Now().Add(time.Hour), RequestID: uniq("req"), SessionID: uniq("sess"),
		Channel: "C1", Signature: []byte("sig")}
}

func (h *harness) testGrants(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	repo := store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo", Token: "ci"}
	older, newer := grant(repo, 1), grant(store.Scope{Kind: store.ScopeSession, Value: "sess-1"}, 2)
	newer.Expires = time.Time{} // until forgotten
	keep := func(g store.Standing) error { _, err := s.Keep(ctx, g); return err }
	requireNoError(t, keep(older), "Keep")
	requireNoError(t, keep(newer), "Keep")
	requireIs(t, keep(older), store.ErrExists, "Keep of a taken id")
	for name, g := range map[string]store.Standing{
		"NoRules":        func() store.Standing { g := grant(repo, 3); g.Rules = nil; return g }(),
		"NoScope":        func() store.Standing { g := grant(repo, 3); g.Scope = store.Scope{}; return g }(),
		"NoOne":          func() store.Standing { g := grant(repo, 3); g.By = ""; return g }(),
		"ExpiresAtAdded": func() store.Standing { g := grant(repo, 3); g.Expires = g.At; return g }(),
		"ChannelScope":   grant(store.Scope{Kind: store.ScopeChannel, Value: "C1"}, 3),
		"WithAnswers":    func() store.Standing { g := grant(repo, 3); g.Answers = map[string]string{"Q?": "A"}; return g }(),
		"UnknownKind":    func() store.Standing { g := grant(repo, 3); g.Kind = "rule"; return g }(),
	} {
		requireIs(t, keep(g), store.ErrInvalid, "Keep "+name)
	}
	list, err := s2.Kept(ctx, store.StandingGrant)
	requireNoError(t, err, "Kept")
	if len(list) != 2 || list[0].ID != newer.ID || list[1].ID != older.ID || list[0].Kind != store.StandingGrant {
		t.Fatalf("Kept = %+v, want the two grants, newest first", list)
	}
	got := list[1]
	if got.Scope != repo || !slices.Equal(got.Rules, older.Rules) || got.By != "U1" || !got.At.Equal(older.At) ||
		!got.Expires.Equal(older.Expires) || string(got.Signature) != "sig" || !list[0].Expires.IsZero() {
		t.Errorf("Kept read back %+v, want %+v", got, older)
	}
	gone, err := s2.Forget(ctx, store.StandingGrant, older.ID, "U2", "Kim")
	requireNoError(t, err, "Forget")
	if gone.ID != older.ID {
		t.Errorf("Forget returned %+v", gone)
	}
	_, err = s.Forget(ctx, store.StandingGrant, older.ID, "U2", "Kim")
	requireIs(t, err, store.ErrNotFound, "Forget twice")
	_, err = s.Forget(ctx, store.StandingGrant, newer.ID, "", "")
	requireIs(t, err, store.ErrInvalid, "Forget by nobody")
	_, err = s.Forget(ctx, store.StandingAnswer, newer.ID, "U2", "Kim")
	requireIs(t, err, store.ErrNotFound, "Forget of a grant as an answer")
	_, err = s.Kept(ctx, "rule")
	requireIs(t, err, store.ErrInvalid, "Kept of an unknown kind")
	if list, _ := s.Kept(ctx, store.StandingGrant); len(list) != 1 || list[0].ID != newer.ID {
		t.Errorf("Kept after forgetting one = %+v", list)
	}
	log, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	var actions []store.AuditAction
	for _, e := range log {
		if e.GrantID == older.ID {
			actions = append(actions, e.Action)
		}
	}
	if !slices.Equal(actions, []store.AuditAction{store.AuditGrantAdded, store.AuditGrantForgotten}) {
		t.Errorf("audit of the forgotten grant: %v, want added then forgotten", actions)
	}
}
