package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// NewFunc returns a fresh, empty store. It registers its own cleanup (closing
// the store, removing its data) with tb.Cleanup. The suite may Close a store
// itself (the Close tests do), so the cleanup must tolerate a second Close:
// it may ignore the error, but it must not panic or hang.
type NewFunc func(tb testing.TB) store.Store

// Option tunes the suite for a backend.
type Option func(*config)

type config struct {
	second          func(testing.TB, store.Store) store.Store
	writeApprovals  func(testing.TB, store.Store, string, []store.Approval)
	timeout         time.Duration
	redeliveryDelay time.Duration
}

// WithSecondClient makes the suite run its cross-client tests (a decision made
// through one client reaches a WaitDecision blocked on another; events
// published on one client reach a consumer on the other) against a second
// client on the same data as s. A networked backend returns a new connection
// with the same key space; a single-process backend may return s itself,
// which is also what happens when this option is not given. The returned
// store is closed by the suite's cleanup only if it differs from s.
func WithSecondClient(second func(tb testing.TB, s store.Store) store.Store) Option {
	return func(c *config) { c.second = second }
}

// WithApprovalsWriter gives the suite a way to write a request's partial
// approvals straight into the backend's record of it (as text, past
// Approve), as someone with access to the store but no bot's key could:
// the suite checks that copies written so count for no one more. The
// suite fails without it.
func WithApprovalsWriter(write func(tb testing.TB, s store.Store, requestID string, as []store.Approval)) Option {
	return func(c *config) { c.writeApprovals = write }
}

// WithTimeout bounds every wait for something that must happen (a delivery,
// a redelivery, a blocked call returning). The default, 15s, covers backends
// that reclaim an abandoned event after an idle time; such a backend must be
// built with a short idle time in its factory.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = d }
}

// WithRedeliveryDelay tells the suite the base of store.RedeliveryDelay the
// backend was built with (default store.DefaultRedeliveryDelay), so it can
// check that a failed event is not delivered again too soon. Give a backend
// a short one (a few milliseconds): the suite waits out every retry.
func WithRedeliveryDelay(d time.Duration) Option {
	return func(c *config) { c.redeliveryDelay = d }
}

// blockFor is how long a call must stay blocked for the suite to accept that
// it blocks (a negative can only be shown by waiting a bounded time).
const blockFor = 50 * time.Millisecond

// Run runs the conformance suite. newStore is called once per subtest, so
// every subtest starts from an empty store. Subtests run one after another.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(tb testing.TB) store.Store { return openTemp(tb) },
//			storetest.WithSecondClient(func(tb testing.TB, s store.Store) store.Store { return dialAgain(tb, s) }))
//	}
func Run(t *testing.T, newStore NewFunc, opts ...Option) {
	cfg := config{timeout: 15 * time.Second, redeliveryDelay: store.DefaultRedeliveryDelay}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{newStore: newStore, cfg: cfg}
	t.Run("Requests", h.testRequests)
	t.Run("Sessions", h.testSessions)
	t.Run("Queue", h.testQueue)
	t.Run("Bus", h.testBus)
	t.Run("Dedup", h.testDedup)
	t.Run("Counts", h.testCounts)
	t.Run("Audit", h.testAudit)
	t.Run("AppendAudit", h.testAppendAudit)
	t.Run("AppendRefusals", h.testAppendRefusals)
	t.Run("AuditChain", h.testAuditChain)
	t.Run("AuditChainConcurrent", h.testAuditChainConcurrent)
	t.Run("AuditCheckpoints", h.testAuditCheckpoints)
	t.Run("AuditSaysWhatWasDecided", h.testAuditSaysWhatWasDecided)
	t.Run("Refuse", h.testRefuse)
	t.Run("Approvals", h.testApprovals)
	t.Run("Grants", h.testGrants)
	t.Run("Tombstones", h.testTombstones)
	t.Run("Transcripts", h.testTranscripts)
	t.Run("Answers", h.testAnswers)
	t.Run("Reach", h.testReach)
	t.Run("Cards", h.testCards)
	t.Run("SignedRecords", h.testSignedRecords)
	t.Run("Validation", h.testValidation)
	t.Run("ZeroTimesAreTheTimeOfTheCall", h.testZeroTimes)
	t.Run("Close", h.testClose)
}

type harness struct {
	newStore NewFunc
	cfg      config
}

// pair returns a fresh store and a second client on the same data.
func (h *harness) pair(t *testing.T) (store.Store, store.Store) {
	t.Helper()
	s := h.newStore(t)
	if h.cfg.second == nil {
		return s, s
	}
	s2 := h.cfg.second(t, s)
	if s2 != s {
		t.Cleanup(func() { _ = s2.Close() })
	}
	return s, s2
}

