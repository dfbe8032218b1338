package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// testValidation pins that every storing method refuses what the domain
// type's Validate refuses, with ErrInvalid, and stores nothing.
func (h *harness) testValidation(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)

	unknownKind := newRequest(uniq("sess"), 0)
	unknownKind.Kind = "poll"
	noSessionID := newSession()
	noSessionID.ID = ""
	badState := newSession()
	badState.State = "sleeping"
	skippedAllow := allow("U1")
	skippedAllow.Skipped = true
	answeredDeny := store.Decision{Outcome: store.OutcomeDeny, By: "U1", At: base, Answers: map[string]string{"q": "a"}}
	badCause := store.Event{Type: store.EventExit, SessionID: uniq("sess"), At: base, Exit: &store.Exit{Code: 1, Cause: "bored"}}

	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"CreateRequestOfUnknownKind", func() error { return s.CreateRequest(ctx, unknownKind) }},
		{"DecideSkippedAllow", func() error { _, err := s.Decide(ctx, r.ID, skippedAllow); return err }},
		{"DecideDenyWithAnswers", func() error { _, err := s.Decide(ctx, r.ID, answeredDeny); return err }},
		{"CreateSessionWithoutID", func() error { return s.CreateSession(ctx, noSessionID) }},
		{"CreateSessionInUnknownState", func() error { return s.CreateSession(ctx, badState) }},
		{"EnqueueWithoutSession", func() error { _, err := s.Enqueue(ctx, store.Input{Text: "hi", At: base}); return err }},
		{"EnqueueUnknownControl", func() error {
			_, err := s.Enqueue(ctx, store.Input{SessionID: uniq("sess"), Control: "reboot", At: base})
			return err
		}},
		{"EnqueueControlWithText", func() error {
			_, err := s.Enqueue(ctx, store.Input{SessionID: uniq("sess"), Control: store.ControlInterrupt, Text: "hi", At: base})
			return err
		}},
		{"PublishUnknownType", func() error {
			_, err := s.Publish(ctx, store.Event{Type: "gossip", SessionID: uniq("sess"), At: base})
			return err
		}},
		{"PublishWithoutSession", func() error {
			_, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, At: base})
			return err
		}},
		{"PublishExitOfUnknownCause", func() error { _, err := s.Publish(ctx, badCause); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireIs(t, tc.call(), store.ErrInvalid, tc.name)
		})
	}
	if _, err := s.GetRequest(ctx, unknownKind.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRequest of a refused request: err = %v, want ErrNotFound", err)
	}
	if _, err := s.GetSession(ctx, badState.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession of a refused session: err = %v, want ErrNotFound", err)
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if !got.Pending() {
		t.Errorf("a refused decision settled the request: %+v", got.Decision)
	}
	// Nothing refused reached the audit log: only r's creation is there.
	entries, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	if len(entries) != 1 || entries[0].Action != store.AuditCreated || entries[0].RequestID != r.ID {
		t.Errorf("AuditLog = %+v, want only the creation of %s", entries, r.ID)
	}
}

// testZeroTimes pins what the contract says of a zero creation time: it is
// not an error, and the store sets it to the time of the call, so a record
// is never stored without one.
func (h *harness) testZeroTimes(t *testing.T) {
	// within reports whether got is between the instants taken before and
	// after the call (a backend may keep only microseconds).
	within := func(t *testing.T, what string, got, before, after time.Time) {
		t.Helper()
		if got.Before(before.Truncate(time.Microsecond)) || got.After(after) {
			t.Errorf("%s = %v, want the time of the call, between %v and %v", what, got, before, after)
		}
	}
	t.Run("Request", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		r := newRequest(uniq("sess"), 0)
		r.CreatedAt = time.Time{}
		before := time.Now()
		requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
		after := time.Now()
		got, err := s.GetRequest(ctx, r.ID)
		requireNoError(t, err, "GetRequest")
		within(t, "CreatedAt", got.CreatedAt, before, after)
		entries, err := s.AuditLog(ctx, "", 10)
		requireNoError(t, err, "AuditLog")
		if len(entries) != 1 || !entries[0].At.Equal(got.CreatedAt) {
			t.Errorf("AuditLog = %+v, want one creation entry at %v", entries, got.CreatedAt)
		}
		pending, err := s.ListPending(ctx, r.SessionID)
		requireNoError(t, err, "ListPending")
		if len(pending) != 1 || !pending[0].CreatedAt.Equal(got.CreatedAt) {
			t.Errorf("ListPending = %+v, want the request created at %v", pending, got.CreatedAt)
		}
	})
	t.Run("Session", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		sess := newSession()
		sess.CreatedAt = time.Time{}
		before := time.Now()
		requireNoError(t, s.CreateSession(ctx, sess), "CreateSession")
		after := time.Now()
		got, err := s.GetSession(ctx, sess.ID)
		requireNoError(t, err, "GetSession")
		within(t, "CreatedAt", got.CreatedAt, before, after)
	})
	t.Run("Input", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		in := input(uniq("sess"), "hello")
		in.At = time.Time{}
		before := time.Now()
		queued, err := s.Enqueue(ctx, in)
		requireNoError(t, err, "Enqueue")
		after := time.Now()
		within(t, "the returned input's At", queued.At, before, after)
		h.claimNow(t, s, "w1")
		got := h.nextNow(t, s, in.SessionID, "w1")
		if !got.At.Equal(queued.At) {
			t.Errorf("NextInput At = %v, want %v as Enqueue returned it", got.At, queued.At)
		}
	})
	t.Run("Event", func(t *testing.T) {
		s := h.newStore(t)
		sid := uniq("sess")
		ch := make(chan delivery, 1)
		c := h.startConsumer(t, s, uniq("group"), "c1", collect(sid, "c1", ch))
		h.ready(t, s, c)
		before := time.Now()
		_, err := s.Publish(h.ctx(t), store.Event{Type: store.EventAssistantText, SessionID: sid, Text: "no time"})
		requireNoError(t, err, "Publish")
		after := time.Now()
		within(t, "event At", await(t, h, ch, "the event").event.At, before, after)
	})
}

// testRedeliveryBackoff pins Bus.Consume's retry schedule: after the n-th
// failed delivery, the next one comes no sooner than
// store.RedeliveryDelay(base, n) after the handler returned. Only lower
// bounds are asserted, so a slow machine cannot fail it; a backend that
// retried at a fixed interval, or counted from the delivery rather than the
// failure, would deliver early and fail.
func (h *harness) testRedeliveryBackoff(t *testing.T) {
	s := h.newStore(t)
	sid := uniq("sess")
	type try struct{ start, end time.Time }
	tries := make(chan try, store.MaxDeliveries+1)
	c := h.startConsumer(t, s, uniq("group"), "c1", func(_ context.Context, e store.Event) error {
		if e.SessionID != sid {
			return nil
		}
		start := time.Now()
		defer func() { tries <- try{start, time.Now()} }()
		return errors.New("slack is down")
	})
	h.ready(t, s, c)
	h.publish(t, s, store.Event{Type: store.EventError, SessionID: sid, At: base, Text: "fails"})
	var got []try
	for n := range store.MaxDeliveries {
		got = append(got, await(t, h, tries, "delivery "+string(rune('1'+n))))
	}
	for n := 1; n < len(got); n++ {
		waited := got[n].start.Sub(got[n-1].end)
		if want := store.RedeliveryDelay(h.cfg.redeliveryDelay, n); waited < want {
			t.Errorf("delivery %d came %v after delivery %d failed, want at least %v", n+1, waited, n, want)
		}
	}
}
