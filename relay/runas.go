package relay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrCannotRunAs: the CLI cannot be started as the configured OS user.
var ErrCannotRunAs = errors.New("cannot run the Claude Code CLI as another user")

// RunAs is an OS user the CLI, and everything it starts, runs as instead of
// slackgate's own user: then an approved command can read neither
// slackgate's memory and environment (/proc/<pid>/environ) nor its data
// directory.
//
// Switching users takes root or, on Linux, three capabilities in
// slackgate's effective set: CAP_SETUID and CAP_SETGID to start the CLI as
// the user, CAP_KILL to stop it once it is another user's process. They
// never reach the CLI: a child switched between two non-root users keeps
// its parent's permitted set only until it execs, and slackgate clears its
// ambient and inheritable sets at start (cmd/slackgate), the two an exec
// carries over. What slackgate itself does with the CLI user's files (its
// transcripts) it does with that user's rights (do), never its own.
type RunAs struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32 // supplementary groups
	Home   string   // from the passwd database; the CLI's HOME
}

// LookupRunAs finds name in the user database. Its errors say how to fix
// the problem.
func LookupRunAs(name string) (*RunAs, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("%w: no such user %q; create it with `useradd --create-home %s`", ErrCannotRunAs, name, name)
		}
		return nil, fmt.Errorf("%w: looking up user %q: %w", ErrCannotRunAs, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("%w: user %q has a non-numeric id: %w", ErrCannotRunAs, name, err)
	}
	if uid == 0 {
		return nil, fmt.Errorf("%w: %q is root, which protects nothing; name an unprivileged user", ErrCannotRunAs, name)
	}
	r := &RunAs{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("%w: groups of user %q: %w", ErrCannotRunAs, name, err)
	}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			r.Groups = append(r.Groups, uint32(n))
		}
	}
	return r, nil
}

func (u *RunAs) credential() *syscall.Credential {
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// env replaces the variables that name the user, so the CLI keeps its
// state in the user's home and not in slackgate's.
func (u *RunAs) env(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name != "HOME" && name != "USER" && name != "LOGNAME" {
			out = append(out, kv)
		}
	}
	return append(out, "HOME="+u.Home, "USER="+u.Name, "LOGNAME="+u.Name)
}

// Check proves that the CLI can be started as u: slackgate may switch
// users (maySwitch), u's home exists, and `bin --version` runs as u in every directory
// of dirs (the working directories sessions use). Its errors say how to
// fix what is wrong.
func (u *RunAs) Check(ctx context.Context, bin string, env []string, dirs []string) error {
	if err := u.maySwitch(); err != nil {
		return err
	}
	if fi, err := os.Stat(u.Home); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the home directory %q of user %q does not exist; create it (`mkdir -p %s && chown %s: %s`) so the CLI has somewhere to keep its state", ErrCannotRunAs, u.Home, u.Name, u.Home, u.Name, u.Home)
	}
	if out, err := u.run(ctx, bin, env, "/"); err != nil {
		return fmt.Errorf("%w: `%s --version` as user %q failed: %w%s; the binary and every directory above it must be readable and executable by %s (install it somewhere like /usr/local, or `chmod o+rx` the directories)", ErrCannotRunAs, bin, u.Name, err, out, u.Name)
	}
	for _, dir := range dirs {
		if out, err := u.run(ctx, bin, env, dir); err != nil {
			return fmt.Errorf("%w: user %q cannot work in %q: %w%s; give it access, e.g. `chown -R %s %s` or `setfacl -R -m u:%s:rwX %s`", ErrCannotRunAs, u.Name, dir, err, out, u.Name, dir, u.Name, dir)
		}
	}
	return nil
}

// run starts `bin --version` as u in dir and returns its combined output
// (prefixed for an error message) when it fails.
func (u *RunAs) run(ctx context.Context, bin string, env []string, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Dir = dir
	cmd.Env = u.env(env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.credential()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			return " (" + s + ")", err
		}
		return "", err
	}
	return "", nil
}
