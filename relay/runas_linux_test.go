package relay

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// do acts on files with the CLI user's rights alone: the worker (root
// here, as it may be in production) reads nothing through it that the
// user could not, what it creates is the user's, and the worker's other
// goroutines keep the worker's own rights while it runs, before and after.
func TestDoActsOnFilesWithTheUsersRightsAlone(t *testing.T) {
	u, err := LookupRunAs(relaytest.OSUser(t))
	if err != nil {
		t.Fatal(err)
	}
	private := filepath.Join(t.TempDir(), "workers") // root's, in a 0700 directory
	must(t, os.WriteFile(private, []byte("the worker's own\n"), 0o600))
	home, err := os.MkdirTemp("", "slackgate-home-")
	must(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	must(t, os.Chown(home, int(u.UID), int(u.GID)))

	if err := u.do(func() error { _, err := os.ReadFile(private); return err }); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("reading the worker's private file through do: %v; want permission denied", err)
	}
	made := filepath.Join(home, "made")
	must(t, u.do(func() error { return os.WriteFile(made, []byte("x"), 0o600) }))
	fi, err := os.Stat(made)
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != u.UID || st.Gid != u.GID {
		t.Errorf("a file made through do is %d:%d, want the user's %d:%d", st.Uid, st.Gid, u.UID, u.GID)
	}

	// Many at once, so the runtime would have to reuse a thread of do's
	// for the worker's own reads if it ever did.
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 100 {
		wg.Go(func() {
			if err := u.do(func() error { _, err := os.ReadFile(made); return err }); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			if _, err := os.ReadFile(private); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a read with its own rights failed: %v", err)
	}
}
