//go:build linux

package main

// Proofs, with real processes, that slackgate's own process is closed to
// the commands Claude runs: as a plain user (no CLAUDE_USER) another
// process of that user reads neither its environment nor its memory; and
// given CAP_SETUID, CAP_SETGID and CAP_KILL the way the shipped
// deployments give them (systemd's ambient capabilities, the Dockerfile's
// file capabilities), slackgate runs Claude as CLAUDE_USER and neither
// Claude nor its commands hold any capability.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// switchCaps are the capabilities a non-root slackgate needs for
// CLAUDE_USER, as the deployments give them.
var switchCaps = []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_KILL}

// osUser looks up a test user made by relaytest.
func osUser(t *testing.T, name string) *relay.RunAs {
	t.Helper()
	u, err := relay.LookupRunAs(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// install copies the binary at src into a directory of its own that every
// user may enter, as a file root owns with group gid and mode, named
// slackgate (the process name the probe looks for).
func install(t *testing.T, src string, gid int, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "slackgate-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(dir, "slackgate")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chown(path, 0, gid)
	}
	if err == nil {
		err = os.Chmod(path, mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// setFileCaps gives path what `setcap cap_setuid,cap_setgid,cap_kill=ep`
// gives it: the security.capability attribute, revision 2, with those
// capabilities permitted and the effective flag.
func setFileCaps(t *testing.T, path string) {
	t.Helper()
	var permitted uint32
	for _, c := range switchCaps {
		permitted |= 1 << c
	}
	// struct vfs_cap_data (linux/capability.h): magic_etc, then permitted
	// and inheritable for each 32-bit half.
	const revision2, effective = 0x02000000, 0x000001
	v := make([]byte, 20)
	binary.LittleEndian.PutUint32(v[0:], revision2|effective)
	binary.LittleEndian.PutUint32(v[4:], permitted)
	if err := unix.Setxattr(path, "security.capability", v, 0); err != nil {
		t.Fatalf("setting file capabilities on %s: %v", path, err)
	}
}

// spawnAs starts `bin args…` as u, holding the ambient capabilities
// given, in dir, with the app's configuration changed by configure and
// its environment plus env (see processEnv).
func (a *app) spawnAs(name string, u *relay.RunAs, ambient []uintptr, dir string, bin string, args []string, configure func(*Config), env ...string) *child {
	a.tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = a.processEnv(configure, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, AmbientCaps: ambient,
		Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}}
	return a.start(name, cmd)
}

// runAs runs `sh -c script` as u and returns what it printed.
func runAs(t *testing.T, u *relay.RunAs, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestSlackgatesProcessIsClosedToItsOwnUser runs `slackgate run` as a
// plain user with no CLAUDE_USER, where every command Claude runs is that
// same user, and reads its /proc files as that user would. A control
// process of the same user, holding the same token in its environment,
// is readable the same way: only slackgate's lockdown makes the
// difference.
func TestSlackgatesProcessIsClosedToItsOwnUser(t *testing.T) {
	t.Parallel()
	svc := osUser(t, relaytest.ServiceOSUser(t))
	a := startApp(t, options{command: "none"})
	home := sharedDir(t, svc.Name)
	bin := install(t, slackgateBinary(t), 0, 0o755)
	port := redistest.FreePort(t)
	work := sharedDir(t, svc.Name)
	sg := a.spawnAs("run", svc, nil, home, bin, []string{"run"}, func(c *Config) {
		c.DataDir, c.WorkDir, c.HealthAddr = filepath.Join(home, "data"), work, fmt.Sprintf("127.0.0.1:%d", port)
	}, "HOME="+home)
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatalf("slackgate never connected: %v\n%s", err, sg.logs.String())
	}
	control := exec.Command("sleep", "600")
	control.Env = []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken}
	control.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: svc.UID, Gid: svc.GID, Groups: svc.Groups}}
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = control.Process.Kill(); _ = control.Wait() })

	for _, p := range []struct {
		name string
		pid  int
	}{{"slackgate", sg.cmd.Process.Pid}, {"control", control.Process.Pid}} {
		if status := runAs(t, svc, fmt.Sprintf("grep ^Uid: /proc/%d/status", p.pid)); !strings.Contains(status, fmt.Sprintf("\t%d\t", svc.UID)) {
			t.Fatalf("%s does not run as %s: %q", p.name, svc.Name, status)
		}
		environ := runAs(t, svc, fmt.Sprintf("cat /proc/%d/environ", p.pid))
		mem := runAs(t, svc, fmt.Sprintf("exec 3</proc/%d/mem && echo opened", p.pid))
		fds := runAs(t, svc, fmt.Sprintf("ls /proc/%d/fd && echo listed", p.pid))
		if p.name == "control" {
			if !strings.Contains(environ, fakeslack.BotToken) || !strings.Contains(mem, "opened") || !strings.Contains(fds, "listed") {
				t.Fatalf("the control process should be open to its own user, the way slackgate would be without its lockdown: environ %q, mem %q, fd %q", environ, mem, fds)
			}
			continue
		}
		for what, out := range map[string]string{"environ": environ, "mem": mem, "fd": fds} {
			if !strings.Contains(out, "Permission denied") || strings.Contains(out, fakeslack.BotToken) || strings.Contains(out, "opened") || strings.Contains(out, "listed") {
				t.Errorf("%s's /proc/<pid>/%s as its own user: %s; want permission denied", p.name, what, shown(out))
			}
		}
	}

	// The process collector reads /proc/<pid>/ as the process itself, which
	// its lockdown leaves readable to it.
	code, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d\n%s", code, body)
	}
	for _, m := range []string{"process_open_fds", "process_max_fds", "process_resident_memory_bytes", "process_start_time_seconds"} {
		if v := metricValue(t, body, m, ""); v <= 0 {
			t.Errorf("%s = %v; want the process collector's reading", m, v)
		}
	}
}