// ctx returns a context that ends with the test, bounded by the suite timeout
// so a hanging backend fails instead of stalling the run.
func (h *harness) ctx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*h.cfg.timeout)
	t.Cleanup(cancel)
	return ctx
}

var idSeq atomic.Int64

// uniq returns an id unique within the test binary, so backends that share
// one key space across subtests still see fresh ids.
func uniq(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), idSeq.Add(1))
}

// base is the time tests build requests and decisions around: a fixed
// instant with nanoseconds and a non-UTC zone, so a backend that truncates or
// mangles times fails the round trip.
var base = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("CET", 3600))

func newRequest(sessionID string, n int) store.Request {
	return store.Request{
		ID:           uniq("req"),
		SessionID:    sessionID,
		CLIRequestID: uniq("cli"),
		Kind:         store.KindTool,
		ToolCall: store.ToolCall{
			ToolName: "Bash",
			Input:    json.RawMessage(`{"command":"ls -la"}`),
		},
		CreatedAt: base.Add(time.Duration(n) * time.Second),
	}
}

// createRequest stores a fresh pending request, in a session of its own.
func createRequest(t *testing.T, ctx context.Context, s store.Store) store.Request {
	t.Helper()
	r := newRequest(uniq("sess"), 0)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	return r
}

func allow(by string) store.Decision {
	return store.Decision{Outcome: store.OutcomeAllow, By: by, ByName: "name of " + by, At: base.Add(time.Minute)}
}

// sameJSON reports whether two raw JSON values mean the same thing (a
// backend may re-encode them).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// requireSameRequest compares requests field by field: times with Equal,
// raw JSON by meaning, everything else exactly.
func requireSameRequest(t *testing.T, want, got store.Request) {
	t.Helper()
	if !want.CreatedAt.Equal(got.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt)
	}
	if !want.Deadline.Equal(got.Deadline) {
		t.Errorf("Deadline = %v, want %v", got.Deadline, want.Deadline)
	}
	if !sameJSON(want.Input, got.Input) {
		t.Errorf("Input = %s, want %s", got.Input, want.Input)
	}
	if (want.Decision == nil) != (got.Decision == nil) {
		t.Fatalf("Decision = %+v, want %+v", got.Decision, want.Decision)
	}
	if want.Decision != nil {
		requireSameDecision(t, *want.Decision, *got.Decision)
	}
	w, g := want, got
	w.CreatedAt, g.CreatedAt = time.Time{}, time.Time{}
	w.Deadline, g.Deadline = time.Time{}, time.Time{}
	w.Input, g.Input = nil, nil
	w.Decision, g.Decision = nil, nil
	if !reflect.DeepEqual(w, g) {
		t.Errorf("request differs:\n got %+v\nwant %+v", g, w)
	}
}

func requireSameDecision(t *testing.T, want, got store.Decision) {
	t.Helper()
	if !want.At.Equal(got.At) {
		t.Errorf("Decision.At = %v, want %v", got.At, want.At)
	}
	if !sameJSON(want.UpdatedInput, got.UpdatedInput) {
		t.Errorf("Decision.UpdatedInput = %s, want %s", got.UpdatedInput, want.UpdatedInput)
	}
	w, g := want, got
	w.At, g.At = time.Time{}, time.Time{}
	w.UpdatedInput, g.UpdatedInput = nil, nil
	if !reflect.DeepEqual(w, g) {
		t.Errorf("decision differs:\n got %+v\nwant %+v", g, w)
	}
}

func requireIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func requireNoError(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// result is what a call run in the background returned.
type result[T any] struct {
	value T
	err   error
}

// goCall runs f in a goroutine with a child of ctx. At cleanup the child is
// cancelled and the test waits for the goroutine, so nothing outlives it.
func goCall[T any](t *testing.T, ctx context.Context, f func(context.Context) (T, error)) <-chan result[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan result[T], 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		v, err := f(ctx)
		ch <- result[T]{v, err}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ch
}

// await receives from ch or fails the test after the suite timeout.
func await[T any](t *testing.T, h *harness, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(h.cfg.timeout):
		t.Fatalf("timed out after %v waiting for %s", h.cfg.timeout, what)
		panic("unreachable")
	}
}

// requireBlocked fails if ch delivers within blockFor.
func requireBlocked[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s returned %+v; want it to block", what, v)
	case <-time.After(blockFor):
	}
}
