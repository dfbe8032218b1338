package auditsink

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// TestWebhookDownFor30sThenGetsEveryEntryOnceInOrder: the receiver drops
// connections for 15 s, then answers 503 for 15 s (on the injected clock,
// so the test takes no 30 s of wall time); afterwards it holds every
// entry, each accepted once by its Idempotency-Key, in seq order, each
// signed and stamped as the package doc says, and the entries appended
// after the outage follow.
func TestWebhookDownFor30sThenGetsEveryEntryOnceInOrder(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			record(t, st, 20)
			want := logOf(t, st)
			clock := newFakeClock()
			start := clock.Now()
			rc := newReceiver(t, clock)
			rc.answer = func(now time.Time, _ store.AuditEntry) (int, string) {
				switch {
				case now.Before(start.Add(15 * time.Second)):
					return -1, ""
				case now.Before(start.Add(30 * time.Second)):
					return http.StatusServiceUnavailable, ""
				}
				return 0, ""
			}
			f := follower(t, st, rc, "bot-a")
			run(t, f)

			clock.drive(t, time.Second, func() bool { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.attempts) >= 2 })
			if s := f.Status(); !s.Holding || !s.Looked || s.Backlog != uint64(len(want)) || !s.Delivered.IsZero() {
				t.Errorf("status while the receiver is down = %+v, want holding, a backlog of %d, nothing delivered", s, len(want))
			}
			// Entries appended while a delivery retries count at once.
			record(t, st, 3)
			want = logOf(t, st)
			clock.drive(t, time.Second, func() bool { return f.Status().Backlog == uint64(len(want)) })
			clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
			accepted := rc.requireWhole(t, want)
			for key, n := range accepted {
				if n != 1 {
					t.Errorf("entry %s accepted %d times, want once", key, n)
				}
			}
			rc.mu.Lock()
			var down int
			for _, at := range rc.attempts {
				if at.Before(start.Add(30 * time.Second)) {
					down++
				}
			}
			rc.mu.Unlock()
			// Backoff from 1 s doubling (jittered over each upper half):
			// a handful of attempts in 30 s, not one a second.
			if down < 3 || down > 9 {
				t.Errorf("%d attempts while the receiver was down for 30 s; want exponential backoff (3 to 9)", down)
			}

			record(t, st, 4)
			want = logOf(t, st)
			clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
			rc.requireWhole(t, want)
			clock.drive(t, time.Second, func() bool { return f.Status().Backlog == 0 })
			if s := f.Status(); s.Delivered.IsZero() || s.Delivered.Before(start.Add(30*time.Second)) {
				t.Errorf("status after catching up = %+v, want the last delivery's time", s)
			}
		})
	}
}

// TestWebhookTwoReplicasDeliverEachEntryOnce: two replicas follow one
// store; one at a time delivers, each entry once, and when it stops the
// other takes over where it stopped.
func TestWebhookTwoReplicasDeliverEachEntryOnce(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			st2 := b.again(t)
			record(t, st, 15)
			clock := newFakeClock()
			rc := newReceiver(t, clock)
			fa, fb := follower(t, st, rc, "bot-a"), follower(t, st2, rc, "bot-b")
			stopA, stopB := run(t, fa), run(t, fb)
			want := logOf(t, st)
			// Until the holder has moved its cursor past what the receiver
			// kept: a stop while the last answer is on its way abandons it,
			// and the next holder delivers that entry again (at least once).
			clock.drive(t, time.Second, func() bool {
				h := fa
				if fb.Status().Holding {
					h = fb
				}
				return len(rc.keptSeqs()) == len(want) && h.Status().Holding && h.Status().Backlog == 0
			})

			holder, stop := fb, stopB
			if fa.Status().Holding {
				holder, stop = fa, stopA
			}
			if fa.Status().Holding == fb.Status().Holding {
				t.Fatalf("holding: a %v, b %v; want exactly one", fa.Status().Holding, fb.Status().Holding)
			}
			stop()
			record(t, st, 6)
			want = logOf(t, st)
			clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
			if holder.Status().Holding {
				t.Error("the stopped replica still holds the sink")
			}
			for key, n := range rc.requireWhole(t, want) {
				if n != 1 {
					t.Errorf("entry %s accepted %d times, want once", key, n)
				}
			}
			if rc.inflightHi != 1 {
				t.Errorf("%d deliveries at once; want one replica delivering one entry at a time", rc.inflightHi)
			}
		})
	}
}

// deadAfter is the store of a replica that dies (loses the store for
// good, without releasing anything) once the receiver has accepted the
// entry with seq: the process is gone between the receiver's answer and
// its cursor write.
type deadAfter struct {
	Store
	rc   *receiver
	seq  uint64
	dead atomic.Bool
}

var errDead = errors.New("connection reset: the replica is gone")

