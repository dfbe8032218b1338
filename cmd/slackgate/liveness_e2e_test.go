package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// workerSwitch makes the test binary run `slackgate worker` (see
// runWorkerIfAsked), so a test can kill a real worker process outright.
const workerSwitch = "SLACKGATE_TEST_RUN_WORKER"

// runWorkerIfAsked makes the test binary act as `slackgate worker` when a
// test starts it as one.
func runWorkerIfAsked() {
	if os.Getenv(workerSwitch) != "1" {
		return
	}
	p := program{environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := p.run(context.Background(), []string{"worker"}); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// spawnWorker starts `slackgate worker` as a process of its own, in a
// process group of its own (its Claude processes join it), with the app's
// configuration changed by configure and its environment plus env (see
// processEnv). The returned kill ends the whole group with SIGKILL, as a
// machine dying would: nothing of it shuts down cleanly.
func (a *app) spawnWorker(name string, configure func(*Config), env ...string) (kill func()) {
	a.tb.Helper()
	t := a.tb
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(a.processEnv(configure, env...), workerSwitch+"=1")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	kill = func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			t.Logf("%s (slackgate worker, pid %d) logs:\n%s", name, cmd.Process.Pid, logs.String())
		}
	})
	return kill
}

// waitTranscript waits until the store holds a transcript of the session
// that has want in it. Workers save after a turn in the background, so
// the test waits on the store's content, polling it.
func waitTranscript(t *testing.T, ctx context.Context, st store.Store, sessionID, want string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		packed, err := st.LoadTranscript(ctx, sessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
		if err == nil {
			zr, err := gzip.NewReader(bytes.NewReader(packed))
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(zr); err == nil && bytes.Contains(b, []byte(want)) {
				return
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the store never held a transcript of %s with %q", sessionID, want)
		}
	}
}

// A worker process dies outright (SIGKILL to it and its Claude processes)
// while a card waits in its session. The other worker, whose CLI has a home
// of its own, takes the session over once the dead one's heartbeat lapses:
// the card says the worker was lost, the session is released, and the next
// reply resumes it on the survivor with the transcript restored from the
// store, so the model still knows the first turn.
//
// WORKER_TIMEOUT is 2s here, not the default 30s: the heartbeat lapses by
// Redis's own clock, which a test cannot move, so the test waits it out in
// real time.
func TestAKilledWorkersSessionResumesOnAnotherWithItsTranscript(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	a := startApp(t, options{backend: redisBackend, command: "bot", approvers: lee},
		relaytest.Text("Noted: the code word is PINEAPPLE."),
		relaytest.ToolUse("toolu_1", "Bash", bash("echo deployed > deploy.txt", "Deploy")),
		relaytest.Text("The code word was PINEAPPLE."))
	st := a.redisStore()
	homeA, homeB := t.TempDir(), t.TempDir()
	killA := a.spawnWorker("worker-a", func(c *Config) { c.WorkerID, c.WorkerTimeout, c.HealthAddr = "worker-a", timeout, "off" }, "HOME="+homeA)

	thread := a.mention("remember the code word PINEAPPLE")
	a.threadText(thread, "Noted: the code word is PINEAPPLE.")
	a.threadText(thread, "Done: reply in this thread")
	sess, err := st.SessionByThread(a.ctx, store.MessageRef{Channel: general, TS: thread})
	if err != nil {
		t.Fatal(err)
	}
	waitTranscript(t, a.ctx, st, sess.ID, "Noted: the code word is PINEAPPLE.")

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "now deploy"); err != nil {
		t.Fatal(err)
	}
	card := a.card(thread, "echo deployed")
	a.launch("worker-b", "worker", func(c *Config) { c.WorkerID, c.WorkerTimeout = "worker-b", timeout }, "HOME="+homeB)
	killA()

	lost := relay.LostMessage(timeout)
	final, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0 && m.HasText(lost)
	})
	if err != nil {
		t.Fatalf("the card never said its worker was lost (%q): %v\nthread: %s", lost, err, a.dump(thread))
	}
	if final.HasText("Approved") {
		t.Errorf("the lost session's card reads as approved: %s", final.AllText())
	}
	a.threadText(thread, "the next message resumes the session on another worker")
	if owned, err := st.Owned(a.ctx, "worker-a"); err != nil || len(owned) != 0 {
		t.Errorf("the dead worker still owns %v (%v)", owned, err)
	}

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "what was the code word?"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "The code word was PINEAPPLE.")
	texts := strings.Join(a.lastRequest().UserTexts(), "\n")
	if !strings.Contains(texts, "remember the code word PINEAPPLE") || !strings.Contains(texts, "what was the code word?") {
		t.Errorf("the resumed turn should carry the first turn; user texts %q", texts)
	}
	if files, err := filepath.Glob(filepath.Join(homeB, ".claude", "projects", "*", sess.ID+".jsonl")); err != nil || len(files) != 1 {
		t.Errorf("worker B's home holds %v (%v); want the transcript restored from the store", files, err)
	}
	a.noFile("deploy.txt")
}