// capsProbe, run by Claude as an approved command, prints the user and
// capability sets of its shell and of every process above it up to
// slackgate, then tries what an attacker would: slackgate's environment,
// its store (DATA_DIR, $1), and running slackgate's binary ($2).
const capsProbe = `p=$$
while [ "$p" -gt 1 ]; do
	name=$(sed -n 's/^Name:[[:space:]]*//p' /proc/$p/status)
	[ "$name" = slackgate ] && break
	echo "process $p $name"
	grep -E '^(Uid|Cap(Inh|Prm|Eff|Amb)):' /proc/$p/status
	p=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status)
done
echo "slackgate $p"
cat /proc/$p/environ
ls "$1"
"$2" help
`

// TestClaudeRunsWithoutCapabilitiesWhenSlackgateHoldsThem runs `slackgate
// run` as a plain user holding CAP_SETUID, CAP_SETGID and CAP_KILL, given
// the way the systemd unit gives them (ambient, to a binary without file
// capabilities) and the way the Dockerfile does (file capabilities on a
// binary only slackgate's group may run), with CLAUDE_USER another user.
// Claude's process and the command it runs hold no capability at all, run
// as CLAUDE_USER, read neither slackgate's environment nor its store, and
// cannot run the capable binary; slackgate still saves the session's
// transcript (a file private to that user) and stops Claude when it stops.
func TestClaudeRunsWithoutCapabilitiesWhenSlackgateHoldsThem(t *testing.T) {
	t.Parallel()
	svc := osUser(t, relaytest.ServiceOSUser(t))
	claude := osUser(t, relaytest.OSUser(t))
	static := builtStatic.get(t, []string{"CGO_ENABLED=0"}, "-trimpath")
	t.Run("systemd: ambient capabilities", func(t *testing.T) {
		t.Parallel()
		capableSession(t, svc, claude, install(t, static, 0, 0o755), switchCaps)
	})
	t.Run("Dockerfile: file capabilities", func(t *testing.T) {
		t.Parallel()
		bin := install(t, static, int(svc.GID), 0o750)
		setFileCaps(t, bin)
		capableSession(t, svc, claude, bin, nil)
	})
}

