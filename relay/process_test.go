package relay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// script writes an executable shell script standing in for the claude
// binary, to test process handling (the protocol is tested elsewhere).
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProcessOptionsArgs(t *testing.T) {
	base := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"}
	// What the CLI reads: none of its setting sources, no MCP server but
	// the operator's, no slash command; always, whatever else is set.
	closed := []string{"--setting-sources", "", "--strict-mcp-config", "--disable-slash-commands"}
	tests := []struct {
		name string
		opts ProcessOptions
		tail []string
	}{
		{"new session", ProcessOptions{SessionID: "id1"}, append(append([]string{"--permission-mode", "default"}, closed...), "--session-id", "id1")},
		{"resumed session with model and extra args", ProcessOptions{SessionID: "id1", Resume: true, PermissionMode: "plan", Model: "opus", ExtraArgs: []string{"--max-turns", "3"}},
			append(append([]string{"--permission-mode", "plan"}, closed...), "--resume", "id1", "--model", "opus", "--max-turns", "3")},
		{"the operator's settings, MCP servers and sources", ProcessOptions{SessionID: "id1", SettingSources: []string{"project", "local"},
			SettingsFile: "/etc/slackgate/claude-settings.json", MCPConfigFile: "/etc/slackgate/mcp.json"},
			[]string{"--permission-mode", "default", "--setting-sources", "project,local", "--strict-mcp-config", "--disable-slash-commands",
				"--settings", "/etc/slackgate/claude-settings.json", "--mcp-config", "/etc/slackgate/mcp.json", "--session-id", "id1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := tt.opts.Args(), append(slices.Clone(base), tt.tail...); !slices.Equal(got, want) {
				t.Errorf("Args() = %q\nwant %q", got, want)
			}
		})
	}
}

