package relay_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// withHome gives a worker's CLI a home (and so a config directory) of its
// own, as on another machine.
func withHome(home string) option {
	return func(c *relay.Config) { c.Env = homeEnv(c.Env, home) }
}

func homeEnv(env []string, home string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+home)
}

// startWorker runs another worker on h's store with cfg and stops it at
// the end of the test.
func startWorker(t *testing.T, h *harness, cfg relay.Config, name string) *relay.Worker {
	t.Helper()
	w, err := relay.NewWorker(cfg, h.st, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel).With().Str("as", name).Logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker %s: %v", name, err)
		}
	})
	return w
}

// storedTranscript waits until the store holds a transcript of the session
// that contains want, and returns it unpacked. The worker saves in the
// background after a turn, so the test waits on the store's content.
func storedTranscript(t *testing.T, h *harness, sessionID, want string) string {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		packed, err := h.st.LoadTranscript(h.ctx, sessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if err == nil {
			zr, err := gzip.NewReader(bytes.NewReader(packed))
			if err != nil {
				t.Fatalf("the stored transcript is not gzip: %v", err)
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if last = string(b); strings.Contains(last, want) {
				return last
			}
		}
		select {
		case <-tick.C:
		case <-h.ctx.Done():
			t.Fatalf("the store never held a transcript of %s with %q (last: %d bytes)", sessionID, want, len(last))
		}
	}
}

// A session's first turn runs on worker A, whose CLI keeps its files in a
// home of its own. A stops; worker B, with an empty home, resumes the
// session from the next message: it restores the transcript from the
// store, so the model sees the first turn.
func TestE2ETranscriptTravelsToAWorkerWithAnEmptyHome(t *testing.T) {
	onEachBackend(t, testTranscriptTravels)
}

func testTranscriptTravels(t *testing.T, open func(testing.TB) store.Store) {
	homeA, homeB := t.TempDir(), t.TempDir()
	h := newHarnessOn(t, open, "", []relaytest.Step{
		relaytest.Text("noted: PINEAPPLE"), relaytest.Text("it was PINEAPPLE"),
	}, withHome(homeA))
	id := h.startSession("remember the word PINEAPPLE")
	h.waitResult()
	// Saved when the turn ended, with the turn's answer in it (2.1.197
	// writes the file only after the result: the worker waits for it).
	saved := storedTranscript(t, h, id, "noted: PINEAPPLE")
	if !strings.Contains(saved, "remember the word PINEAPPLE") {
		t.Errorf("the stored transcript lacks the prompt")
	}
	h.stopWorker()

	cfgB := h.cfg
	cfgB.WorkerID = h.cfg.WorkerID + "-b"
	cfgB.Env = homeEnv(h.cfg.Env, homeB)
	b := startWorker(t, h, cfgB, "B")
	h.send("what was the word?")
	started := h.waitEvent("start on B", ofType(store.EventSessionStarted))
	if !strings.Contains(started.Text, "resume true") {
		t.Errorf("start on B: %q", started.Text)
	}
	if res := h.waitResult(); res.IsError || res.Text != "it was PINEAPPLE" {
		t.Fatalf("result on B: %+v; events: %s", res, h.describe())
	}
	if _, err := b.PID(id); err != nil {
		t.Errorf("B does not run the session: %v", err)
	}
	reqs := h.srv.Requests()
	if texts := strings.Join(reqs[len(reqs)-1].UserTexts(), "|"); !strings.Contains(texts, "remember the word PINEAPPLE") {
		t.Errorf("the model on B did not see the first turn: %q", texts)
	}
	files, err := filepath.Glob(filepath.Join(homeB, ".claude", "projects", "*", id+".jsonl"))
	if err != nil || len(files) != 1 {
		t.Fatalf("B's home holds %v (%v), want the restored transcript", files, err)
	}
	// The CLI's rule, as transcript.go states it (checked on 2.1.197
	// and 2.1.330): the working directory, symlinks resolved, every
	// character but an ASCII letter or digit as '-'.
	real, err := filepath.EvalSymlinks(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	rule := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, real)
	if got := filepath.Base(filepath.Dir(files[0])); got != rule {
		t.Errorf("the transcript lives in projects/%s, want projects/%s", got, rule)
	}
	fi, err := os.Stat(files[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored transcript: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if dir, err := os.Stat(filepath.Dir(files[0])); err != nil || dir.Mode().Perm()&0o077 != 0 {
		t.Errorf("the project directory B made is %v (%v); want it private to the CLI's user", dir.Mode(), err)
	}
}

// A transcript that was never saved (saving off, as when it is over the
// bound) cannot be resumed elsewhere: the thread says why before the
// CLI's failure.
func TestE2EAResumeWithoutATranscriptSaysWhy(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{relaytest.Text("noted")}, withHome(t.TempDir()),
		func(c *relay.Config) { c.MaxTranscriptBytes = -1 })
	id := h.startSession("remember this")
	h.waitResult()
	h.stopWorker()
	if _, err := h.st.LoadTranscript(h.ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LoadTranscript = %v; want nothing saved with saving off", err)
	}
	cfgB := h.cfg
	cfgB.WorkerID = h.cfg.WorkerID + "-b"
	cfgB.Env = homeEnv(h.cfg.Env, t.TempDir())
	startWorker(t, h, cfgB, "B")
	h.send("and now?")
	e := h.waitEvent("the missing transcript's notice", ofType(store.EventError))
	if e.Text != relay.NoTranscriptMessage {
		t.Errorf("notice %q, want %q", e.Text, relay.NoTranscriptMessage)
	}
	exit := h.waitEvent("the failed resume", ofType(store.EventExit)).Exit
	if exit.Code == 0 {
		t.Errorf("the CLI resumed a session it has no transcript of: %+v", exit)
	}
}