// capableSession is one run of TestClaudeRunsWithoutCapabilitiesWhenSlackgateHoldsThem.
func capableSession(t *testing.T, svc, claude *relay.RunAs, bin string, ambient []uintptr) {
	work := sharedDir(t, claude.Name)
	if err := os.WriteFile(filepath.Join(work, "probe.sh"), []byte(capsProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	// DATA_DIR starts open to all, under a directory Claude's user may
	// enter: only slackgate closing it keeps the store out of reach.
	home := sharedDir(t, svc.Name)
	data := filepath.Join(home, "data")
	for _, d := range []string{home, data} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(os.Chmod(d, 0o755), os.Chown(d, int(svc.UID), int(svc.GID))); err != nil {
			t.Fatal(err)
		}
	}
	a := startApp(t, options{command: "none", approvers: lee},
		relaytest.ToolUse("toolu_probe", "Bash", bash("sh probe.sh "+data+" "+bin, "Probe")),
		relaytest.Text("done"))
	sg := a.spawnAs("run", svc, ambient, home, bin, []string{"run"}, func(c *Config) {
		c.DataDir, c.WorkDir, c.ClaudeUser = data, work, claude.Name
	}, "HOME="+home)
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatalf("slackgate never connected: %v\n%s", err, sg.logs.String())
	}
	slackgateHoldsOnlyWhatItNeeds(t, sg.cmd.Process.Pid)
	thread := a.mention("what can you reach?")
	res := a.approve(thread, "probe.sh", "toolu_probe")
	cli := probeSaysNoCapabilities(t, res.Content, sg.cmd.Process.Pid, claude.UID)
	for _, denied := range []string{"environ: Permission denied", "cannot open directory '" + data + "': Permission denied"} {
		if !strings.Contains(res.Content, denied) {
			t.Errorf("the command's output lacks %q:\n%s", denied, shown(res.Content))
		}
	}
	if ambient == nil && !strings.Contains(res.Content, bin+": Permission denied") {
		t.Errorf("Claude's command could run the binary that holds file capabilities:\n%s", shown(res.Content))
	}
	if strings.Contains(res.Content, fakeslack.BotToken) {
		t.Error("the command read slackgate's Slack token")
	}
	a.threadText(thread, "done")
	bound := max(workerStopBound, botStopBound)
	took, err := sg.term(bound)
	if err != nil {
		t.Fatalf("slackgate exited with %v after SIGTERM, want status 0", err)
	}
	t.Logf("slackgate: SIGTERM → exit in %s (bound %s)", took.Round(time.Millisecond), bound)
	if err := syscall.Kill(cli, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("Claude's process %d outlived slackgate: %v", cli, err)
	}
	transcriptWasSaved(t, filepath.Join(data, "slackgate.db"), thread)
}

// stuckCLI stands in for a Claude that no longer listens: it answers
// --version and auth status (what startup asks), then ignores its input
// closing and SIGTERM.
const stuckCLI = `#!/bin/sh
if [ "$1" = --version ]; then echo "0.0.0 (a CLI that will not stop)"; exit 0; fi
case "$*" in *"auth status --json") echo '{"loggedIn":true,"authMethod":"api_key"}'; exit 0;; esac
trap '' TERM
exec sleep 3600
`