func TestChildEnvTurnsOffAutoMemoryAndFSMonitorUnlessTheOperatorSetsThem(t *testing.T) {
	shell := "CLAUDE_CODE_SHELL=" + bashPath()
	defaults := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=", shell}
	if got, want := childEnv([]string{"PATH=/bin", "CLAUDECODE=1"}), append([]string{"PATH=/bin"}, defaults...); !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
	own := []string{"CLAUDE_CODE_DISABLE_AUTO_MEMORY=0", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=ci"}
	if got := childEnv(own); !slices.Equal(got, append(slices.Clone(own), shell)) {
		t.Errorf("childEnv changed the operator's own values: %q", got)
	}
}

// TestCommandsRunInBashWhateverTheOperatorSays: the policy reads commands
// as bash, so the CLI runs them in bash even when the environment names
// another shell.
func TestCommandsRunInBashWhateverTheOperatorSays(t *testing.T) {
	if bashPath() == "" {
		t.Fatal("no bash on PATH")
	}
	got := childEnv([]string{"PATH=/bin", "CLAUDE_CODE_SHELL=/bin/zsh"})
	if slices.Contains(got, "CLAUDE_CODE_SHELL=/bin/zsh") || !slices.Contains(got, "CLAUDE_CODE_SHELL="+bashPath()) {
		t.Fatalf("childEnv = %q, want the shell to be bash", got)
	}
}

func TestConfigRefusesAnUnknownSettingSource(t *testing.T) {
	cfg := Config{VerifyKey: make([]byte, 32), WorkerID: "w", AllowedDirs: []string{"/srv/repo"}, SettingSources: []string{"project", "policy"}}
	if err := cfg.normalize(); !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"policy"`) {
		t.Fatalf("normalize = %v, want ErrInvalid naming the source", err)
	}
}

func TestStartProcessExplainsAMissingCLI(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string]string{
		"missing path":         filepath.Join(t.TempDir(), "no", "claude"),
		"not on PATH":          "claude-definitely-not-installed-here",
		"not executable":       notExec,
		"a directory, not bin": t.TempDir(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := StartProcess(context.Background(), ProcessOptions{Bin: bin, SessionID: "s"}, ConnHandlers{}, zerolog.Nop())
			if !errors.Is(err, ErrCLINotRunnable) {
				t.Fatalf("err = %v, want ErrCLINotRunnable", err)
			}
			for _, want := range []string{"CLAUDE_BIN", "npm install -g @anthropic-ai/claude-code", "make claude-code"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestStartProcessRejectsAMissingWorkDir(t *testing.T) {
	_, err := StartProcess(context.Background(), ProcessOptions{Bin: "/bin/true", SessionID: "s", WorkDir: filepath.Join(t.TempDir(), "gone")}, ConnHandlers{}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "working directory") {
		t.Fatalf("err = %v", err)
	}
}

func TestProcessReportsExitCodeArgsAndStderrTail(t *testing.T) {
	bin := script(t, `echo "args: $*" >&2
echo "env: ${CLAUDECODE:-unset} $SLACKGATE_TEST" >&2
i=1; while [ $i -le 30 ]; do echo "line $i" >&2; i=$((i+1)); done
pwd >&2
exit 3`)
	dir := t.TempDir()
	p, err := StartProcess(context.Background(), ProcessOptions{Bin: bin, SessionID: "sid", WorkDir: dir,
		Env: []string{"CLAUDECODE=1", "SLACKGATE_TEST=yes", "PATH=" + os.Getenv("PATH")}}, ConnHandlers{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	exit := p.Wait()
	if exit.Code != 3 || exit.Reason == "" {
		t.Errorf("exit = %+v", exit)
	}
	if len(exit.Stderr) != stderrTailLines || exit.Stderr[len(exit.Stderr)-1] != dir || exit.Stderr[len(exit.Stderr)-2] != "line 30" {
		t.Errorf("stderr tail = %q", exit.Stderr)
	}
	// The first lines fell out of the tail; run again to see them.
	bin2 := script(t, `echo "args: $*" >&2; echo "env: ${CLAUDECODE:-unset} $SLACKGATE_TEST" >&2`)
	p, err = StartProcess(context.Background(), ProcessOptions{Bin: bin2, SessionID: "sid", Resume: true,
		Env: []string{"CLAUDECODE=1", "SLACKGATE_TEST=yes"}}, ConnHandlers{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	exit = p.Wait()
	want := []string{"args: " + strings.Join(ProcessOptions{SessionID: "sid", Resume: true}.Args(), " "), "env: unset yes"}
	if exit.Code != 0 || !slices.Equal(exit.Stderr, want) {
		t.Errorf("exit = %+v, want stderr %q", exit, want)
	}
}

func TestStopClosesStdinAndAnIdleProcessExitsByItself(t *testing.T) {
	// Like claude when idle: exit 0 as soon as stdin ends.
	bin := script(t, `cat >/dev/null; exit 0`)
	p, err := StartProcess(context.Background(), ProcessOptions{Bin: bin, SessionID: "s", StopGrace: time.Minute, KillGrace: time.Minute},
		ConnHandlers{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	exit := p.Stop(context.Background(), store.ExitIdle)
	if exit.Code != 0 || exit.Reason != "idle" || exit.Cause != store.ExitIdle || exit.Failed() {
		t.Errorf("exit = %+v", exit)
	}
	if time.Since(start) > 30*time.Second {
		t.Error("Stop waited for the grace period although the process exited")
	}
}

func TestStopEscalatesToSIGTERMThenSIGKILL(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCode int
	}{
		{"ignores stdin, dies on SIGTERM", `echo '{"type":"system","subtype":"ready"}'
while :; do sleep 0.1; done`, 128 + 15},
		{"ignores stdin and SIGTERM, needs SIGKILL", `trap '' TERM
echo '{"type":"system","subtype":"ready"}'
while :; do sleep 0.1; done`, 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ready := make(chan struct{}, 1)
			h := ConnHandlers{OnMessage: func(_ context.Context, m Message) {
				if m.System != nil && m.System.Subtype == "ready" {
					ready <- struct{}{}
				}
			}}
			p, err := StartProcess(context.Background(), ProcessOptions{Bin: script(t, tt.body), SessionID: "s",
				StopGrace: 50 * time.Millisecond, KillGrace: 200 * time.Millisecond}, h, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-ready:
			case <-time.After(guard):
				t.Fatal("script did not start")
			}
			exit := p.Stop(context.Background(), store.ExitStopped)
			if exit.Code != tt.wantCode || exit.Reason != "stopped" || exit.Cause != store.ExitStopped || exit.Failed() {
				t.Errorf("exit = %+v, want code %d", exit, tt.wantCode)
			}
		})
	}
}

// TestLinesLongerThanTheOutputBuffersArriveWhole: the child's output is
// copied through small buffers (outputBuffer); a stdout line many times
// their size still reaches the handler as one message, and the stderr
// tail keeps its lines.
func TestLinesLongerThanTheOutputBuffersArriveWhole(t *testing.T) {
	text := strings.Repeat("0123456789", 10*outputBuffer/10+7) // over ten buffers
	line := `{"type":"result","subtype":"success","result":"` + text + `"}`
	path := filepath.Join(t.TempDir(), "line.json")
	if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := script(t, `cat `+path+`; echo "`+text[:2*outputBuffer]+`" >&2; echo last >&2`)
	got := make(chan string, 1)
	h := ConnHandlers{OnMessage: func(_ context.Context, m Message) {
		if m.Result != nil {
			got <- m.Result.Result
		}
	}}
	p, err := StartProcess(context.Background(), ProcessOptions{Bin: bin, SessionID: "s"}, h, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	exit := p.Wait()
	select {
	case r := <-got:
		if r != text {
			t.Errorf("result of %d bytes arrived as %d bytes", len(text), len(r))
		}
	default:
		t.Fatal("the long line never arrived")
	}
	if n := len(exit.Stderr); n < 2 || exit.Stderr[n-1] != "last" {
		t.Errorf("stderr tail ends %q, want the long line's pieces then last", exit.Stderr[max(0, n-2):])
	}
}
