//go:build !linux

package relay

import (
	"fmt"
	"os"
)

// maySwitch tells whether this process may start processes as u: outside
// Linux only root may.
func (u *RunAs) maySwitch() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: slackgate runs as uid %d and only root may start processes as %q; start slackgate as root (it drops to %s for every Claude process), or unset CLAUDE_USER", ErrCannotRunAs, os.Geteuid(), u.Name, u.Name)
	}
	return nil
}

// do runs fn as slackgate itself (root): outside Linux a thread cannot take
// another user's filesystem ids, so callers also chown what fn creates.
func (u *RunAs) do(fn func() error) error { return fn() }
