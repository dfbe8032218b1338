package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func grant(scope store.GrantScope, minutes int) store.Grant {
	at := base.Add(time.Duration(minutes) * time.Minute)
	return store.Grant{ID: uniq("grant"), Scope: scope, Rules: []string{"Bash(npm test:*)", "Edit(src/**)"},
		By: "U1", ByName: "Lee", At: at, Expires: time.Now().Add(time.Hour), RequestID: uniq("req"), SessionID: uniq("sess"),
		Channel: "C1", Signature: []byte("sig")}
}

func (h *harness) testGrants(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	repo := store.GrantScope{Kind: store.GrantRepo, Value: "/srv/repo", Token: "ci"}
	older, newer := grant(repo, 1), grant(store.GrantScope{Kind: store.GrantSession, Value: "sess-1"}, 2)
	newer.Expires = time.Time{} // until forgotten
	requireNoError(t, s.AddGrant(ctx, older), "AddGrant")
	requireNoError(t, s.AddGrant(ctx, newer), "AddGrant")
	requireIs(t, s.AddGrant(ctx, older), store.ErrExists, "AddGrant of a taken id")
	for name, g := range map[string]store.Grant{
		"NoRules":        func() store.Grant { g := grant(repo, 3); g.Rules = nil; return g }(),
		"NoScope":        func() store.Grant { g := grant(repo, 3); g.Scope = store.GrantScope{}; return g }(),
		"NoOne":          func() store.Grant { g := grant(repo, 3); g.By = ""; return g }(),
		"ExpiresAtAdded": func() store.Grant { g := grant(repo, 3); g.Expires = g.At; return g }(),
	} {
		requireIs(t, s.AddGrant(ctx, g), store.ErrInvalid, "AddGrant "+name)
	}
	list, err := s2.ListGrants(ctx)
	requireNoError(t, err, "ListGrants")
	if len(list) != 2 || list[0].ID != newer.ID || list[1].ID != older.ID {
		t.Fatalf("ListGrants = %+v, want the two grants, newest first", list)
	}
	got := list[1]
	if got.Scope != repo || !slices.Equal(got.Rules, older.Rules) || got.By != "U1" || !got.At.Equal(older.At) ||
		!got.Expires.Equal(older.Expires) || string(got.Signature) != "sig" || !list[0].Expires.IsZero() {
		t.Errorf("ListGrants read back %+v, want %+v", got, older)
	}
	gone, err := s2.ForgetGrant(ctx, older.ID, "U2", "Kim")
	requireNoError(t, err, "ForgetGrant")
	if gone.ID != older.ID {
		t.Errorf("ForgetGrant returned %+v", gone)
	}
	_, err = s.ForgetGrant(ctx, older.ID, "U2", "Kim")
	requireIs(t, err, store.ErrNotFound, "ForgetGrant twice")
	_, err = s.ForgetGrant(ctx, newer.ID, "", "")
	requireIs(t, err, store.ErrInvalid, "ForgetGrant by nobody")
	if list, _ := s.ListGrants(ctx); len(list) != 1 || list[0].ID != newer.ID {
		t.Errorf("ListGrants after forgetting one = %+v", list)
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
