//go:build linux

package relay

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// switchCaps are the capabilities maySwitch needs in the effective set.
var switchCaps = []struct {
	bit  uint
	name string
}{
	{unix.CAP_SETUID, "CAP_SETUID"},
	{unix.CAP_SETGID, "CAP_SETGID"},
	{unix.CAP_KILL, "CAP_KILL"},
}

// maySwitch tells whether this process may start processes as u and stop
// them: root's capabilities or CAP_SETUID, CAP_SETGID and CAP_KILL,
// effective. Its error says how to get them.
func (u *RunAs) maySwitch() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: reading slackgate's capabilities: %w", ErrCannotRunAs, err)
	}
	var missing []string
	for _, c := range switchCaps {
		if data[c.bit/32].Effective&(1<<(c.bit%32)) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var nnp string
	if v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil && v == 1 {
		nnp = "; no_new_privs is set on it (Docker's no-new-privileges, Kubernetes' allowPrivilegeEscalation: false), and then the kernel ignores file capabilities"
	}
	return fmt.Errorf("%w: slackgate (uid %d) lacks %s, which starting and stopping processes as %q takes%s. "+
		"Either give its binary file capabilities, runnable by slackgate's user alone "+
		"(`chmod 0700 slackgate && setcap cap_setuid,cap_setgid,cap_kill=ep slackgate`), "+
		"or start it with AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL (systemd), or as root; or unset CLAUDE_USER",
		ErrCannotRunAs, os.Geteuid(), strings.Join(missing, ", "), u.Name, nnp)
}

// do runs fn with u's rights on files: on an OS thread of its own whose
// filesystem user and group ids and supplementary groups are u's, so what
// fn opens, lists or creates it does as u would (a planted link or a
// private file of someone else's stops it as it would stop u) and what it
// creates is u's. Only CAP_SETUID and CAP_SETGID are needed, not the
// capabilities that override file permissions.
func (u *RunAs) do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread keeps u's ids and ends with this
		// goroutine, so nothing else ever runs on it.
		runtime.LockOSThread()
		if err := u.becomeOnThisThread(); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// becomeOnThisThread gives the calling thread, and it alone (the raw
// system calls, unlike package syscall's, do not touch the other threads),
// u's filesystem ids and groups.
func (u *RunAs) becomeOnThisThread() error {
	groups := make([]int, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("relay: acting as %s: setgroups: %w", u.Name, err)
	}
	// setfsgid and setfsuid report no failure: asking with an invalid id
	// (-1) changes nothing and returns the id in force.
	_, _ = unix.SetfsgidRetGid(int(u.GID))
	_, _ = unix.SetfsuidRetUid(int(u.UID))
	gid, _ := unix.SetfsgidRetGid(-1)
	uid, _ := unix.SetfsuidRetUid(-1)
	if uid != int(u.UID) || gid != int(u.GID) {
		return fmt.Errorf("relay: acting as %s: the thread's filesystem ids are %d:%d, not %d:%d", u.Name, uid, gid, u.UID, u.GID)
	}
	return nil
}
