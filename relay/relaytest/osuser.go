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

// ServiceUser is the OS user tests run slackgate itself as when it must
// not be root: a plain user, or one given capabilities the way the
// deployments in deploy/ give them.
const ServiceUser = "slackgate-svc-test"

// OSUser returns TestUser, creating it with `useradd --create-home` when it
// is missing. Starting processes as another user needs root: without it
// the test is skipped, or fails when integration tests are required.
func OSUser(tb testing.TB) string {
	tb.Helper()
	return osUser(tb, TestUser)
}

// ServiceOSUser is OSUser for ServiceUser.
func ServiceOSUser(tb testing.TB) string {
	tb.Helper()
	return osUser(tb, ServiceUser)
}

func osUser(tb testing.TB, name string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		missing(tb, "running processes as another OS user (CLAUDE_USER, or slackgate as a plain user) needs root: run these tests as root, e.g. `sudo env PATH=$PATH CLAUDE_BIN=$(make -s claude-code) go test ./...`; CI does")
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
	if _, err := user.Lookup(name); err == nil {
		return name
	} else if !errors.As(err, new(user.UnknownUserError)) {
		tb.Fatalf("looking up %s: %v", name, err)
	}
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/bash", name).CombinedOutput(); err != nil {
		tb.Fatalf("creating the test user: useradd --create-home %s: %v\n%s", name, err, out)
	}
	return name
}
