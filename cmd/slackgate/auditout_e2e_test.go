package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

const (
	auditChannel = "C0AUDIT"
	hookSecret   = "e2e-audit-webhook-secret-of-32-bytes+"
)

// logPipeline is a SIEM's intake: it checks each delivery as the
// auditsink package doc tells a receiver to and keeps each entry once by
// its Idempotency-Key. While down it drops the connection on the first
// attempt and answers 503 after.
type logPipeline struct {
	srv      *httptest.Server
	down     atomic.Bool
	mu       sync.Mutex
	attempts int
	kept     []store.AuditEntry
	cps      []store.AuditCheckpoint
	bodies   []string // every record kept, one a line: what `audit verify -file` reads
	seen     map[string]int
	problems []string
}

func newLogPipeline(t *testing.T) *logPipeline {
	lp := &logPipeline{seen: map[string]int{}}
	lp.down.Store(true)
	lp.srv = httptest.NewServer(http.HandlerFunc(lp.serve))
	t.Cleanup(lp.srv.Close)
	return lp
}

// sealedAll reports whether the newest checkpoint kept seals every entry
// kept.
func (lp *logPipeline) sealedAll() bool {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return len(lp.cps) > 0 && lp.cps[len(lp.cps)-1].Seq == uint64(len(lp.kept))
}

func (lp *logPipeline) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.attempts++
	if lp.down.Load() {
		if lp.attempts == 1 {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	ts := r.Header.Get("X-Slackgate-Timestamp")
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	sec, err := strconv.ParseInt(ts, 10, 64)
	var e store.AuditEntryRecord
	var cp store.AuditCheckpointRecord
	key := r.Header.Get("Idempotency-Key")
	switch {
	case !hmac.Equal([]byte(r.Header.Get("X-Slackgate-Signature")), []byte("sha256="+hex.EncodeToString(mac.Sum(nil)))):
		lp.problems = append(lp.problems, "bad signature")
	case err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute:
		lp.problems = append(lp.problems, "timestamp "+ts)
	case json.Unmarshal(body, &e) != nil:
		lp.problems = append(lp.problems, "not JSON: "+string(body))
	case e.Record == store.AuditRecordCheckpoint:
		if json.Unmarshal(body, &cp) != nil || key != "checkpoint-"+store.AuditCheckpointDigest(cp.AuditCheckpoint) {
			lp.problems = append(lp.problems, "key "+key+" for "+string(body))
		}
	case e.Record != store.AuditRecordEntry || e.Hash == "" || key != e.Hash:
		lp.problems = append(lp.problems, "key "+key+" for "+string(body))
	}
	if lp.seen[key] == 0 {
		lp.bodies = append(lp.bodies, string(body))
		if e.Record == store.AuditRecordCheckpoint {
			lp.cps = append(lp.cps, cp.AuditCheckpoint)
		} else {
			lp.kept = append(lp.kept, e.AuditEntry)
		}
	}
	lp.seen[key]++
	w.WriteHeader(http.StatusOK)
}

// poll calls ok until it reports true, failing the test at a's deadline.
// /readyz and /metrics announce nothing, so it polls them.
func poll(a *app, what string, ok func() bool) {
	a.tb.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-tick.C:
		case <-a.ctx.Done():
			a.tb.Fatalf("never: %s\nlogs:\n%s", what, a.logs.String())
		}
	}
}

