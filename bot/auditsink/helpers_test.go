package auditsink

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testSecret = "0123456789abcdef0123456789abcdef-audit"

// backend is a real store the followers share, and a way to open
// another client on its data (a second replica).
type backend struct {
	name  string
	open  func(t *testing.T) store.Store
	again func(t *testing.T) store.Store
}

// backends are bbolt on disk and, with REDIS_URL, a real Redis (skipped
// without it, failing when integration tests are required).
func backends(t *testing.T) []backend {
	bolt := backend{name: "bolt"}
	var boltStore store.Store
	bolt.open = func(t *testing.T) store.Store {
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		boltStore = st
		return st
	}
	bolt.again = func(*testing.T) store.Store { return boltStore } // one process holds the file
	redis := backend{name: "redis"}
	var prefix string
	redisURL := func(t *testing.T) string {
		url := os.Getenv("REDIS_URL")
		if url == "" {
			if os.Getenv("SLACKGATE_REQUIRE_INTEGRATION") == "1" || os.Getenv("CI") == "true" {
				t.Fatal("REDIS_URL is not set; run: .ci/with-redis.sh go test -race ./auditsink/")
			}
			t.Skip("REDIS_URL is not set; run with a private server: .ci/with-redis.sh go test -race ./auditsink/")
		}
		return url
	}
	dial := func(t *testing.T) store.Store {
		st, err := redisstore.New(t.Context(), redisURL(t), redisstore.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	redis.open = func(t *testing.T) store.Store {
		var b [6]byte
		_, _ = rand.Read(b[:])
		prefix = "sgtest-" + hex.EncodeToString(b[:])
		url := redisURL(t)
		t.Cleanup(func() { dropPrefix(t, url, prefix) })
		return dial(t)
	}
	redis.again = dial
	return []backend{bolt, redis}
}

// dropPrefix deletes a single server's keys of prefix.
func dropPrefix(t *testing.T, url, prefix string) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Error(err)
		return
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "{"+prefix+"*").Result()
	if err == nil && len(keys) > 0 {
		err = c.Del(ctx, keys...).Err()
	}
	if err != nil {
		t.Errorf("cleanup of %s: %v", prefix, err)
	}
}

// record appends n entries through real transitions: requests created
// and settled, and tool runs reported through the approval API.
func record(t *testing.T, st store.Store, n int) {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UnixNano()
	s := store.Session{ID: fmt.Sprintf("sess-%d", now), Thread: store.MessageRef{Channel: "C1", TS: fmt.Sprintf("%d.%06d", now/1e9, now%1e6)},
		State: store.SessionRunning}
	if err := st.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; {
		if i%3 == 2 {
			err := st.AppendAudit(ctx, store.AuditEntry{Action: store.AuditToolRan, SessionID: s.ID, Tool: "Bash", ReportedBy: "api:laptop",
				Result: store.ToolSucceeded, Message: "echo <!channel>"})
			if err != nil {
				t.Fatal(err)
			}
			i++
			continue
		}
		r := store.Request{ID: fmt.Sprintf("%s-req-%d", s.ID, i), SessionID: s.ID, Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}}
		if err := st.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		i++
		if i == n {
			break
		}
		if _, err := st.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "ann", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		i++
	}
}

