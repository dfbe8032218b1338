//go:build linux

package main

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lockdown runs first in main, for every command. It makes the process
// not dumpable: the kernel then gives its /proc/<pid>/ to root, so another
// process of the same user (a command Claude runs, without CLAUDE_USER)
// can neither read its environment (the Slack tokens, REDIS_URL) or
// memory nor trace it. And it clears the ambient and inheritable
// capability sets, the ones an exec carries over: slackgate may hold
// CAP_SETUID, CAP_SETGID and CAP_KILL to run Claude as CLAUDE_USER, and
// when they came as ambient capabilities (systemd's AmbientCapabilities=)
// every process it starts, Claude's included, would get them too. The
// permitted and effective sets, which no exec hands on, stay.
func lockdown() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("lockdown: making the process not dumpable: %w", err)
	}
	return dropInheritableCaps()
}

// dropInheritableCaps empties the ambient and inheritable sets of every
// thread (capabilities are per thread; all of them start alike).
func dropInheritableCaps() error {
	if held, err := inheritableCaps(); err != nil || !held {
		return err
	}
	hdr := &unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := new([2]unix.CapUserData)
	if err := unix.Capget(hdr, &data[0]); err != nil {
		return fmt.Errorf("lockdown: reading capabilities: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0)
	if errno == 0 {
		_, _, errno = syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	}
	runtime.KeepAlive(hdr)
	runtime.KeepAlive(data)
	if errno == syscall.ENOTSUP {
		return errors.New("lockdown: slackgate holds ambient or inheritable capabilities (systemd's AmbientCapabilities=, say), " +
			"which every process it starts would inherit, and a binary built with cgo cannot clear them on all of its threads: " +
			"build it with CGO_ENABLED=0 (`make build` and deploy/Dockerfile do), or give the binary file capabilities instead (setcap)")
	}
	if errno != 0 {
		return fmt.Errorf("lockdown: clearing the ambient and inheritable capabilities: %w", errno)
	}
	if held, err := inheritableCaps(); err != nil || held {
		return errors.Join(err, errors.New("lockdown: the ambient and inheritable capabilities are still set after clearing them"))
	}
	return nil
}

// inheritableCaps tells whether this thread holds any ambient or
// inheritable capability.
func inheritableCaps() (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, fmt.Errorf("lockdown: reading capabilities: %w", err)
	}
	if data[0].Inheritable != 0 || data[1].Inheritable != 0 {
		return true, nil
	}
	for c := range 64 {
		set, err := unix.PrctlRetInt(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_IS_SET, uintptr(c), 0, 0)
		if err != nil {
			break // past the kernel's last capability
		}
		if set == 1 {
			return true, nil
		}
	}
	return false, nil
}
