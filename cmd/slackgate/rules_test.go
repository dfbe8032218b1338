package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

func TestRulesListAndForgetOnTheConfiguredStore(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	g := store.Grant{ID: "grant-1", Scope: store.GrantScope{Kind: store.GrantRepo, Value: "/srv/repo"}, Rules: []string{"Bash(npm test:*)"},
		By: "U0LEE", ByName: "lee", At: at, Expires: at.Add(time.Hour)}
	if err := st.AddGrant(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATA_DIR=" + dir}
	out, err := runProgram(t, env, "rules", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EXPIRES", g.ID, "repo:/srv/repo", "Bash(npm test:*)", "lee", "2026-11-26T11:00:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("rules list does not show %q:\n%s", want, out)
		}
	}
	if out, err := runProgram(t, env, "rules", "forget", "grant-nope"); err == nil || !strings.Contains(err.Error(), "no rule") {
		t.Errorf("forgetting an unknown id: %v\n%s", err, out)
	}
	if out, err := runProgram(t, env, "rules", "forget", "-by", "ops:kim", g.ID); err != nil || !strings.Contains(out, "forgot "+g.ID) {
		t.Fatalf("rules forget = %q, %v", out, err)
	}
	if out, err := runProgram(t, env, "rules", "list", "-json"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("rules list after forget = %q, %v; want nothing", out, err)
	}
	entries := auditLines(t, env)
	if last := entries[len(entries)-1]; last.Action != store.AuditGrantForgotten || last.By != "ops:kim" || last.GrantID != g.ID {
		t.Errorf("last audit entry = %+v, want ops:kim forgetting %s", last, g.ID)
	}
}
