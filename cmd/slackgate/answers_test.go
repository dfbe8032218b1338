package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

func TestAnswersListAndForgetOnTheConfiguredStore(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	form := `{"questions":[{"question":"Which database?","header":"Database","options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`
	fp, qs, err := store.QuestionFingerprint("AskUserQuestion", json.RawMessage(form))
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Keep(context.Background(), store.Standing{Kind: store.StandingAnswer,
		Scope: store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}, Fingerprint: fp, Tool: "AskUserQuestion",
		Questions: qs, Answers: map[string]string{"Which database?": "Postgres"}, By: "U0LEE", ByName: "lee",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATA_DIR=" + dir}

	out, err := runProgram(t, env, "answers", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ID", "SCOPE", a.ID, "repo:/srv/repo", "Database", "Postgres", "lee"} {
		if !strings.Contains(out, want) {
			t.Errorf("answers list does not show %q:\n%s", want, out)
		}
	}
	out, err = runProgram(t, env, "answers", "list", "-json")
	var got store.Standing
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.ID != a.ID || got.Answers["Which database?"] != "Postgres" {
		t.Fatalf("answers list -json = %q, %v; want the one answer", out, err)
	}
	if out, err := runProgram(t, env, "answers", "forget", "ans-nope"); err == nil || !strings.Contains(err.Error(), "no remembered answer") {
		t.Errorf("forgetting an unknown id: %v\n%s", err, out)
	}
	if _, err := runProgram(t, env, "answers"); err == nil {
		t.Error("answers without list or forget did not fail")
	}
	if out, err := runProgram(t, env, "answers", "forget", "-by", "ops:kim", a.ID); err != nil || !strings.Contains(out, "forgot "+a.ID) {
		t.Fatalf("answers forget = %q, %v", out, err)
	}
	if out, err := runProgram(t, env, "answers", "list", "-json"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("answers list after forget = %q, %v; want nothing", out, err)
	}
	entries := auditLines(t, env)
	if last := entries[len(entries)-1]; last.Action != store.AuditAnswerForgotten || last.By != "ops:kim" || last.AnswerID != a.ID {
		t.Errorf("last audit entry = %+v, want ops:kim forgetting %s", last, a.ID)
	}
}