// TestACapableSlackgateStopsAClaudeOfAnotherUser: a Claude that ignores
// its input closing and SIGTERM is another user's process, which only
// CAP_KILL lets slackgate signal. Without it SIGKILL fails too, the
// worker waits on the process forever and slackgate never exits.
func TestACapableSlackgateStopsAClaudeOfAnotherUser(t *testing.T) {
	t.Parallel()
	svc := osUser(t, relaytest.ServiceOSUser(t))
	claude := osUser(t, relaytest.OSUser(t))
	bin := install(t, builtStatic.get(t, []string{"CGO_ENABLED=0"}, "-trimpath"), 0, 0o755)
	stuck := filepath.Join(filepath.Dir(bin), "claude")
	if err := os.WriteFile(stuck, []byte(stuckCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	home := sharedDir(t, svc.Name)
	a := startApp(t, options{command: "none"})
	work := sharedDir(t, claude.Name)
	sg := a.spawnAs("run", svc, switchCaps, home, bin, []string{"run"}, func(c *Config) {
		c.DataDir, c.WorkDir, c.ClaudeUser, c.ClaudeBin = filepath.Join(home, "data"), work, claude.Name, stuck
	}, "HOME="+home)
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatalf("slackgate never connected: %v\n%s", err, sg.logs.String())
	}
	a.mention("hello")
	sg.waitLog("claude started")
	cli := childOf(t, sg.cmd.Process.Pid)

	// The worker asks the turn to stop (unanswered here), closes the
	// input, waits StopGrace, sends SIGTERM and SIGKILL after KillGrace:
	// all within the bound `slackgate run` is held to.
	bound := max(workerStopBound, botStopBound)
	took, err := sg.term(bound)
	if err != nil {
		t.Fatalf("slackgate exited with %v after SIGTERM, want status 0", err)
	}
	t.Logf("slackgate: SIGTERM → exit in %s (bound %s)", took.Round(time.Millisecond), bound)
	if err := syscall.Kill(cli, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the stuck CLI (pid %d) outlived slackgate: %v", cli, err)
	}
}

// childOf returns the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces, not ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			kid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			kids = append(kids, kid)
		}
	}
	if len(kids) != 1 {
		t.Fatalf("slackgate (pid %d) has children %v; want one, the CLI", pid, kids)
	}
	return kids[0]
}

// slackgateHoldsOnlyWhatItNeeds checks every thread of slackgate: the
// three capabilities effective, none ambient or inheritable.
func slackgateHoldsOnlyWhatItNeeds(t *testing.T, pid int) {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("slackgate's threads: %v %v", tasks, err)
	}
	var want uint64
	for _, c := range switchCaps {
		want |= 1 << c
	}
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			t.Fatal(err)
		}
		sets := capSets(t, string(b))
		if sets["CapEff"] != want || sets["CapPrm"] != want || sets["CapAmb"] != 0 || sets["CapInh"] != 0 {
			t.Errorf("%s: CapEff %x CapPrm %x CapAmb %x CapInh %x; want CapEff and CapPrm %x, CapAmb and CapInh 0",
				task, sets["CapEff"], sets["CapPrm"], sets["CapAmb"], sets["CapInh"], want)
		}
	}
}

var capLine = regexp.MustCompile(`(?m)^(Cap(?:Inh|Prm|Eff|Amb)):\s*([0-9a-f]+)$`)

