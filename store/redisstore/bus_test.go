package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// TestConsumeRunsSessionsSideBySide: a handler that waits on one session's
// event does not hold up another session's event read in the same batch,
// and each session's events still come one after another, in order.
func TestConsumeRunsSessionsSideBySide(t *testing.T) {
	url := redistest.URL(t)
	s := open(t, url, uniquePrefix())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Published before the group exists: the first read takes all three.
	for _, e := range []store.Event{
		{Type: store.EventAssistantText, SessionID: "a", Text: "a1"},
		{Type: store.EventAssistantText, SessionID: "a", Text: "a2"},
		{Type: store.EventAssistantText, SessionID: "b", Text: "b1"},
	} {
		if _, err := s.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b1 := make(chan struct{})
	seen := make(chan string, 3)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(cctx, "g", "c1", func(ctx context.Context, e store.Event) error {
			switch e.Text {
			case "a1":
				select { // a slow event: it waits for the other session's
				case <-b1:
				case <-ctx.Done():
					return ctx.Err()
				}
			case "b1":
				// Recorded before a1 is let go, so the order seen is
				// the order the handlers got past their waits.
				seen <- e.Text
				close(b1)
				return nil
			}
			seen <- e.Text
			return nil
		})
	}()
	var got []string
	for len(got) < 3 {
		select {
		case text := <-seen:
			got = append(got, text)
		case <-ctx.Done():
			t.Fatalf("after %q: session b's event waited behind session a's", got)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"b1", "a1", "a2"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("handled %q, want %q", got, want)
	}
}

// TestConsumeAcknowledgesAnEntryWithoutWaitingForItsBatch: an entry done
// while another session's handler of the same read still runs is
// acknowledged without waiting for it.
func TestConsumeAcknowledgesAnEntryWithoutWaitingForItsBatch(t *testing.T) {
	url := redistest.URL(t)
	prefix := uniquePrefix()
	s := open(t, url, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Published before the group exists: the first read takes them all.
	const sessions = 8
	for i := range sessions {
		if _, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: fmt.Sprint("s", i), Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "slow", Text: "slow"}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	handled := make(chan string, sessions+1)
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(cctx, "g", "c1", func(ctx context.Context, e store.Event) error {
			if e.Text == "slow" {
				<-release
			}
			handled <- e.SessionID
			return nil
		})
	}()
	for range sessions {
		<-handled
	}
	// The fast ones are acknowledged while the slow one still runs.
	events := redisstore.Key(prefix, "events", "")
	eventually(t, "the finished entries to be acknowledged", func() bool {
		return s.Client().XPending(ctx, events, "g").Val().Count == 1
	})
	close(release)
	<-handled
	eventually(t, "the slow entry to be acknowledged", func() bool {
		return s.Client().XPending(ctx, events, "g").Val().Count == 0
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
