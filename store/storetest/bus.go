package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// probeSession marks the events the suite publishes to learn that a consumer
// is running and receiving (a session no test uses); every consumer
// acknowledges them without looking further.
const probeSession = "storetest-probe"

// probeEvery is how often a probe is published while waiting for a group to
// come to life; it only paces the handshake, correctness does not depend on it.
const probeEvery = 20 * time.Millisecond

type delivery struct {
	consumer string
	event    store.Event
}

// running is one Consume call owned by a test.
type running struct {
	group, name string
	probes      chan struct{}
	cancel      context.CancelFunc
	done        chan error
}

// startConsumer runs Consume in a goroutine. fn sees every event but the
// suite's probes. The consumer is stopped (and waited for) at cleanup.
func (h *harness) startConsumer(t *testing.T, s store.Store, group, name string, fn func(context.Context, store.Event) error) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(h.ctx(t))
	r := &running{group: group, name: name, probes: make(chan struct{}, 1), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- s.Consume(ctx, group, name, func(ctx context.Context, e store.Event) error {
			if e.SessionID == probeSession {
				select {
				case r.probes <- struct{}{}:
				default:
				}
				return nil
			}
			return fn(ctx, e)
		})
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// stop cancels the consumer and returns what Consume returned.
func (h *harness) stop(t *testing.T, r *running) error {
	t.Helper()
	r.cancel()
	return await(t, h, r.done, "Consume to return after cancel")
}

// ready publishes probes until r has received one: from then on, the
// consumer is running and has caught up with the log.
func (h *harness) ready(t *testing.T, s store.Store, r *running) {
	t.Helper()
	deadline := time.After(h.cfg.timeout)
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		if _, err := s.Publish(h.ctx(t), store.Event{Type: store.EventSessionStarted, SessionID: probeSession, At: time.Now()}); err != nil {
			t.Fatalf("Publish probe: %v", err)
		}
		select {
		case <-r.probes:
			return
		case <-tick.C:
		case <-deadline:
			t.Fatalf("consumer %s of group %s received no event within %v", r.name, r.group, h.cfg.timeout)
		}
	}
}

