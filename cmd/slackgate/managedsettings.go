package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/slackgate/slackgate/relay"
)

// managedSettingsDir is where Claude Code on Linux reads its managed
// settings (managed-settings.json, managed-settings.d/), whatever
// --setting-sources says: whoever can write there allows Claude anything.
const managedSettingsDir = "/etc/claude-code"

// identity is who a process runs as, for permission checks.
type identity struct {
	name string
	uid  uint32
	gids []uint32
}

// claudeIdentity is the user Claude runs as: CLAUDE_USER, else slackgate's
// own.
func claudeIdentity(cfg Config) (identity, error) {
	if cfg.ClaudeUser != "" {
		u, err := relay.LookupRunAs(cfg.ClaudeUser)
		if err != nil {
			return identity{}, err
		}
		return identity{name: u.Name, uid: u.UID, gids: append([]uint32{u.GID}, u.Groups...)}, nil
	}
	id := identity{name: "slackgate's own user", uid: uint32(os.Geteuid()), gids: []uint32{uint32(os.Getegid())}}
	groups, err := os.Getgroups()
	if err != nil {
		return identity{}, err
	}
	for _, g := range groups {
		id.gids = append(id.gids, uint32(g))
	}
	return id, nil
}

// writable reports whether id may write fi (by its mode bits: root may
// write anything).
func (id identity) writable(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case id.uid == 0:
		return true
	case !ok:
		return true // cannot tell: say so
	case st.Uid == id.uid:
		return fi.Mode().Perm()&0o200 != 0
	case slices.Contains(id.gids, st.Gid):
		return fi.Mode().Perm()&0o020 != 0
	}
	return fi.Mode().Perm()&0o002 != 0
}

// managedSettingsWriter names what of dir (managedSettingsDir) id could
// change: dir itself, what is in it, or, while it does not exist, the
// directory it would be made in; "" when nothing.
func managedSettingsWriter(dir string, id identity) (string, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		parent := filepath.Dir(dir)
		pfi, err := os.Stat(parent)
		if err != nil {
			return "", err
		}
		if id.writable(pfi) {
			return parent + " (where " + dir + " would be made)", nil
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if id.writable(fi) || fi.Mode()&fs.ModeSymlink != 0 {
		return dir, nil
	}
	var found string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if id.writable(info) {
			found = path
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

// managedSettingsCheck is doctor's line on Claude Code's managed settings:
// Claude's user must not be able to write them.
func managedSettingsCheck(cfg Config, dir string) (string, error) {
	id, err := claudeIdentity(cfg)
	if err != nil {
		return "", withFix(err, "set CLAUDE_USER to a user that exists")
	}
	what, err := managedSettingsWriter(dir, id)
	switch {
	case err != nil:
		return "", withFix(fmt.Errorf("cannot tell who may write %s: %w", dir, err), "make "+dir+" and what is in it readable, owned by root")
	case what != "" && id.uid == 0 && cfg.ClaudeAsRoot:
		return "Claude runs as root and may write " + dir + ", as CLAUDE_AS_ROOT=true accepts", nil
	case what != "":
		return "", withFix(fmt.Errorf("%s, as whom Claude runs, may write %s; Claude Code reads its settings there whatever CLAUDE_SETTING_SOURCES says", id.name, what),
			"run Claude as a user of its own (CLAUDE_USER, deploy/README.md) and keep "+dir+" owned by root, not writable by others")
	}
	return id.name + ", as whom Claude runs, cannot write " + dir, nil
}

// managedSettingsDoctor is managedSettingsCheck as doctor's line.
func managedSettingsDoctor(_ context.Context, _ program, s *preflight) (string, error) {
	return managedSettingsCheck(s.cfg, managedSettingsDir)
}
