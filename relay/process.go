package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// ErrCLINotRunnable: the claude binary is missing or cannot be executed.
var ErrCLINotRunnable = errors.New("the Claude Code CLI cannot be run")

// Defaults for stopping a process: how long it may take to exit after its
// stdin closes, and after SIGTERM before SIGKILL.
const (
	DefaultStopGrace = 5 * time.Second
	DefaultKillGrace = 5 * time.Second
	stderrTailLines  = 20
)

// ProcessOptions says how to run one claude process for one session.
type ProcessOptions struct {
	Bin            string // path or name of the claude binary
	SessionID      string // a UUID; passed as --session-id, or --resume when Resume
	Resume         bool   // continue an earlier Claude session with this id
	WorkDir        string // where claude runs ("" = the current directory)
	PermissionMode string // --permission-mode ("" = default)
	Model          string // --model when set
	// What the CLI reads besides its built-in defaults: see Args.
	SettingSources []string // --setting-sources: "user", "project", "local" (nil = none)
	SettingsFile   string   // --settings when set: the operator's settings file
	MCPConfigFile  string   // --mcp-config when set: the operator's MCP servers
	ExtraArgs      []string
	Env            []string // exactly the CLI's environment (nil = ClaudeEnv of os.Environ())
	User           *RunAs   // run as this OS user (nil = slackgate's own)

	StopGrace time.Duration // stdin closed → SIGTERM (0 = DefaultStopGrace)
	KillGrace time.Duration // SIGTERM → SIGKILL (0 = DefaultKillGrace)
	Clock     store.Clock   // times StopGrace (nil = store.WallClock)
}

// Args returns the CLI arguments for these options. The CLI reads no
// settings, MCP servers, skills or slash commands slackgate did not name:
// --setting-sources lists only SettingSources (none by default, so neither
// the repository's .claude/ nor the config directory's settings.json,
// CLAUDE.md, skills, commands, agents or plugins), --strict-mcp-config
// drops every MCP server but MCPConfigFile's (.mcp.json, ~/.claude.json),
// and --disable-slash-commands keeps a prompt starting with "/" from
// running the CLI's own commands (/config writes its settings) without a
// card.
func (o ProcessOptions) Args() []string {
	mode := o.PermissionMode
	if mode == "" {
		mode = "default"
	}
	args := []string{"-p",
		"--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", mode,
		"--setting-sources", strings.Join(o.SettingSources, ","), "--strict-mcp-config", "--disable-slash-commands"}
	if o.SettingsFile != "" {
		args = append(args, "--settings", o.SettingsFile)
	}
	if o.MCPConfigFile != "" {
		args = append(args, "--mcp-config", o.MCPConfigFile)
	}
	if o.Resume {
		args = append(args, "--resume", o.SessionID)
	} else {
		args = append(args, "--session-id", o.SessionID)
	}
	if o.Model != "" {
		args = append(args, "--model", o.Model)
	}
	return append(args, o.ExtraArgs...)
}

// Process is one running claude process: the protocol Conn over its pipes,
// plus its life (stop, exit, stderr). The Conn is not exposed: the
// process runs its only reader.
type Process struct {
	conn   *Conn
	opts   ProcessOptions
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailWriter
	kill   context.CancelFunc // SIGTERM now, SIGKILL after KillGrace

	closeStdin sync.Once
	mu         sync.Mutex
	cause      store.ExitCause // why we stopped it, when we did
	done       chan struct{}
	exit       store.Exit
}