func (d *deadAfter) check() error {
	d.rc.mu.Lock()
	for _, e := range d.rc.kept {
		if e.Seq == d.seq {
			d.dead.Store(true)
		}
	}
	d.rc.mu.Unlock()
	if d.dead.Load() {
		return errDead
	}
	return nil
}

func (d *deadAfter) ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error) {
	if err := d.check(); err != nil {
		return store.AuditSink{}, err
	}
	return d.Store.ClaimAuditSink(ctx, sink, holder, ttl)
}

func (d *deadAfter) AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.AdvanceAuditSink(ctx, sink, holder, cur)
}

func (d *deadAfter) ReleaseAuditSink(ctx context.Context, sink, holder string) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.Store.ReleaseAuditSink(ctx, sink, holder)
}

// TestWebhookFailoverRedeliversOnlyTheEntryInFlight: the holder dies after
// the receiver took an entry and before its cursor moved; once its claim
// lapses the other replica delivers from the cursor on, so that one entry
// arrives twice (at least once) under the same Idempotency-Key, and the
// receiver, deduplicating by it, holds the trail whole and in order.
func TestWebhookFailoverRedeliversOnlyTheEntryInFlight(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			st2 := b.again(t)
			record(t, st, 12)
			want := logOf(t, st)
			clock := newFakeClock()
			rc := newReceiver(t, clock)
			dying := &deadAfter{Store: st, rc: rc, seq: want[4].Seq}
			fa := follower(t, nil, rc, "bot-a")
			fa.Store = dying
			// The claim lapses by the store's clock, which is real time:
			// short, so the test waits little for the take-over.
			fa.TTL = 300 * time.Millisecond
			run(t, fa)
			clock.drive(t, time.Second, func() bool { return dying.dead.Load() })
			fb := follower(t, st2, rc, "bot-b")
			run(t, fb)
			clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
			accepted := rc.requireWhole(t, want)
			for _, e := range want {
				n, wantN := accepted[e.Hash], 1
				if e.Seq == want[4].Seq {
					wantN = 2
				}
				if n != wantN {
					t.Errorf("entry seq %d accepted %d times, want %d", e.Seq, n, wantN)
				}
			}
		})
	}
}

// TestWebhookRefusalHoldsTheLogAtTheEntry: a receiver answering 401 (a
// wrong secret, say) gets the same entry again until it takes it; nothing
// after it is sent before, nothing is skipped, and the log says what to
// fix.
func TestWebhookRefusalHoldsTheLogAtTheEntry(t *testing.T) {
	st := backends(t)[0].open(t)
	record(t, st, 5)
	want := logOf(t, st)
	clock := newFakeClock()
	rc := newReceiver(t, clock)
	var refusals atomic.Int32
	rc.answer = func(_ time.Time, e store.AuditEntry) (int, string) {
		if e.Seq == want[1].Seq && refusals.Add(1) <= 3 {
			return http.StatusUnauthorized, ""
		}
		return 0, ""
	}
	logs := &syncBuffer{}
	f := follower(t, st, rc, "bot-a")
	f.Sink.(*Webhook).log = zerolog.New(logs)
	run(t, f)
	clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
	rc.requireWhole(t, want)
	if n := refusals.Load(); n != 4 {
		t.Errorf("entry 2 was sent %d times, want 4 (3 refused, then taken)", n)
	}
	if got := len(rc.attempts); got != len(want)+3 {
		t.Errorf("%d attempts, want %d: only the refused entry is sent again", got, len(want)+3)
	}
	if !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), "AUDIT_WEBHOOK_SECRET") || strings.Contains(logs.String(), "token=abc") {
		t.Errorf("log %s; want an error saying what to fix, without the URL's query", logs)
	}
}

// TestWebhookHonoursRetryAfter: a 429's Retry-After is waited out.
func TestWebhookHonoursRetryAfter(t *testing.T) {
	st := backends(t)[0].open(t)
	record(t, st, 2)
	want := logOf(t, st)
	clock := newFakeClock()
	rc := newReceiver(t, clock)
	var once atomic.Bool
	rc.answer = func(time.Time, store.AuditEntry) (int, string) {
		if once.CompareAndSwap(false, true) {
			return http.StatusTooManyRequests, "120"
		}
		return 0, ""
	}
	run(t, follower(t, st, rc, "bot-a"))
	clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
	rc.requireWhole(t, want)
	if gap := rc.attempts[1].Sub(rc.attempts[0]); gap < 120*time.Second {
		t.Errorf("retried %v after a 429 asking for 120 s", gap)
	}
}

// TestWebhookFollowsNoRedirect: a redirect to another host is not
// followed (the entry would go where nobody configured), only retried.
func TestWebhookFollowsNoRedirect(t *testing.T) {
	st := backends(t)[0].open(t)
	record(t, st, 2)
	want := logOf(t, st)
	clock := newFakeClock()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	rc := newReceiver(t, clock)
	var once atomic.Bool
	rc.answer = func(time.Time, store.AuditEntry) (int, string) {
		if once.CompareAndSwap(false, true) {
			return http.StatusTemporaryRedirect, ""
		}
		return 0, ""
	}
	rc.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", other.URL)
		rc.serve(w, r)
	})
	run(t, follower(t, st, rc, "bot-a"))
	clock.drive(t, time.Second, func() bool { return len(rc.keptSeqs()) == len(want) })
	rc.requireWhole(t, want)
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

func TestWebhookConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://logs.example.com/slackgate?token=x", true},
		{"http://127.0.0.1:8088/audit", true},
		{"http://localhost:8088/audit", true},
		{"http://[::1]:8088/audit", true},
		{"http://logs.example.com/audit", false},
		{"http://10.0.0.5/audit", false},
		{"ftp://logs.example.com/", false},
		{"logs.example.com/audit", false},
		{"https:///audit", false},
		{"", false},
	} {
		if err := CheckWebhookURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckWebhookURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
	if err := CheckWebhookSecret(strings.Repeat("x", MinSecretBytes-1)); err == nil {
		t.Error("a 31-byte secret was taken")
	}
	if err := CheckWebhookSecret(strings.Repeat("x", MinSecretBytes)); err != nil {
		t.Errorf("a 32-byte secret: %v", err)
	}
	if _, err := NewWebhook(WebhookConfig{URL: "https://logs.example.com/", Secret: "short"}); err == nil {
		t.Error("NewWebhook took a short secret")
	}
}

// syncBuffer is a log sink the webhook and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWebhookGetsEachCheckpointAfterWhatItSeals: checkpoints reach the
// receiver as records of their own, each after the entries it seals and
// once; what the receiver kept, one body a line, verifies with the key
// alone; and a reset, whose seq is behind the last checkpoint delivered,
// still arrives.
func TestWebhookGetsEachCheckpointAfterWhatItSeals(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			pub, key := sealKey()
			record(t, st, page+6) // the first checkpoint beyond the first page
			first := sealHead(t, st, key, store.AuditCheckpoint{}, false)
			record(t, st, 4)
			second := sealHead(t, st, key, first, false)
			record(t, st, 2)
			clock := newFakeClock()
			rc := newReceiver(t, clock)
			run(t, follower(t, st, rc, "bot-a"))
			want := logOf(t, st)
			clock.drive(t, time.Second, func() bool { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.cps) == 2 && len(rc.kept) == len(want) })
			rc.requireWhole(t, want)
			rc.mu.Lock()
			order := slices.Clone(rc.records)
			cps := slices.Clone(rc.cps)
			rc.mu.Unlock()
			if !cps[0].Same(first) || !cps[1].Same(second) {
				t.Fatalf("checkpoints kept = %+v, want the two in order", cps)
			}
			// Each checkpoint came after the entry it seals.
			var seen uint64
			for _, body := range order {
				var rec store.AuditEntryRecord
				if err := json.Unmarshal([]byte(body), &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Record == store.AuditRecordEntry {
					seen = max(seen, rec.Seq)
				} else if rec.Seq > seen {
					t.Errorf("the checkpoint at seq %d arrived when the receiver had entries up to seq %d", rec.Seq, seen)
				}
			}
			v := store.NewAuditVerifier(pub, cps)
			for _, e := range want {
				v.Entry(e)
			}
			if rep := v.Finish(); rep.Break != nil || rep.Checkpoints != 2 {
				t.Errorf("what the receiver kept: %+v (%v)", rep, rep.Break)
			}

			reset := sealHead(t, st, key, second, true)
			clock.drive(t, time.Second, func() bool { rc.mu.Lock(); defer rc.mu.Unlock(); return len(rc.cps) == 3 })
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if !rc.cps[2].Same(reset) || !rc.cps[2].Reset {
				t.Errorf("third checkpoint = %+v, want the reset", rc.cps[2])
			}
		})
	}
}

// sealKey is a bot's signing key.
func sealKey() (ed25519.PublicKey, ed25519.PrivateKey) {
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	return k.Public().(ed25519.PublicKey), k
}

// sealHead signs and stores a checkpoint of st's head after prev (a reset
// of an entry halfway when reset), as a bot does.
func sealHead(t *testing.T, st store.Store, key ed25519.PrivateKey, prev store.AuditCheckpoint, reset bool) store.AuditCheckpoint {
	t.Helper()
	es := logOf(t, st)
	e := es[len(es)-1]
	if reset {
		e = es[len(es)/2] // behind the checkpoints it replaces
	}
	cp := store.NextAuditCheckpoint(prev, store.AuditLink{Seq: e.Seq, Hash: e.Hash, Entry: e.ID}, time.Now())
	cp.Reset = reset
	if err := store.SignAuditCheckpoint(key, &cp); err != nil {
		t.Fatal(err)
	}
	if err := st.PutAuditCheckpoint(t.Context(), cp, prev.Seq); err != nil {
		t.Fatal(err)
	}
	return cp
}