// capSets parses the capability lines of a /proc status file.
func capSets(t *testing.T, status string) map[string]uint64 {
	t.Helper()
	sets := map[string]uint64{}
	for _, m := range capLine.FindAllStringSubmatch(status, -1) {
		v, err := strconv.ParseUint(m[2], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		sets[m[1]] = v
	}
	return sets
}

// probeSaysNoCapabilities reads capsProbe's output: it walked up to
// slackgate (pid), and every process on the way ran as uid with all four
// capability sets empty. It returns the pid of the process slackgate
// started (Claude's CLI).
func probeSaysNoCapabilities(t *testing.T, out string, pid int, uid uint32) (cli int) {
	t.Helper()
	if !strings.Contains(out, fmt.Sprintf("slackgate %d\n", pid)) {
		t.Fatalf("the probe did not reach slackgate (pid %d):\n%s", pid, shown(out))
	}
	procs := strings.Split(out[:strings.Index(out, fmt.Sprintf("slackgate %d\n", pid))], "process ")[1:]
	if len(procs) < 2 {
		t.Fatalf("the probe saw %d processes under slackgate, want the command's shell and Claude's at least:\n%s", len(procs), shown(out))
	}
	for _, p := range procs {
		sets := capSets(t, p)
		if len(sets) != 4 || sets["CapInh"]|sets["CapPrm"]|sets["CapEff"]|sets["CapAmb"] != 0 {
			t.Errorf("a process under slackgate holds capabilities: %q", p)
		}
		if !strings.Contains(p, fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid)) {
			t.Errorf("a process under slackgate does not run as uid %d throughout: %q", uid, p)
		}
	}
	cli, err := strconv.Atoi(strings.Fields(procs[len(procs)-1])[0])
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// shown is a command's output for a failure message, unless it holds a
// process's environment (NUL-separated), which would put the test's own
// in the log.
func shown(out string) string {
	if strings.Contains(out, "\x00") {
		return fmt.Sprintf("(%d bytes holding an environment; not shown)", len(out))
	}
	return out
}

// transcriptWasSaved opens the stopped slackgate's store and finds the
// transcript of the thread's session in it.
func transcriptWasSaved(t *testing.T, path, thread string) {
	t.Helper()
	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := st.SessionByThread(ctx, store.MessageRef{Channel: general, TS: thread})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := st.LoadTranscript(ctx, s.ID); err != nil || len(b) == 0 {
		t.Errorf("session %s's transcript, a file private to CLAUDE_USER, was not saved: %d bytes, %v", s.ID, len(b), err)
	}
}

// TestStartupSaysWhatCapabilitiesClaudeUserNeeds starts slackgate as a
// plain user with CLAUDE_USER set and each way of holding too little: it
// stops at once, saying what is missing and how to give it.
func TestStartupSaysWhatCapabilitiesClaudeUserNeeds(t *testing.T) {
	t.Parallel()
	svc := osUser(t, relaytest.ServiceOSUser(t))
	claude := relaytest.OSUser(t)
	static := builtStatic.get(t, []string{"CGO_ENABLED=0"}, "-trimpath")
	cgo := builtCgo.get(t, []string{"CGO_ENABLED=1"})
	capable := install(t, static, int(svc.GID), 0o750)
	setFileCaps(t, capable)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) sets no_new_privs for one case: %v", err)
	}
	tests := []struct {
		name    string
		bin     string
		args    []string
		ambient []uintptr
		want    []string
	}{
		{name: "none", bin: install(t, static, 0, 0o755), args: []string{"run"},
			want: []string{"lacks CAP_SETUID, CAP_SETGID, CAP_KILL", "setcap cap_setuid,cap_setgid,cap_kill=ep", "AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL", "unset CLAUDE_USER"}},
		{name: "no CAP_KILL", bin: install(t, static, 0, 0o755), args: []string{"run"}, ambient: switchCaps[:2],
			want: []string{"lacks CAP_KILL", "stopping processes as"}},
		{name: "file capabilities under no_new_privs", bin: setpriv, args: []string{"--no-new-privs", capable, "run"},
			want: []string{"lacks CAP_SETUID", "no_new_privs is set", "allowPrivilegeEscalation: false"}},
		{name: "ambient capabilities on a cgo build", bin: install(t, cgo, 0, 0o755), args: []string{"run"}, ambient: switchCaps,
			want: []string{"built with cgo", "CGO_ENABLED=0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := startApp(t, options{command: "none"})
			home := sharedDir(t, svc.Name)
			work := sharedDir(t, claude)
			c := a.spawnAs(tt.name, svc, tt.ambient, home, tt.bin, tt.args, func(cfg *Config) {
				cfg.DataDir, cfg.WorkDir, cfg.ClaudeUser = filepath.Join(home, "data"), work, claude
			}, "HOME="+home)
			select {
			case <-c.exited:
			case <-a.ctx.Done():
				t.Fatal("slackgate still runs; want it to refuse to start")
			}
			if c.err == nil {
				t.Fatalf("slackgate exited with status 0; want a refusal:\n%s", c.logs.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(c.logs.String(), w) {
					t.Errorf("the refusal does not say %q:\n%s", w, c.logs.String())
				}
			}
		})
	}
}
