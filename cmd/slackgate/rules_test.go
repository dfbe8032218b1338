package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

func TestRulesListAndForgetOnTheConfiguredStore(t *testing.T) {
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-1", Scope: store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"}, Rules: []string{"Bash(npm test:*)"},
		By: "U0LEE", ByName: "lee", At: at, Expires: at.Add(time.Hour)}
	if _, err := st.Keep(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	env := []string{"DATA_DIR=" + dir, "DECISION_SIGNING_KEY=" + base64.StdEncoding.EncodeToString(seed)}
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
	// It is buried with the bots' key, so a bot ignores a copy written back.
	st, err = boltstore.Open(filepath.Join(dir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	graves, err := st.Tombstones(context.Background(), store.StandingGrant)
	if err != nil {
		t.Fatal(err)
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	if !slices.ContainsFunc(graves, func(ts store.Tombstone) bool {
		return ts.ID == g.ID && ts.By == "ops:kim" && store.VerifyTombstone(pub, ts) == nil
	}) {
		t.Errorf("tombstones %+v, want ops:kim's of %s, signed", graves, g.ID)
	}
}

// TestStoreCommandsNeverMakeAStore: on a DATA_DIR the service never used
// (a typo, the wrong machine), every command that reads or edits the
// store fails naming where it looked, and leaves nothing there: a new
// empty store would answer "nothing" and look like the truth.
func TestStoreCommandsNeverMakeAStore(t *testing.T) {
	for _, args := range [][]string{
		{"audit"}, {"audit", "verify"}, {"audit", "export"}, {"answers", "list"}, {"answers", "forget", "a1"},
		{"rules", "list"}, {"rules", "forget", "g1"},
	} {
		for _, dir := range []string{filepath.Join(t.TempDir(), "data"), t.TempDir()} { // missing, and empty
			env := []string{"DATA_DIR=" + dir, "DECISION_VERIFY_KEY=" + testKeys.verify}
			out, err := runProgram(t, env, args...)
			if err == nil || !strings.Contains(err.Error(), "no store at "+filepath.Join(dir, "slackgate.db")) || !strings.Contains(err.Error(), "DATA_DIR="+dir) {
				t.Errorf("slackgate %s on DATA_DIR=%s = %v, %q; want an error naming where it looked", strings.Join(args, " "), dir, err, out)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("slackgate %s left %d entries in DATA_DIR=%s", strings.Join(args, " "), len(entries), dir)
			}
		}
		// On Redis, a REDIS_KEY_PREFIX nothing was written under (a typo, another
		// team's) is the same mistake, beside a store that holds a session.
		url, prefix := redistest.URL(t), fmt.Sprintf("used-%d", time.Now().UnixNano())
		st, err := redisstore.New(context.Background(), url, redisstore.WithPrefix(prefix))
		must(t, err)
		must(t, st.CreateRequest(context.Background(), store.Request{ID: "r1", SessionID: "s1", CLIRequestID: "c1",
			Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: time.Now()}))
		must(t, st.Close())
		env := []string{"REDIS_URL=" + url, "REDIS_KEY_PREFIX=" + prefix + "-typo", "DECISION_VERIFY_KEY=" + testKeys.verify}
		out, err := runProgram(t, env, args...)
		if err == nil || !strings.Contains(err.Error(), "no store in "+url+" under REDIS_KEY_PREFIX="+prefix+"-typo") {
			t.Errorf("slackgate %s on a prefix nothing used = %v, %q; want an error naming the prefix", strings.Join(args, " "), err, out)
		}
		if strings.Join(args, " ") == "audit" {
			env[1] = "REDIS_KEY_PREFIX=" + prefix
			if out, err := runProgram(t, env, args...); err != nil {
				t.Errorf("slackgate audit under the prefix in use: %v\n%s", err, out)
			}
		}
	}
}
