// Package redistest runs a redis-server of a test's own: on a free loopback
// port, in its own directory, with an append-only file fsynced on every
// write, so that what it acknowledged survives a SIGKILL and a restart on
// the same port. Tests use it to take Redis away under the code they test.
// URL and ClusterURL are the shared servers .ci/with-redis.sh starts, for
// tests that need Redis but not one of their own. It is test code: nothing
// outside tests imports it.
package redistest

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is one redis-server, started by Start and killed when the test
// ends.
type Server struct {
	tb     testing.TB
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	out    chan struct{} // closed when the output reader is done
	exited chan error    // receives cmd.Wait's result
	argv   []string      // redis-server's arguments, when not a plain server's
	ready  string        // the log line that says it serves, when not a plain server's
}

// Start runs a redis-server for t and returns once it accepts connections.
// Without redis-server on PATH the test is skipped, or fails when
// SLACKGATE_REQUIRE_INTEGRATION=1 or CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	srv := &Server{tb: t, bin: serverBin(t), dir: t.TempDir(), port: FreePort(t)}
	srv.Restart()
	t.Cleanup(srv.Kill)
	return srv
}

// serverBin finds redis-server, or skips t (fails it when
// SLACKGATE_REQUIRE_INTEGRATION=1 or CI=true).
func serverBin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if required() {
			t.Fatal("redis-server not found; install it (apt-get install redis-server)")
		}
		t.Skip("redis-server not found; install it to run the tests that take Redis away")
	}
	return bin
}

// StartSentinel runs a Sentinel (redis-server --sentinel) watching the
// primary on primaryPort under the name "main", and returns once it
// monitors it.
func StartSentinel(t testing.TB, primaryPort int) *Server {
	t.Helper()
	srv := &Server{tb: t, bin: serverBin(t), dir: t.TempDir(), port: FreePort(t), ready: "+monitor master main"}
	conf := filepath.Join(srv.dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor main 127.0.0.1 %d 1\n", srv.port, srv.dir, primaryPort)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.argv = []string{conf, "--sentinel", "--logfile", ""}
	srv.Restart()
	t.Cleanup(srv.Kill)
	return srv
}

// Port is the server's loopback port.
func (srv *Server) Port() int { return srv.port }

// URL is the server's redis:// URL (database 0).
func (srv *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", srv.port) }

// Running reports whether the server runs (Kill stops it, Restart starts it).
func (srv *Server) Running() bool { return srv.cmd != nil }

// Restart starts the server (again) on its port and directory, replaying
// its append-only file, and returns once it logs that it accepts
// connections.
func (srv *Server) Restart() {
	t := srv.tb
	t.Helper()
	if srv.cmd != nil {
		t.Fatal("redistest: Restart while the server runs; Kill it first")
	}
	argv := srv.argv
	if argv == nil {
		argv = []string{"--port", strconv.Itoa(srv.port), "--bind", "127.0.0.1",
			"--dir", srv.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--logfile", ""}
	}
	cmd := exec.Command(srv.bin, argv...)
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	ready := make(chan struct{})
	out := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(out)
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !signalled && strings.Contains(sc.Text(), cmp.Or(srv.ready, "Ready to accept connections")) {
				close(ready)
				signalled = true
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() {
		exited <- cmd.Wait()
		_ = pw.Close()
	}()
	select {
	case <-ready:
	case err := <-exited:
		<-out
		t.Fatalf("redis-server exited (%v):\n%s", err, log.String())
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		<-out
		t.Fatalf("redis-server did not become ready:\n%s", log.String())
	}
	srv.cmd, srv.out, srv.exited = cmd, out, exited
}

// Kill stops the server with SIGKILL and waits for it to exit. What it
// acknowledged is on disk (appendfsync always); Restart brings it back.
func (srv *Server) Kill() {
	if srv.cmd == nil {
		return
	}
	_ = srv.cmd.Process.Kill()
	<-srv.exited
	<-srv.out
	srv.cmd = nil
}

// FreePort returns a loopback port nothing listens on (at the time of asking).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