// TestE2EAuditTrailReachesTheChannelAndTheWebhook runs `slackgate run`
// with AUDIT_CHANNEL and AUDIT_WEBHOOK_URL as an operator sets them. An
// approval gets its line in the audit channel. The log pipeline is down
// at first: /readyz stays ready and notes the backlog once it passes
// AUDIT_MAX_BACKLOG (1 here, so two entries pass it), and the backlog
// metric counts it; once the pipeline is up it holds every entry of the
// store's log, each once by key, in order, signed. The outage lasts a
// few seconds of the production backoff (0.5-1 s, then 1-2 s, ...): the
// injected-clock test in auditsink holds the receiver down for 30 s.
func TestE2EAuditTrailReachesTheChannelAndTheWebhook(t *testing.T) {
	for _, be := range []backend{boltBackend, redisBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Parallel()
			lp := newLogPipeline(t)
			a := startApp(t, options{backend: be, approvers: lee, configure: func(c *Config) {
				c.AuditChannel, c.AuditWebhookURL = auditChannel, lp.srv.URL+"/intake?token=t0k3n"
				c.AuditWebhookSecret, c.AuditMaxBacklog = hookSecret, 1
			}},
				relaytest.ToolUse("toolu_1", "Bash", bash(`echo "<shipped>" > deploy.txt`, "Deploy")),
				relaytest.Text("Deployed."))
			a.slack.AddChannel(auditChannel, "audit")
			thread := a.mention("please deploy")
			card := a.card(thread, "echo")
			a.click(lee, card.Ref(), "Approve")
			if res := a.toolResult("toolu_1"); res.IsError {
				t.Fatalf("the model got an error result: %q", res.Content)
			}
			a.settled(card.Ref(), "Approved")

			// The request's line, beside any checkpoint line the sealer
			// posted when it looked between the request's two entries.
			want := "✅ *Approved* by *lee* (" + lee + ") · ran `echo \"&lt;shipped&gt;\" &gt; deploy.txt`"
			if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
				return m.Channel == auditChannel && m.FromBot() && m.HasText(want)
			}); err != nil {
				t.Fatalf("no audit line saying %q: %v", want, err)
			}

			var readyz string
			poll(a, "/readyz notes the webhook's backlog", func() bool {
				code, body := get(t, a.ops+"/readyz")
				readyz = fmt.Sprint(code, " ", body)
				return code == http.StatusOK && strings.Contains(body, `"notes":["audit_webhook_backlog"]`)
			})
			if readyz != `200 {"ready":true,"notes":["audit_webhook_backlog"]}`+"\n" {
				t.Errorf("/readyz while the pipeline is down = %q; want ready, noting the backlog by name only", readyz)
			}
			_, metrics := get(t, a.ops+"/metrics")
			if n := metricValue(t, metrics, "slackgate_audit_backlog", `sink="webhook"`); n < 2 {
				t.Errorf("slackgate_audit_backlog{sink=webhook} = %v while down, want at least 2", n)
			}
			if n := metricValue(t, metrics, "slackgate_audit_last_delivery_timestamp_seconds", `sink="channel"`); n <= 0 {
				t.Errorf("slackgate_audit_last_delivery_timestamp_seconds{sink=channel} = %v after its line, want a time", n)
			}

			lp.down.Store(false)
			poll(a, "the webhook's backlog is delivered", func() bool {
				_, body := get(t, a.ops+"/readyz")
				_, metrics := get(t, a.ops+"/metrics")
				return !strings.Contains(body, "notes") && metricValue(t, metrics, "slackgate_audit_backlog", `sink="webhook"`) == 0
			})
			a.stop()
			if be == boltBackend && !lp.sealedAll() {
				// The sealer looked between the two entries: the second is
				// sealed at the stop, after the follower stopped, and
				// published when slackgate next starts.
				a.slack.DropConnections()
				a.run("run", func() {})
				a.waitServing(socketMode)
				poll(a, "the checkpoint sealed at the stop is published at the start", func() bool { return lp.sealedAll() })
				a.stop()
			}
			if strings.Contains(a.logs.String(), "t0k3n") {
				t.Error("the logs hold the webhook URL's token")
			}
			st := openAppStore(t, a)
			all, err := st.AuditLog(context.Background(), "", 0)
			if err != nil {
				t.Fatal(err)
			}
			lp.mu.Lock()
			defer lp.mu.Unlock()
			if len(lp.problems) > 0 {
				t.Errorf("the pipeline found problems: %q", lp.problems)
			}
			if lp.attempts < 3 {
				t.Errorf("%d attempts in all; want the outage's retries", lp.attempts)
			}
			if len(lp.kept) != len(all) || len(all) < 2 {
				t.Fatalf("the pipeline kept %d entries, the store holds %d", len(lp.kept), len(all))
			}
			for i, e := range all {
				if k := lp.kept[i]; k.Hash != e.Hash || k.Seq != e.Seq || k.Action != e.Action || lp.seen[e.Hash] != 1 {
					t.Errorf("entry %d kept as %+v (accepted %d times), want %+v once", i, k, lp.seen[e.Hash], e)
				}
			}
			// `slackgate run` on the embedded store seals with the key it
			// keeps in DATA_DIR; on Redis it made one in memory and seals
			// nothing. The pipeline's records check on their own.
			cps, err := st.AuditCheckpoints(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if be == redisBackend || len(cps) == 0 || len(lp.cps) != len(cps) || !lp.cps[len(cps)-1].Same(cps[len(cps)-1]) {
				if be != redisBackend || len(lp.cps) != 0 {
					t.Fatalf("the pipeline kept checkpoints %+v, the store holds %+v", lp.cps, cps)
				}
				return
			}
			path := filepath.Join(t.TempDir(), "intake.jsonl")
			must(t, os.WriteFile(path, []byte(strings.Join(lp.bodies, "\n")+"\n"), 0o600))
			out, err := runProgram(t, []string{"DATA_DIR=" + a.cfg.DataDir}, "audit", "verify", "-file", path)
			if err != nil || !strings.Contains(out, "every entry is sealed") {
				t.Errorf("audit verify -file of what the pipeline kept: %v\n%s", err, out)
			}
		})
	}
}

// openAppStore opens the stopped app's store: its bbolt file in DATA_DIR,
// or a client of its Redis.
func openAppStore(t *testing.T, a *app) store.Store {
	t.Helper()
	if a.cfg.RedisURL != "" {
		return a.redisStore()
	}
	st, err := boltstore.Open(filepath.Join(a.cfg.DataDir, "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestReadyzNotesLeaveItReady: a note that applies (an audit sink's
// backlog) is named under "notes", the process stays ready, and why goes
// to the log, once, as for checks.
func TestReadyzNotesLeaveItReady(t *testing.T) {
	var backlog error
	logs := &syncBuffer{}
	srv := httptest.NewServer(opsHandler([]healthCheck{{"store", func(context.Context) error { return nil }}}, nil, zerolog.New(logs),
		healthCheck{"audit_webhook_backlog", func(context.Context) error { return backlog }}))
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || body != `{"ready":true}`+"\n" {
		t.Errorf("/readyz without a backlog = %d %q", code, body)
	}
	backlog = errors.New("1500 audit entries not delivered to the audit webhook, more than AUDIT_MAX_BACKLOG=1000")
	for range 2 {
		if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || body != `{"ready":true,"notes":["audit_webhook_backlog"]}`+"\n" {
			t.Errorf("/readyz with a backlog = %d %q, want ready, noting it by name only", code, body)
		}
	}
	backlog = nil
	get(t, srv.URL+"/readyz")
	if n := strings.Count(logs.String(), "readiness note failing"); n != 1 || !strings.Contains(logs.String(), "AUDIT_MAX_BACKLOG=1000") ||
		!strings.Contains(logs.String(), "readiness note passing again") {
		t.Errorf("log %s; want the note's why once and its end", logs)
	}
}