// collect returns a handler that passes the events of one session to ch.
func collect(sessionID, consumer string, ch chan<- delivery) func(context.Context, store.Event) error {
	return func(ctx context.Context, e store.Event) error {
		if e.SessionID != sessionID {
			return nil
		}
		select {
		case ch <- delivery{consumer: consumer, event: e}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func textEvent(sessionID string, n int) store.Event {
	return store.Event{Type: store.EventAssistantText, SessionID: sessionID, At: base.Add(time.Duration(n) * time.Millisecond), Text: fmt.Sprintf("event %d", n)}
}

func (h *harness) publish(t *testing.T, s store.Store, e store.Event) store.Event {
	t.Helper()
	id, err := s.Publish(h.ctx(t), e)
	requireNoError(t, err, "Publish")
	if id == "" {
		t.Fatal("Publish returned an empty id")
	}
	e.ID = id
	return e
}

func requireSameEvent(t *testing.T, want, got store.Event) {
	t.Helper()
	if !want.At.Equal(got.At) {
		t.Errorf("event At = %v, want %v", got.At, want.At)
	}
	if !sameJSON(want.Input, got.Input) {
		t.Errorf("event Input = %s, want %s", got.Input, want.Input)
	}
	w, g := want, got
	w.At, g.At = time.Time{}, time.Time{}
	w.Input, g.Input = nil, nil
	if !reflect.DeepEqual(w, g) {
		t.Errorf("event differs:\n got %+v\nwant %+v", g, w)
	}
}

func (h *harness) testBus(t *testing.T) {
	t.Run("DeliversInOrderWithEveryField", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		ch := make(chan delivery)
		c := h.startConsumer(t, s, uniq("group"), "c1", collect(sid, "c1", ch))
		h.ready(t, s, c)
		full := store.Event{
			Type: store.EventResult, SessionID: sid, RequestID: "req-1", At: base,
			Text: "done", Tool: "Bash", Input: json.RawMessage(`{"command":"make"}`), IsError: true,
			Result: &store.Result{Subtype: "error_max_turns", IsError: true, Turns: 3, DurationMS: 1234, CostUSD: 0.0125, Text: "stopped", Errors: []string{"a", "b"}},
			Exit:   &store.Exit{Code: 137, Cause: store.ExitCrashed, Reason: "signal: killed", Stderr: []string{"line 1", "line 2"}},
		}
		want := []store.Event{h.publish(t, s, full)}
		for i := range 9 {
			want = append(want, h.publish(t, s, textEvent(sid, i)))
		}
		for i, w := range want {
			d := await(t, h, ch, fmt.Sprintf("event %d", i))
			requireSameEvent(t, w, d.event)
		}
	})
	t.Run("NewGroupStartsAtOldestEventInLog", func(t *testing.T) {
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		// Published before any group exists: a worker that started first.
		want := []store.Event{h.publish(t, s2, textEvent(sid, 0)), h.publish(t, s2, textEvent(sid, 1))}
		ch := make(chan delivery, 100)
		c := h.startConsumer(t, s1, uniq("group"), "c1", collect(sid, "c1", ch))
		h.ready(t, s1, c)
		want = append(want, h.publish(t, s1, textEvent(sid, 2)))
		for i, w := range want {
			d := await(t, h, ch, fmt.Sprintf("event %d", i))
			requireSameEvent(t, w, d.event)
		}
	})
	t.Run("NewGroupGetsEventsAnotherGroupAcknowledged", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		chA := make(chan delivery, 100)
		a := h.startConsumer(t, s, uniq("group-a"), "c", collect(sid, "a", chA))
		h.ready(t, s, a)
		e := h.publish(t, s, textEvent(sid, 0))
		requireSameEvent(t, e, await(t, h, chA, "the event in group a").event)
		// Groups are independent: what group a acknowledged is still news
		// to a group created afterwards (the log is far below its cap).
		chB := make(chan delivery, 100)
		h.startConsumer(t, s, uniq("group-b"), "c", collect(sid, "b", chB))
		requireSameEvent(t, e, await(t, h, chB, "the event in group b").event)
	})
	t.Run("GroupResumesWhereItStopped", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		group := uniq("group")
		ch := make(chan delivery, 100)
		c := h.startConsumer(t, s, group, "c1", collect(sid, "c1", ch))
		h.ready(t, s, c)
		if err := h.stop(t, c); err != nil {
			t.Fatalf("Consume returned %v after cancel, want nil", err)
		}
		// Published while nobody consumes: the group still gets them.
		want := []store.Event{h.publish(t, s, textEvent(sid, 1)), h.publish(t, s, textEvent(sid, 2))}
		h.startConsumer(t, s, group, "c2", collect(sid, "c2", ch))
		for i, w := range want {
			d := await(t, h, ch, fmt.Sprintf("event %d after restart", i))
			requireSameEvent(t, w, d.event)
		}
	})
	t.Run("ConsumersOfOneGroupSplitEvents", func(t *testing.T) {
		const n = 30
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		group := uniq("group")
		ch := make(chan delivery, n)
		c1 := h.startConsumer(t, s1, group, "c1", collect(sid, "c1", ch))
		h.ready(t, s1, c1)
		h.startConsumer(t, s2, group, "c2", collect(sid, "c2", ch))
		published := map[string]bool{}
		for i := range n {
			published[h.publish(t, s1, textEvent(sid, i)).ID] = true
		}
		seen := map[string]string{}
		for range n {
			d := await(t, h, ch, "an event of the group")
			if prev, dup := seen[d.event.ID]; dup {
				t.Fatalf("event %s delivered to %s and %s", d.event.ID, prev, d.consumer)
			}
			if !published[d.event.ID] {
				t.Fatalf("delivered unknown event %s", d.event.ID)
			}
			seen[d.event.ID] = d.consumer
		}
		requireBlocked(t, ch, "a delivery beyond the published events")
	})
	t.Run("EveryGroupGetsEverything", func(t *testing.T) {
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		chA, chB := make(chan delivery, 10), make(chan delivery, 10)
		a := h.startConsumer(t, s1, uniq("group-a"), "c", collect(sid, "a", chA))
		b := h.startConsumer(t, s2, uniq("group-b"), "c", collect(sid, "b", chB))
		h.ready(t, s1, a)
		h.ready(t, s1, b)
		var want []store.Event
		for i := range 5 {
			want = append(want, h.publish(t, s2, textEvent(sid, i)))
		}
		for name, ch := range map[string]chan delivery{"a": chA, "b": chB} {
			for i, w := range want {
				d := await(t, h, ch, fmt.Sprintf("event %d in group %s", i, name))
				requireSameEvent(t, w, d.event)
			}
		}
	})
	t.Run("FailedEventIsDeliveredAgain", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		var mu sync.Mutex
		tries := map[string]int{}
		acked := make(chan store.Event, 10)
		c := h.startConsumer(t, s, uniq("group"), "c1", func(_ context.Context, e store.Event) error {
			if e.SessionID != sid {
				return nil
			}
			mu.Lock()
			tries[e.ID]++
			n := tries[e.ID]
			mu.Unlock()
			if e.Text == "flaky" && n < 3 {
				return errors.New("slack is down")
			}
			acked <- e
			return nil
		})
		h.ready(t, s, c)
		flaky := h.publish(t, s, store.Event{Type: store.EventError, SessionID: sid, At: base, Text: "flaky"})
		fine := h.publish(t, s, textEvent(sid, 1))
		got := map[string]bool{}
		for range 2 {
			got[await(t, h, acked, "an acknowledged event").ID] = true
		}
		if !got[flaky.ID] || !got[fine.ID] {
			t.Fatalf("acknowledged %v, want %s and %s", got, flaky.ID, fine.ID)
		}
		mu.Lock()
		defer mu.Unlock()
		if tries[flaky.ID] != 3 {
			t.Errorf("the flaky event was handled %d times, want 3 (two failures, one success)", tries[flaky.ID])
		}
	})
	t.Run("FailedEventWaitsTheRedeliveryDelay", h.testRedeliveryBackoff)
	t.Run("PoisonedEventStopsAfterMaxDeliveries", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		var (
			mu         sync.Mutex
			tries      int
			firstTry   time.Time
			lastTry    time.Time
			reachedMax = make(chan struct{})
			oneTooMany = make(chan struct{})
			later      = make(chan store.Event, 1)
		)
		c := h.startConsumer(t, s, uniq("group"), "c1", func(_ context.Context, e store.Event) error {
			if e.SessionID != sid {
				return nil
			}
			if e.Text != "poison" {
				later <- e
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			tries++
			switch tries {
			case 1:
				firstTry = time.Now()
			case store.MaxDeliveries:
				lastTry = time.Now()
				close(reachedMax)
			case store.MaxDeliveries + 1:
				close(oneTooMany)
			}
			return errors.New("always fails")
		})
		h.ready(t, s, c)
		h.publish(t, s, store.Event{Type: store.EventError, SessionID: sid, At: base, Text: "poison"})
		await(t, h, reachedMax, fmt.Sprintf("%d deliveries of the poisoned event", store.MaxDeliveries))
		// The consumer is not stalled by it...
		next := h.publish(t, s, textEvent(sid, 1))
		requireSameEvent(t, next, await(t, h, later, "the event after the poisoned one"))
		// ...and it does not come back. Absence can only be shown by waiting:
		// twice as long as the retries so far took covers a backend whose
		// delay doubles as well as one that retries at a fixed interval.
		mu.Lock()
		quiet := 2*lastTry.Sub(firstTry) + blockFor
		mu.Unlock()
		select {
		case <-oneTooMany:
			t.Fatalf("the poisoned event was delivered more than %d times", store.MaxDeliveries)
		case <-time.After(min(quiet, h.cfg.timeout)):
		}
	})
	t.Run("ReturnsNilOnCancel", func(t *testing.T) {
		s := h.newStore(t)
		c := h.startConsumer(t, s, uniq("group"), "c1", func(context.Context, store.Event) error { return nil })
		h.ready(t, s, c)
		if err := h.stop(t, c); err != nil {
			t.Fatalf("Consume returned %v after cancel, want nil", err)
		}
	})
	t.Run("UnackedEventOfStoppedConsumerIsRedelivered", func(t *testing.T) {
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		group := uniq("group")
		holding := make(chan store.Event, 1)
		a := h.startConsumer(t, s1, group, "A", func(ctx context.Context, e store.Event) error {
			if e.SessionID != sid {
				return nil
			}
			holding <- e
			<-ctx.Done() // A dies while handling it
			return ctx.Err()
		})
		h.ready(t, s1, a)
		e := h.publish(t, s1, textEvent(sid, 1))
		requireSameEvent(t, e, await(t, h, holding, "A to receive the event"))
		if err := h.stop(t, a); err != nil {
			t.Fatalf("Consume returned %v after cancel, want nil", err)
		}
		ch := make(chan delivery, 10)
		h.startConsumer(t, s2, group, "B", collect(sid, "B", ch))
		d := await(t, h, ch, "B to receive the event A left unacknowledged")
		requireSameEvent(t, e, d.event)
	})
	t.Run("PublishedOnSecondClientReachesConsumer", func(t *testing.T) {
		s1, s2 := h.pair(t)
		sid := uniq("sess")
		ch := make(chan delivery, 1)
		c := h.startConsumer(t, s1, uniq("group"), "c1", collect(sid, "c1", ch))
		h.ready(t, s2, c)
		e := h.publish(t, s2, textEvent(sid, 1))
		requireSameEvent(t, e, await(t, h, ch, "the event").event)
	})
	t.Run("RequestsPublishCreatedAndSettled", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sid := uniq("sess")
		ch := make(chan delivery, 10)
		c := h.startConsumer(t, s, uniq("group"), "c1", collect(sid, "c1", ch))
		h.ready(t, s, c)
		r := newRequest(sid, 0)
		requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
		_, err := s.Decide(ctx, r.ID, allow("U1"))
		requireNoError(t, err, "Decide")
		for _, want := range []store.EventType{store.EventRequestCreated, store.EventRequestSettled} {
			d := await(t, h, ch, string(want))
			if d.event.Type != want || d.event.RequestID != r.ID || d.event.SessionID != sid || d.event.ID == "" {
				t.Errorf("event = %+v, want %s for request %s of session %s with an id", d.event, want, r.ID, sid)
			}
		}
	})
}
