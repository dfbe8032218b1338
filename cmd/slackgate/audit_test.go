package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// recordDecisions creates n requests and settles each, as a session would,
// and returns the environment that points slackgate at the same store.
func recordDecisions(t *testing.T, be backend, n int) []string {
	t.Helper()
	ctx := context.Background()
	var (
		st  store.Store
		env []string
		err error
	)
	switch be {
	case boltBackend:
		dir := t.TempDir()
		st, err = boltstore.Open(filepath.Join(dir, "slackgate.db"))
		env = []string{"DATA_DIR=" + dir}
	case redisBackend:
		url := redistest.URL(t)
		prefix := fmt.Sprintf("audit-%d", time.Now().UnixNano())
		st, err = redisstore.New(ctx, url, redisstore.WithPrefix(prefix))
		env = []string{"REDIS_URL=" + url, "REDIS_KEY_PREFIX=" + prefix}
	}
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("req-%d", i)
		r := store.Request{ID: id, SessionID: "s1", CLIRequestID: "c" + id, Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: at}
		if err := st.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		d := store.Decision{Outcome: store.OutcomeAllow, By: "U0LEE", ByName: "lee", At: at.Add(time.Minute)}
		if _, err := st.Decide(ctx, id, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return env
}

func auditLines(t *testing.T, env []string, args ...string) []store.AuditEntry {
	t.Helper()
	out, err := runProgram(t, env, append([]string{"audit"}, args...)...)
	if err != nil {
		t.Fatalf("audit %q: %v\n%s", args, err, out)
	}
	var entries []store.AuditEntry
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e store.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit printed a line that is not an entry: %q: %v", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	return entries
}

func TestAuditPrintsWhoDecidedWhatAsJSONLines(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend} {
		t.Run(string(be), func(t *testing.T) {
			env := recordDecisions(t, be, 3)

			all := auditLines(t, env)
			if len(all) != 6 {
				t.Fatalf("audit printed %d entries, want 6 (3 created, 3 settled)", len(all))
			}
			for i, e := range all {
				want := store.AuditCreated
				if i%2 == 1 {
					want = "settled"
				}
				if e.Action != want || e.RequestID != fmt.Sprintf("req-%d", i/2) {
					t.Errorf("entry %d = %s %s, want %s req-%d (oldest first)", i, e.Action, e.RequestID, want, i/2)
				}
				if want == "settled" && (e.By != "U0LEE" || e.Outcome != store.OutcomeAllow) {
					t.Errorf("entry %d does not say who decided what: %+v", i, e)
				}
			}

			if got := auditLines(t, env, "-limit", "2"); len(got) != 2 || got[1].ID != all[1].ID {
				t.Errorf("-limit 2 printed %d entries", len(got))
			}
			rest := auditLines(t, env, "-after", all[1].ID)
			if len(rest) != 4 || rest[0].ID != all[2].ID {
				t.Errorf("-after %s printed %d entries starting %v, want the last 4", all[1].ID, len(rest), rest)
			}
		})
	}
}

func TestAuditRejectsBadArguments(t *testing.T) {
	env := []string{"DATA_DIR=" + t.TempDir()}
	for _, args := range [][]string{{"-limit", "-1"}, {"extra"}, {"-bogus"}} {
		if _, err := runProgram(t, env, append([]string{"audit"}, args...)...); err == nil {
			t.Errorf("audit %q succeeded; want an error", args)
		}
	}
}
