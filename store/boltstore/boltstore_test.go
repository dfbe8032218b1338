package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(tb testing.TB, path string, opts ...boltstore.Option) *boltstore.Store {
	tb.Helper()
	s, err := boltstore.Open(path, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	// A short redelivery delay keeps the retry tests quick; fsync stays on.
	const redelivery = 5 * time.Millisecond
	storetest.Run(t, func(tb testing.TB) store.Store {
		return open(tb, filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithRedeliveryDelay(redelivery))
	}, storetest.WithRedeliveryDelay(redelivery), storetest.WithApprovalsWriter(
		func(tb testing.TB, s store.Store, id string, as []store.Approval) {
			if err := boltstore.WriteApprovals(s.(*boltstore.Store), id, as); err != nil {
				tb.Fatal(err)
			}
		}))
}

// BenchmarkStore is the default: every commit is fsynced (twice, by bbolt).
//
//	make bench   # figures: -benchtime 3000x -count 3
//
// Measured 2026-11-22 on the 2-core machine, p50 / p99, fsync on and
// (BenchmarkStoreNoSync) off:
//
//	CreateRequest → Decide → WaitDecision   1.0 / 1.9 ms     0.18 / 0.89 ms
//	Enqueue → NextInput                     0.66 / 1.1 ms    0.03 / 0.20 ms
//	Publish → Consume                       1.19 / 2.0 ms    0.08 / 0.56 ms
//
// The target was 0.5 ms for the first; fsync stays on. The round trip is
// two bbolt commits, each syncing twice, and one fdatasync on this disk
// takes 0.13–0.27 ms, so durability alone costs 0.5–1.1 ms; without it a
// machine crash could lose a decision Claude has already acted on, or the
// audit entry saying who made it. A person clicks in seconds; a
// millisecond of fsync is the right price.
func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(tb testing.TB) store.Store {
		return open(tb, filepath.Join(tb.TempDir(), "slackgate.db"))
	})
}

// BenchmarkStoreNoSync shows what the fsyncs cost (see WithNoSync for what
// skipping them risks).
func BenchmarkStoreNoSync(b *testing.B) {
	storetest.Bench(b, func(tb testing.TB) store.Store {
		return open(tb, filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithNoSync())
	})
}

// BenchmarkAuditAppend: the cost of one audit entry (storetest.BenchAudit),
// fsync on (the default) and off. Before the audit chain (d641776) and
// after, interleaved, three rounds of -benchtime 2000x on 2026-11-26 at
// load average 7-12: without fsync, serial p50 39-45 µs before, 63-96 µs
// after (the entry's JSON read back, its canonical encoding, two SHA-256,
// the head read and written in the transaction); with fsync 1.1-1.4 ms
// before and 1.3-2.2 ms after, the commit's syncs dominating.
func BenchmarkAuditAppend(b *testing.B) {
	b.Run("Sync", func(b *testing.B) {
		storetest.BenchAudit(b, func(tb testing.TB) store.Store {
			return open(tb, filepath.Join(tb.TempDir(), "slackgate.db"))
		})
	})
	b.Run("NoSync", func(b *testing.B) {
		storetest.BenchAudit(b, func(tb testing.TB) store.Store {
			return open(tb, filepath.Join(tb.TempDir(), "slackgate.db"), boltstore.WithNoSync())
		})
	})
}

func TestOpenCreatesParentDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "slackgate.db")
	s := open(t, path)
	if s.Path() != path {
		t.Fatalf("Path = %s, want %s", s.Path(), path)
	}
}

func TestOpenLockedFileSaysWhoHasIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackgate.db")
	open(t, path)
	// bbolt's flock is per open file, so a second open in this process is
	// refused exactly as one from another process would be.
	_, err := boltstore.Open(path, boltstore.WithLockTimeout(100*time.Millisecond))
	if err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
	if !strings.Contains(err.Error(), "another slackgate already using "+path+"?") {
		t.Fatalf("error %q does not name the likely cause", err)
	}
}

