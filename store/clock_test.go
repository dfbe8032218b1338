package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// The fake clock behaves as the wall clock's timers do: a timer fires when
// its time comes and not before, at once for a duration <= 0, and a
// stopped one never.
func TestFakeClockTimersFireWhenTheirTimeComes(t *testing.T) {
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c := storetest.NewClock(start)
	soon, later, stopped := c.NewTimer(time.Second), c.NewTimer(time.Minute), c.NewTimer(time.Second)
	if n := c.Timers(); n != 3 {
		t.Fatalf("Timers = %d, want 3", n)
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports true once, for the timer it stopped")
	}
	c.Advance(999 * time.Millisecond)
	requireQuiet(t, soon, later, stopped)
	c.Advance(time.Millisecond)
	select {
	case at := <-soon.C():
		if !at.Equal(start.Add(time.Second)) {
			t.Errorf("fired with %v, want the clock's time %v", at, start.Add(time.Second))
		}
	default:
		t.Fatal("a timer did not fire when its time came")
	}
	requireQuiet(t, later, stopped)
	if soon.Stop() {
		t.Error("Stop of a timer that fired reports true")
	}
	if n := c.Timers(); n != 1 {
		t.Errorf("Timers = %d after one fired and one stopped, want 1", n)
	}
	select {
	case <-c.NewTimer(0).C():
	default:
		t.Error("a timer of 0 did not fire at once")
	}
	if got, want := c.Asked(), []time.Duration{time.Second, time.Minute, time.Second, 0}; !slices.Equal(got, want) {
		t.Errorf("Asked = %v, want %v", got, want)
	}
}

func requireQuiet(t *testing.T, timers ...store.Timer) {
	t.Helper()
	for i, tm := range timers {
		select {
		case <-tm.C():
			t.Fatalf("timer %d fired before its time", i)
		default:
		}
	}
}

// WaitTimers returns once the code under test armed its timer, and not
// before; Sleep on the clock returns when the test moves it past.
func TestSleepOnTheFakeClockEndsWhenTheClockMoves(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	slept := make(chan error, 1)
	go func() { slept <- store.Sleep(ctx, c, time.Hour) }()
	if err := c.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-slept:
		t.Fatalf("Sleep returned %v before the clock moved", err)
	default:
	}
	c.Advance(time.Hour)
	if err := <-slept; err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("Timers = %d after the sleep, want 0", n)
	}
}

// A Sleep whose context ends returns its error and leaves no timer behind.
func TestSleepEndsWithItsContext(t *testing.T) {
	c := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(t.Context())
	slept := make(chan error, 1)
	go func() { slept <- store.Sleep(ctx, c, time.Hour) }()
	wait, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if err := c.WaitTimers(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-slept; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if n := c.Timers(); n != 0 {
		t.Errorf("Timers = %d after the sleep ended, want 0 (Sleep stops its timer)", n)
	}
	if err := store.Sleep(ctx, store.WallClock{}, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) on an ended context = %v, want context.Canceled", err)
	}
	if err := store.Sleep(t.Context(), store.WallClock{}, time.Millisecond); err != nil {
		t.Errorf("Sleep on the wall clock = %v", err)
	}
}
