package relaytest

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"syscall"
	"testing"
)

// TestUser is the OS user tests run the CLI as (CLAUDE_USER).
const TestUser = "slackgate-test"

// OSUser returns TestUser, creating it with `useradd --create-home` when it
// is missing. Starting processes as another user needs root: without it
// the test is skipped, or fails when integration tests are required.
func OSUser(tb testing.TB) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		missing(tb, "running the CLI as another OS user (CLAUDE_USER) needs root: run these tests as root, e.g. `sudo env PATH=$PATH CLAUDE_BIN=$(make -s claude-code) go test ./...`; CI does")
		return ""
	}
	// Test binaries of several packages may get here at once; useradd
	// would fail on the other's lock.
	lock, err := os.OpenFile(os.TempDir()+"/slackgate-test-useradd.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		tb.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close too
	if _, err := user.Lookup(TestUser); err == nil {
		return TestUser
	} else if !errors.As(err, new(user.UnknownUserError)) {
		tb.Fatalf("looking up %s: %v", TestUser, err)
	}
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/bash", TestUser).CombinedOutput(); err != nil {
		tb.Fatalf("creating the test user: useradd --create-home %s: %v\n%s", TestUser, err, out)
	}
	return TestUser
}