func TestCloseTwiceIsFine(t *testing.T) {
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReopenKeepsEverything closes the file with work in every part of the
// store and checks that a new Open picks it all up.
func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slackgate.db")
	ctx := t.Context()
	s1, err := boltstore.Open(path, boltstore.WithRedeliveryDelay(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()

	req := store.Request{ID: "r1", SessionID: "s1", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: time.Now()}
	must(t, s1.CreateRequest(ctx, req))
	sess := store.Session{ID: "s1", Thread: store.MessageRef{Channel: "C1", TS: "1.1"}, State: store.SessionIdle}
	must(t, s1.CreateSession(ctx, sess))
	for _, text := range []string{"one", "two"} {
		_, err := s1.Enqueue(ctx, store.Input{SessionID: "s1", Text: text})
		must(t, err)
	}
	// An owned session keeps its owner and its inbox.
	_, err = s1.Enqueue(ctx, store.Input{SessionID: "s2", Text: "owned"})
	must(t, err)
	if id, err := s1.Claim(ctx, "w-old"); err != nil || id != "s1" {
		t.Fatalf("Claim = %s, %v; want s1 (first ready)", id, err)
	}
	_, err = s1.Enqueue(ctx, store.Input{SessionID: "s1", Text: "three"})
	must(t, err)

	// Group g: one event held by a consumer that never finishes it (the
	// process "dies" with it), one published after that consumer left.
	held := make(chan store.Event, 1)
	release := make(chan struct{})
	consumeCtx, stopConsume := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- s1.Consume(consumeCtx, "g", "A", func(ctx context.Context, e store.Event) error {
			if e.SessionID != "events" {
				return nil
			}
			held <- e
			<-release
			return errors.New("died")
		})
	}()
	// The group exists once Consume has created it: wait for the first event.
	first := publishUntilReceived(t, s1, held)
	// Close while A still holds the event: nothing acknowledges it.
	must(t, s1.Close())
	close(release)
	stopConsume()
	<-consumed

	s2 := open(t, path)
	gotReq, err := s2.GetRequest(ctx, "r1")
	must(t, err)
	if !gotReq.Pending() {
		t.Error("the pending request was settled by the reopen")
	}
	pending, err := s2.ListPending(ctx, "")
	must(t, err)
	if len(pending) != 1 || pending[0].ID != "r1" {
		t.Errorf("ListPending after reopen = %v", pending)
	}
	gotSess, err := s2.SessionByThread(ctx, sess.Thread)
	must(t, err)
	if gotSess.ID != "s1" {
		t.Errorf("SessionByThread after reopen = %s", gotSess.ID)
	}
	// s1 is still owned by its worker's earlier life, with its inbox intact;
	// s2 is still ready.
	owned, err := s2.Owned(ctx, "w-old")
	must(t, err)
	if len(owned) != 1 || owned[0] != "s1" {
		t.Errorf("Owned(w-old) after reopen = %v, want [s1]", owned)
	}
	id, err := s2.Claim(ctx, "w")
	must(t, err)
	if id != "s2" {
		t.Fatalf("Claim after reopen = %s, want s2", id)
	}
	for _, want := range []string{"one", "two", "three"} {
		in, err := s2.NextInput(ctx, "s1", "w-old")
		must(t, err)
		if in.Text != want {
			t.Errorf("NextInput(s1) = %q, want %q", in.Text, want)
		}
	}
	in, err := s2.NextInput(ctx, "s2", "w")
	must(t, err)
	if in.Text != "owned" {
		t.Errorf("NextInput(s2) = %q, want %q", in.Text, "owned")
	}

	// The held event goes to the group's next consumer; the new one follows.
	later, err := s2.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "events", Text: "later"})
	must(t, err)
	got := make(chan store.Event, 10)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s2.Consume(cctx, "g", "B", func(ctx context.Context, e store.Event) error {
			if e.SessionID == "events" {
				got <- e
			}
			return nil
		})
	}()
	ids := map[string]bool{}
	for !ids[first.ID] || !ids[later] {
		select {
		case e := <-got:
			ids[e.ID] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("after reopen the group received %v, want %s and %s", ids, first.ID, later)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Consume returned %v after cancel", err)
	}
}

// publishUntilReceived publishes an event until the consumer has one, since a
// consumer group only sees events published after Consume created it.
func publishUntilReceived(t *testing.T, s store.Store, held <-chan store.Event) store.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		_, err := s.Publish(t.Context(), store.Event{Type: store.EventAssistantText, SessionID: "events", Text: "held"})
		must(t, err)
		select {
		case e := <-held:
			return e
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the consumer received nothing")
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenLockedByAnotherProcess runs this test binary as a second process
// that holds the file, as a second slackgate on the same DATA_DIR would.
func TestOpenLockedByAnotherProcess(t *testing.T) {
	if path := os.Getenv("BOLTSTORE_HOLD_LOCK"); path != "" {
		s, err := boltstore.Open(path)
		if err != nil {
			fmt.Println("open failed:", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold until the parent closes stdin
		_ = s.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "slackgate.db")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestOpenLockedByAnotherProcess$")
	cmd.Env = append(os.Environ(), "BOLTSTORE_HOLD_LOCK="+path)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "holding\n" {
		_ = stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("helper process said %q, %v", line, err)
	}

	_, err = boltstore.Open(path, boltstore.WithLockTimeout(100*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "another slackgate already using "+path+"?") {
		t.Errorf("Open of a file held by another process: err = %v, want the likely cause", err)
	}

	must(t, stdin.Close())
	must(t, cmd.Wait())
	// Once the other process is gone, the file opens.
	open(t, path)
}

func TestRedeliveryDelayIsCancellable(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithRedeliveryDelay(time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	failed := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(ctx, "g", "c", func(context.Context, store.Event) error {
			select {
			case failed <- struct{}{}:
			default:
			}
			return errors.New("fails")
		})
	}()
	deadline := time.After(10 * time.Second)
	for waiting := true; waiting; {
		_, err := s.Publish(ctx, store.Event{Type: store.EventError, SessionID: "s"})
		must(t, err)
		select {
		case <-failed:
			waiting = false
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("the consumer received nothing")
		}
	}
	// Consume now waits an hour for the retry; cancelling must end the wait.
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Consume returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Consume did not return while waiting out a redelivery delay")
	}
}

// TestEventLogIsTrimmed: events every group has acknowledged leave the log;
// events a group has not reached yet stay.
func TestEventLogIsTrimmed(t *testing.T) {
	defer boltstore.SetTrimEvery(4)()
	s := open(t, filepath.Join(t.TempDir(), "slackgate.db"))
	ctx := t.Context()
	// Consume with a cancelled context creates the group and returns at once.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	must(t, s.Consume(cancelled, "g", "c", func(context.Context, store.Event) error { return nil }))

	publish := func(n int) (last string) {
		for range n {
			id, err := s.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "s"})
			must(t, err)
			last = id
		}
		return last
	}
	requireLog := func(want int) {
		t.Helper()
		ids, err := s.EventIDs()
		must(t, err)
		if len(ids) != want {
			t.Fatalf("log holds %d events %v, want %d", len(ids), ids, want)
		}
	}

	last := publish(4) // the 4th append trims, but g has not read anything
	requireLog(4)

	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- s.Consume(cctx, "g", "c", func(_ context.Context, e store.Event) error {
			if e.ID == last {
				stop()
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer did not reach the 4th event")
	}

	publish(4) // the 8th append trims the four g has acknowledged
	requireLog(4)
}