// StartProcess spawns claude and starts reading its output. The process is
// not tied to ctx's cancellation: stop it with Stop (ctx only carries values).
func StartProcess(ctx context.Context, opts ProcessOptions, h ConnHandlers, log zerolog.Logger) (*Process, error) {
	if err := ValidMode(orDefault(opts.PermissionMode, "default")); err != nil {
		return nil, err
	}
	if opts.WorkDir != "" {
		if fi, err := os.Stat(opts.WorkDir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("relay: working directory %q of session %s is not a directory: %w", opts.WorkDir, opts.SessionID, errOr(err, syscall.ENOTDIR))
		}
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	if opts.Clock == nil {
		opts.Clock = store.WallClock{}
	}
	pctx, kill := context.WithCancel(context.WithoutCancel(ctx))
	cmd := exec.CommandContext(pctx, opts.Bin, opts.Args()...)
	cmd.Dir = opts.WorkDir
	cmd.Env = childEnv(opts.Env)
	if opts.User != nil {
		cmd.Env = opts.User.env(cmd.Env)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: opts.User.credential()}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = opts.KillGrace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		return nil, fmt.Errorf("relay: stdin pipe: %w", err)
	}
	// stdout goes through an io.Pipe so cmd.Wait owns the copy and bounds it
	// with WaitDelay even if a grandchild keeps the descriptor open.
	pr, pw := io.Pipe()
	cmd.Stdout = smallCopy{pw}
	tail := newTailWriter(stderrTailLines)
	cmd.Stderr = smallCopy{tail}
	if err := cmd.Start(); err != nil {
		kill()
		_ = stdin.Close()
		return nil, notRunnable(opts.Bin, err)
	}
	p := &Process{opts: opts, cmd: cmd, stdin: stdin, stderr: tail, kill: kill, done: make(chan struct{})}
	p.conn = NewConn(pr, stdin, h, log)

	var wg sync.WaitGroup
	var waitErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		waitErr = cmd.Wait()
		_ = pw.Close() // the reader sees EOF once the last line is read
	}()
	go func() {
		defer wg.Done()
		if err := p.conn.Run(ctx); err != nil {
			log.Error().Err(err).Msg("reading claude output")
		}
		// Drain anything left so the copy into the pipe never blocks Wait.
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		// Owned through p.done: Wait and Stop block until it closes.
		wg.Wait()
		kill()
		p.mu.Lock()
		p.exit = exitInfo(cmd, waitErr, p.cause, tail.Lines())
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func errOr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

func notRunnable(bin string, err error) error {
	return fmt.Errorf("relay: cannot run the Claude Code CLI %q: %w (%w). Set CLAUDE_BIN to the claude binary, or install it with `npm install -g @anthropic-ai/claude-code` (or `make claude-code` in the slackgate repo)", bin, ErrCLINotRunnable, err)
}

// childEnv drops variables that would make claude think it runs inside
// another Claude Code session, and adds each of cliDefaults whose first
// variable the environment does not set. Without an environment of its
// own the CLI gets slackgate's through the allowlist, never all of it.
func childEnv(env []string) []string {
	if env == nil {
		env = defaultEnv()
	}
	out := make([]string, 0, len(env)+5)
	set := map[string]bool{}
	for _, kv := range env {
		if strings.HasPrefix(kv, nestedSession+"=") || strings.HasPrefix(kv, commandShell+"=") {
			continue
		}
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
		out = append(out, kv)
	}
	for _, group := range cliDefaults {
		if name, _, _ := strings.Cut(group[0], "="); !set[name] {
			out = append(out, group...)
		}
	}
	if bash := bashPath(); bash != "" {
		out = append(out, commandShell+"="+bash)
	}
	return out
}

// commandShell names the shell the CLI runs Bash commands in. It is always
// bash, found on slackgate's PATH, whatever the operator's environment or
// Claude's login shell say: the team policy reads commands as bash
// (bot/policy), and zsh would read the same text otherwise.
const commandShell = "CLAUDE_CODE_SHELL"

var bashPath = sync.OnceValue(func() string {
	p, err := exec.LookPath("bash")
	if err != nil {
		return ""
	}
	return p
})

// cliDefaults close what the CLI reads from places a session can write,
// beyond its settings: auto memory (files Claude writes under the config
// directory without asking, which every later session of the working
// directory reads as instructions), and core.fsmonitor, a program the
// repository's .git/config names and which 2.1.197's own `git status` at
// startup runs (2.1.330 turns it off for its own git calls). An operator's
// environment that sets a group's first variable keeps its own values
// (CLAUDE_CODE_DISABLE_AUTO_MEMORY=0 keeps auto memory).
var cliDefaults = [][]string{
	{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1"},
	{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0="},
}

// stopReasons is the human text of each cause we stop a process for; the
// same words the exit has always carried, so cards read as before.
var stopReasons = map[store.ExitCause]string{
	store.ExitIdle:     "idle",
	store.ExitEvicted:  "idle",
	store.ExitStopped:  "stopped",
	store.ExitShutdown: "worker shutting down",
}

// exitInfo describes how the process ended. cause is why we stopped it
// ("" when we did not); a process that ended on its own gets its cause
// from the session, which knows whether its last turn failed.
func exitInfo(cmd *exec.Cmd, err error, cause store.ExitCause, stderr []string) store.Exit {
	e := store.Exit{Code: -1, Cause: cause, Reason: stopReasons[cause], Stderr: stderr}
	if ps := cmd.ProcessState; ps != nil {
		e.Code = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Code = 128 + int(ws.Signal())
			if e.Reason == "" {
				e.Reason = "signal: " + ws.Signal().String()
			}
		}
	}
	if e.Reason == "" {
		switch {
		case err == nil:
			e.Reason = "exited"
		default:
			e.Reason = err.Error()
		}
	}
	return e
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Send writes a user message to claude (see Conn.Send).
func (p *Process) Send(ctx context.Context, text string) error { return p.conn.Send(ctx, text) }

// Interrupt aborts the running turn (see Conn.Interrupt).
func (p *Process) Interrupt(ctx context.Context) error { return p.conn.Interrupt(ctx) }

// SetPermissionMode switches the running process's permission mode and
// waits for the CLI's acknowledgement.
func (p *Process) SetPermissionMode(ctx context.Context, mode string) error {
	return p.conn.SetPermissionMode(ctx, mode)
}

// Stats counts what was read from claude's output so far.
func (p *Process) Stats() Stats { return p.conn.Stats() }

// Exited is closed when the process has exited and its output is read.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Wait blocks until the process has exited and returns how it ended.
func (p *Process) Wait() store.Exit {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// CloseInput closes claude's stdin: an idle claude exits, a busy one
// finishes its turn (denying its own pending prompts) and then exits.
func (p *Process) CloseInput() {
	p.closeStdin.Do(func() { _ = p.stdin.Close() })
}

// Stop ends the process: close stdin, wait up to StopGrace, then SIGTERM,
// and SIGKILL after KillGrace (exec.Cmd.Cancel + WaitDelay). If ctx ends
// first it skips to SIGTERM. cause is recorded in the exit (the first one
// given wins). It returns how the process ended.
func (p *Process) Stop(ctx context.Context, cause store.ExitCause) store.Exit {
	p.mu.Lock()
	if p.cause == "" {
		p.cause = cause
	}
	p.mu.Unlock()
	p.CloseInput()
	t := p.opts.Clock.NewTimer(p.opts.StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C():
		p.kill()
	case <-ctx.Done():
		p.kill()
	}
	return p.Wait()
}

// stopRequested reports whether Stop was called.
func (p *Process) stopRequested() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cause != ""
}

// outputBuffer sizes the buffer each copy of a process's output (stdout,
// stderr) reads into. exec's own copies take 32 KiB a stream, held for the
// process's whole life, idle or not: most of what an idle session cost
// the worker. Longer lines still pass, in pieces.
const outputBuffer = 4 << 10

// smallCopy is an output of a child process that exec copies into through
// a buffer of outputBuffer bytes: exec's io.Copy hands the copy to
// ReadFrom.
type smallCopy struct{ dst io.Writer }

func (s smallCopy) Write(b []byte) (int, error) { return s.dst.Write(b) }

// ReadFrom copies r to the writer; the wrappers hide any ReadFrom or
// WriteTo, so the copy uses this buffer and cannot come back here.
func (s smallCopy) ReadFrom(r io.Reader) (int64, error) {
	return io.CopyBuffer(struct{ io.Writer }{s.dst}, struct{ io.Reader }{r}, make([]byte, outputBuffer))
}

// tailWriter keeps the last keep lines written to it (stderr).
type tailWriter struct {
	mu      sync.Mutex
	keep    int
	lines   []string
	partial []byte
}

func newTailWriter(n int) *tailWriter { return &tailWriter{keep: n} }

func (t *tailWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, b...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			break
		}
		t.add(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > 4096 { // a very long line without newline
		t.add(string(t.partial))
		t.partial = nil
	}
	return len(b), nil
}

func (t *tailWriter) add(line string) {
	line = strings.TrimRight(line, "\r")
	if line == "" {
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.keep {
		t.lines = t.lines[len(t.lines)-t.keep:]
	}
}

// Lines returns the kept lines, including an unterminated last one.
func (t *tailWriter) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
		if len(out) > t.keep {
			out = out[len(out)-t.keep:]
		}
	}
	return out
}
