package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

// TestEventLogWithoutGroupsKeepsEventsUpToItsCap: before any group exists
// the log is kept for the first one, which starts at its oldest event, but
// only up to the cap.
func TestEventLogWithoutGroupsKeepsEventsUpToItsCap(t *testing.T) {
	defer boltstore.SetTrimEvery(4)()
	defer boltstore.SetMaxEvents(10)()
	s := open(t, filepath.Join(t.TempDir(), "slackgate.db"))
	ctx := t.Context()
	var ids []string
	publish := func(n int) {
		for range n {
			id, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "s", Text: strconv.Itoa(len(ids))})
			must(t, err)
			ids = append(ids, id)
		}
	}
	requireLog := func(want []string) {
		t.Helper()
		got, err := s.EventIDs()
		must(t, err)
		if !slices.Equal(got, want) {
			t.Fatalf("log holds %v, want %v", got, want)
		}
	}

	publish(8) // two trims ran; no group, below the cap: all stay
	requireLog(ids)
	publish(8) // trims at 12 and 16 keep the newest 10
	requireLog(ids[6:])

	got := make(chan store.Event, len(ids))
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(cctx, "late", "c", func(_ context.Context, e store.Event) error {
			got <- e
			return nil
		})
	}()
	defer func() {
		stop()
		must(t, <-done)
	}()
	for _, want := range ids[6:] {
		select {
		case e := <-got:
			if e.ID != want {
				t.Fatalf("the new group received %s, want %s (the oldest event left, then in order)", e.ID, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the new group did not receive %s", want)
		}
	}
}

// TestDeliveryOfEventDroppedByTheCapIsForgotten: a failed delivery waiting
// for its retry does not hold the log past its cap; once its event is gone
// the consumer drops it and carries on.
func TestDeliveryOfEventDroppedByTheCapIsForgotten(t *testing.T) {
	defer boltstore.SetTrimEvery(4)()
	defer boltstore.SetMaxEvents(4)()
	s := open(t, filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithRedeliveryDelay(time.Hour))
	ctx := t.Context()
	failed := make(chan struct{}, 1)
	got := make(chan store.Event, 100)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(cctx, "g", "c", func(_ context.Context, e store.Event) error {
			if e.Text == "poison" {
				failed <- struct{}{}
				return errors.New("fails until the cap drops it")
			}
			got <- e
			return nil
		})
	}()
	defer func() {
		stop()
		must(t, <-done)
	}()
	poison, err := s.Publish(ctx, store.Event{Type: store.EventError, SessionID: "s", Text: "poison"})
	must(t, err)
	select {
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer never handled the first event")
	}
	// One at a time, so the consumer is never behind when the cap trims.
	var last string
	for i := range 8 {
		last, err = s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "s", Text: strconv.Itoa(i)})
		must(t, err)
		select {
		case e := <-got:
			if e.Text != strconv.Itoa(i) {
				t.Fatalf("received %q, want %q", e.Text, strconv.Itoa(i))
			}
		case err := <-done:
			t.Fatalf("Consume returned %v while events were left", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not delivered", i)
		}
	}
	ids, err := s.EventIDs()
	must(t, err)
	if slices.Contains(ids, poison) || !slices.Contains(ids, last) {
		t.Errorf("log holds %v; want the newest %s, without the failed %s", ids, last, poison)
	}
	held, err := s.PendingIDs("g")
	must(t, err)
	if slices.Contains(held, poison) {
		t.Errorf("the group still holds a delivery of %s, whose event is gone: %v", poison, held)
	}
}
