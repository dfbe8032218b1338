package boltstore

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The store file holds every request's input, every decision and the
// sessions' threads: only slackgate's own user may read it, and with
// CLAUDE_USER that keeps it from the commands Claude runs.

// privateDir creates dir 0700, or tightens an existing one slackgate owns
// (a directory made by an installer or systemd's StateDirectory is often
// 0755). A directory open to others that is not slackgate's own, or is
// shared like /tmp, is refused rather than changed under its owner.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if fi.Mode()&fs.ModeSticky != 0 || !ok || int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("directory %s is open to other users (mode %04o) and is not slackgate's own to close; point DATA_DIR at a directory of its own (slackgate creates it 0700) or run `chmod 700 %s`", dir, fi.Mode().Perm(), dir)
	}
	return os.Chmod(dir, 0o700)
}

// privateFile tightens an existing store file that others may read;
// bbolt creates a new one 0600.
func privateFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return err
	}
	return os.Chmod(path, 0o600)
}