// logOf returns every entry of the store's log.
func logOf(t *testing.T, st store.Store) []store.AuditEntry {
	t.Helper()
	es, err := st.AuditLog(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// receiver is a log pipeline's endpoint: it checks every delivery's
// signature, timestamp and key the way the package doc tells a receiver
// to, and keeps each entry once by its Idempotency-Key.
type receiver struct {
	srv    *httptest.Server
	secret []byte
	clock  *fakeClock
	// answer says what to do with an attempt at now: 0 takes it, -1 drops
	// the connection without an answer, else that status (Retry-After
	// retryAfter when set).
	answer     func(now time.Time, e store.AuditEntry) (status int, retryAfter string)
	mu         sync.Mutex
	kept       []store.AuditEntry      // each key's first accepted delivery, in arrival order
	records    []string                // every body accepted first by its key, in arrival order
	cps        []store.AuditCheckpoint // checkpoint records, in arrival order
	accepted   map[string]int          // deliveries answered 2xx, by key
	attempts   []time.Time             // when each attempt arrived, on the clock
	problems   []string
	inflight   int
	inflightHi int
}

func newReceiver(t *testing.T, clock *fakeClock) *receiver {
	rc := &receiver{secret: []byte(testSecret), clock: clock, accepted: map[string]int{},
		answer: func(time.Time, store.AuditEntry) (int, string) { return 0, "" }}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	now := rc.clock.Now()
	rc.mu.Lock()
	rc.inflight++
	rc.inflightHi = max(rc.inflightHi, rc.inflight)
	rc.attempts = append(rc.attempts, now)
	rc.mu.Unlock()
	defer func() {
		rc.mu.Lock()
		rc.inflight--
		rc.mu.Unlock()
	}()
	var rec store.AuditEntryRecord
	if err == nil {
		err = json.Unmarshal(body, &rec)
	}
	e := rec.AuditEntry
	var cp store.AuditCheckpointRecord
	if rec.Record == store.AuditRecordCheckpoint {
		err = json.Unmarshal(body, &cp)
	}
	if problem := rc.check(r, body, rec.Record, e, cp.AuditCheckpoint, now); err != nil || problem != "" {
		rc.mu.Lock()
		rc.problems = append(rc.problems, fmt.Sprintf("%v %s", err, problem))
		rc.mu.Unlock()
	}
	status, after := rc.answer(now, e)
	if rec.Record == store.AuditRecordCheckpoint {
		status, after = 0, ""
	}
	switch status {
	case 0:
	case -1:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	default:
		if after != "" {
			w.Header().Set("Retry-After", after)
		}
		w.WriteHeader(status)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	rc.mu.Lock()
	if rc.accepted[key] == 0 {
		rc.records = append(rc.records, string(body))
		if rec.Record == store.AuditRecordCheckpoint {
			rc.cps = append(rc.cps, cp.AuditCheckpoint)
		} else {
			rc.kept = append(rc.kept, e)
		}
	}
	rc.accepted[key]++
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// check is the receiver's side of the package doc: the HMAC over the
// timestamp, ".", the body; a timestamp within five minutes; the key is
// the entry's hash, or the checkpoint's digest.
func (rc *receiver) check(r *http.Request, body []byte, record string, e store.AuditEntry, cp store.AuditCheckpoint, now time.Time) string {
	ts := r.Header.Get("X-Slackgate-Timestamp")
	mac := hmac.New(sha256.New, rc.secret)
	mac.Write([]byte(ts + "." + string(body)))
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(r.Header.Get("X-Slackgate-Signature")), []byte(want)) {
		return "bad signature on " + e.ID
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Sprintf("timestamp %q at %v", ts, now)
	}
	switch key := r.Header.Get("Idempotency-Key"); record {
	case store.AuditRecordCheckpoint:
		if key != "checkpoint-"+store.AuditCheckpointDigest(cp) {
			return "key " + key + " for the checkpoint at " + strconv.FormatUint(cp.Seq, 10)
		}
	case store.AuditRecordEntry:
		if key != e.Hash || e.Hash == "" {
			return "key " + key + " for hash " + e.Hash
		}
	default:
		return "record " + record
	}
	if r.Header.Get("Content-Type") != "application/json" || r.Method != http.MethodPost {
		return r.Method + " " + r.Header.Get("Content-Type")
	}
	return ""
}

// keptSeqs are the seqs the receiver kept, in arrival order.
func (rc *receiver) keptSeqs() []uint64 {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []uint64
	for _, e := range rc.kept {
		out = append(out, e.Seq)
	}
	return out
}

// requireWhole checks that the receiver kept exactly want, in order, each
// by its own key, without a problem, and returns how often each key was
// accepted.
func (rc *receiver) requireWhole(t *testing.T, want []store.AuditEntry) map[string]int {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.problems) > 0 {
		t.Errorf("the receiver found problems: %q", rc.problems)
	}
	if len(rc.kept) != len(want) {
		t.Fatalf("receiver kept %d entries, want %d", len(rc.kept), len(want))
	}
	for i, e := range rc.kept {
		w := want[i]
		if e.Seq != w.Seq || e.Hash != w.Hash || e.ID != w.ID || e.Action != w.Action || !e.At.Equal(w.At) || e.Message != w.Message {
			t.Errorf("entry %d kept = %+v, want %+v", i, e, w)
		}
	}
	v := store.NewAuditVerifier(nil, nil)
	for _, e := range rc.kept {
		v.Entry(e)
	}
	if rep := v.Finish(); rep.Break != nil {
		t.Errorf("what the receiver kept does not verify as a chain: %v", rep.Break)
	}
	return maps(rc.accepted)
}

func maps(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fakeClock is the one fake clock (storetest.Clock) and a count of the
// requests in flight: drive does not move it under them, so a
// delivery's timestamp and its arrival share one instant.
type fakeClock struct {
	*storetest.Clock
	busy atomic.Int32
}

func newFakeClock() *fakeClock {
	return &fakeClock{Clock: storetest.NewClock(time.Now().Truncate(time.Second))}
}

// advance moves the clock by d and fires the timers due.
func (c *fakeClock) advance(d time.Duration) { c.Advance(d) }

// drive moves the clock a step at a time, whenever someone waits on it,
// until done reports true; it fails the test after a minute of real time.
func (c *fakeClock) drive(t *testing.T, step time.Duration, done func() bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond) // re-checks done while nobody waits
	defer tick.Stop()
	for !done() {
		if c.Timers() > 0 && c.busy.Load() == 0 {
			c.advance(step)
			continue
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("not done after a minute of real time (clock at %v)", c.Now())
		}
	}
}

// follower is a Follower of sink "webhook" delivering st's log to rc.
func follower(t *testing.T, st store.Store, rc *receiver, holder string) *Follower {
	t.Helper()
	w, err := NewWebhook(WebhookConfig{URL: rc.srv.URL + "/audit?token=abc", Secret: testSecret, Clock: rc.clock,
		Transport: busyTransport{rc.clock},
		Log:       zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	return &Follower{Name: "webhook", Holder: holder, Store: st, Sink: w, Clock: rc.clock,
		Log: zerolog.New(zerolog.NewTestWriter(t)).With().Timestamp().Logger()}
}

// run runs f until the test ends (or stop is called) and checks it
// returned nil.
func run(t *testing.T, f *Follower) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v after cancel, want nil", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// busyTransport holds the clock still while a request is in flight.
type busyTransport struct{ clock *fakeClock }

func (b busyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.clock.busy.Add(1)
	defer b.clock.busy.Add(-1)
	return http.DefaultTransport.RoundTrip(r)
}
