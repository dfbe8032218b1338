package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// These tests run the real CLI without slackgate's relay, as a developer's
// terminal or a CI job would, with `slackgate hook` registered in
// --settings. The hook is this test binary (hookSwitch in TestMain), so it
// is the code under test without a separate build.

const (
	hookSwitch = "SLACKGATE_TEST_RUN_HOOK"
	hookToken  = "e2e-hook-token-0123456789abcdef"
)

// runHookIfAsked makes the test binary act as `slackgate hook` when Claude
// Code runs it as one.
func runHookIfAsked() {
	if os.Getenv(hookSwitch) != "1" {
		return
	}
	// As main does: Claude Code ends a hook it stops waiting for with
	// SIGTERM, and the hook must still withdraw its card.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := program{environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := p.run(ctx, []string{"hook"}); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate hook:", err)
	}
	os.Exit(0)
}

// laptopToken turns the approval API on with one token, for #general.
func laptopToken(c *Config) { c.APITokens = "laptop:" + general + ":" + hookToken }

// startHookApp runs slackgate in HTTP mode with the approval API on (a
// token for #general) and returns the app and the API's base URL.
func startHookApp(t *testing.T, steps ...relaytest.Step) (*app, string) {
	a := startApp(t, options{transport: httpMode, configure: laptopToken}, steps...)
	return a, "http://" + a.prog.listener.Addr().String()
}

// terminalRun is a claude -p process slackgate did not start.
type terminalRun struct {
	done      chan struct{}
	result    string // the result line
	canUseToo bool   // a can_use_tool reached stdout (the hook did not answer)
	err       error
}

// runTerminal runs claude with the hook registered for PermissionRequest
// (Bash) and PreToolUse (questions), sends prompt and waits in the
// background for the turn's result. stdio adds --permission-prompt-tool
// stdio, without which -p mode has no AskUserQuestion.
func runTerminal(t *testing.T, a *app, base, wait string, stdio bool, prompt string) *terminalRun {
	return runTerminalHookTimeout(t, a, base, wait, 0, stdio, prompt)
}

// runTerminalHookTimeout is runTerminal with the PermissionRequest hook's
// timeout in the settings set to hookTimeout (0: install's, longer than
// wait): Claude Code stops waiting for the hook when it passes, as when
// the person answers in the terminal first.
func runTerminalHookTimeout(t *testing.T, a *app, base, wait string, hookTimeout time.Duration, stdio bool, prompt string) *terminalRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w, err := time.ParseDuration(wait)
	if err != nil {
		t.Fatal(err)
	}
	hooks := hookSettings(self+" hook", w)["hooks"].(map[string]any)
	permission := hooks["PermissionRequest"].([]any)[0].(map[string]any)
	permission["matcher"] = "Bash"
	if hookTimeout > 0 {
		permission["hooks"].([]any)[0].(map[string]any)["timeout"] = int(hookTimeout.Seconds())
	}
	settings, _ := json.Marshal(map[string]any{"hooks": hooks})
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--permission-mode", "default", "--settings", string(settings)}
	if stdio {
		args = append(args, "--permission-prompt-tool", "stdio")
	}
	return startCLI(t, a, args, prompt, append([]string{hookSwitch + "=1"}, hookEnv(t, base, wait)...)...)
}

// hookEnv is what Claude Code runs the hook and `slackgate mcp` with, as a
// person sets it up: where the API is and the file holding the token,
// never the token itself, which every command Claude runs would inherit.
func hookEnv(t *testing.T, base, wait string) []string {
	return []string{"SLACKGATE_URL=" + base, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, hookToken, 0o600), "SLACKGATE_WAIT=" + wait}
}

// startCLI runs claude with args in a's working directory against a's
// scripted model, with env added, sends prompt and waits in the background
// for the turn's result. It stands for a developer's own Claude Code, so
// it reads the settings sources a terminal session does (in the model's
// private HOME and the test's own working directory).
func startCLI(t *testing.T, a *app, args []string, prompt string, env ...string) *terminalRun {
	t.Helper()
	cmd := exec.CommandContext(a.ctx, relaytest.CLI(t), args...)
	cmd.Dir = a.workdir
	cmd.Env = append(a.model.Env(t), env...)
	cmd.WaitDelay = 5 * time.Second
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = a.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	_, _ = stdin.Write(append(line, '\n'))
	r := &terminalRun{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			l := sc.Text()
			r.canUseToo = r.canUseToo || strings.Contains(l, `"can_use_tool"`)
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal([]byte(l), &head) == nil && head.Type == "result" {
				r.result = l
				_ = stdin.Close() // the turn is over: let the CLI exit
			}
		}
		r.err = cmd.Wait()
	}()
	t.Cleanup(func() { <-r.done })
	return r
}

func (r *terminalRun) wait(t *testing.T, a *app) {
	t.Helper()
	select {
	case <-r.done:
	case <-a.ctx.Done():
		t.Fatal("claude never finished its turn")
	}
	if r.err != nil || r.result == "" {
		t.Fatalf("claude exited with %v, result %q", r.err, r.result)
	}
	if r.canUseToo {
		t.Error("a can_use_tool reached stdout: the hook did not answer")
	}
}

// apiCard waits for the card of the API session's first request.
func apiCard(t *testing.T, a *app, button string) (root, card fakeslack.Message) {
	t.Helper()
	root, err := a.slack.WaitMessage(a.ctx, fakeslack.Text("Claude Code session on"))
	if err != nil {
		t.Fatalf("no session root in #general: %v", err)
	}
	card, err = a.slack.WaitThread(a.ctx, general, root.TS, func(m fakeslack.Message) bool { return slices.Contains(m.Buttons(), button) })
	if err != nil {
		t.Fatalf("no card with %q: %v\n%s", button, err, a.dump(root.TS))
	}
	return root, card
}

func TestHookBashApprovedInSlackRunsInTheTerminalSession(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_h1", "Bash", bash("echo hooked > hooked.txt", "Write hooked.txt")),
		relaytest.Text("done"))
	run := runTerminal(t, a, base, "60s", false, "write the file")
	root, card := apiCard(t, a, "Approve")
	if !root.HasText(a.workdir) {
		t.Errorf("the root does not name the working directory: %s", root.AllText())
	}
	a.click(dana, card.Ref(), "Approve")
	run.wait(t, a)
	if got := strings.TrimSpace(a.file("hooked.txt")); got != "hooked" {
		t.Errorf("hooked.txt = %q", got)
	}
	if res := a.toolResult("toolu_h1"); res.IsError {
		t.Errorf("the model got an error: %q", res.Content)
	}
	a.settled(card.Ref(), "Approved")
}

func TestHookQuestionAnsweredInSlackReachesTheModel(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_hq", "AskUserQuestion", ask(dbQuestion)),
		relaytest.Text("SQLite it is"))
	run := runTerminal(t, a, base, "60s", true, "start a project")
	_, card := apiCard(t, a, "SQLite")
	a.click(dana, card.Ref(), "SQLite")
	run.wait(t, a)
	res := a.toolResult("toolu_hq")
	if res.IsError || !strings.Contains(res.Content, `"Which database should we use?"="SQLite"`) {
		t.Errorf("the model got %q (is_error %v), want the answer SQLite", res.Content, res.IsError)
	}
	a.settled(card.Ref(), "SQLite")
}

func TestHookThatTimesOutPassesThroughWithoutBreakingTheSession(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_ht", "Bash", bash("echo late > late.txt", "Write late.txt")),
		relaytest.Text("carried on"))
	run := runTerminal(t, a, base, "2s", false, "write the file")
	_, card := apiCard(t, a, "Approve")
	// Nobody answers: the hook withdraws the card and passes through; -p
	// mode without a prompt tool then denies, and the turn goes on.
	a.settled(card.Ref(), "Nobody answered within 2s; the terminal asks again")
	run.wait(t, a)
	a.noFile("late.txt")
	if res := a.toolResult("toolu_ht"); !res.IsError {
		t.Errorf("the model got %q as a success; without an answer the command must not run", res.Content)
	}
	if !strings.Contains(run.result, `"subtype":"success"`) {
		t.Errorf("the turn did not end normally: %s", run.result)
	}
}

func TestHookCancelledByClaudeCodeSaysAnsweredInTheTerminalOnTheSlackCard(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_hc", "Bash", bash("echo there > there.txt", "Write there.txt")),
		relaytest.Text("carried on"))
	// The terminal stands in by its clock: Claude Code stops waiting for
	// the hook after the settings' 3 s timeout (SIGTERM, as when a person
	// answers the prompt there first), long before SLACKGATE_WAIT.
	run := runTerminalHookTimeout(t, a, base, "60s", 3*time.Second, false, "write the file")
	_, card := apiCard(t, a, "Approve")
	a.settled(card.Ref(), "Answered in the terminal")
	run.wait(t, a)
}

func TestHookReportsWhatRanInTheSessionThreadAndTheAuditLog(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{transport: httpMode, backend: redisBackend, configure: laptopToken},
		relaytest.ToolUse("toolu_hr", "Bash", bash("echo reported > reported.txt", "Write reported.txt")),
		relaytest.ToolUse("toolu_hf", "Bash", bash("exit 3", "Fail")),
		relaytest.Text("done"))
	base := "http://" + a.prog.listener.Addr().String()
	run := runTerminal(t, a, base, "60s", false, "write the file")
	root, card := apiCard(t, a, "Approve")
	a.click(dana, card.Ref(), "Approve")
	failing, err := a.slack.WaitThread(a.ctx, general, root.TS, func(m fakeslack.Message) bool {
		return m.HasText("exit 3") && slices.Contains(m.Buttons(), "Approve")
	})
	if err != nil {
		t.Fatalf("no card for the second command: %v\n%s", err, a.dump(root.TS))
	}
	a.click(dana, failing.Ref(), "Approve")
	run.wait(t, a)
	for _, want := range []string{"*Bash* ran: `echo reported &gt; reported.txt` · _as reported by API token laptop_", "*Bash* failed: `exit 3`"} {
		if _, err := a.slack.WaitThread(a.ctx, general, root.TS, func(m fakeslack.Message) bool { return m.HasText(want) }); err != nil {
			t.Errorf("no thread line %q: %v\n%s", want, err, a.dump(root.TS))
		}
	}
	st := a.redisStore()
	entries, err := st.AuditLog(a.ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]store.AuditEntry{}
	for _, e := range entries {
		if e.Action == store.AuditToolRan {
			ran[e.ToolUseID] = e
		}
	}
	if e := ran["toolu_hr"]; e.Tool != "Bash" || e.Result != store.ToolSucceeded || e.Message != "echo reported > reported.txt" ||
		!strings.HasPrefix(e.SessionID, "api.laptop.") || e.ReportedBy != "api:laptop" {
		t.Errorf("audit entry of the command that ran = %+v", e)
	}
	if e := ran["toolu_hf"]; e.Result != store.ToolFailed || e.Message != "exit 3" {
		t.Errorf("audit entry of the command that failed = %+v", e)
	}
}

// TestHookKeepsItsTokenFromTheSessionsCommands: the hook finds its token, yet
// an approved `env` (what any command Claude runs sees) holds no trace of
// it.
func TestHookKeepsItsTokenFromTheSessionsCommands(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_he", "Bash", bash("env > env.txt", "Show the environment")),
		relaytest.Text("done"))
	run := runTerminal(t, a, base, "60s", false, "show the environment")
	_, card := apiCard(t, a, "Approve")
	a.click(dana, card.Ref(), "Approve")
	run.wait(t, a)
	env := a.file("env.txt")
	if !strings.Contains(env, "SLACKGATE_URL="+base) {
		t.Fatalf("env.txt does not show Claude Code's environment:\n%s", env)
	}
	if strings.Contains(env, hookToken) || strings.Contains(env, "SLACKGATE_TOKEN=") {
		t.Errorf("an approved command sees the hook's token:\n%s", env)
	}
}

// TestHookSaysOnStderrWhyItPassesThrough: whatever makes the hook pass a
// prompt back to the terminal, it says why on stderr: nobody answered
// within its -wait (which wins over SLACKGATE_WAIT, with a warning), or
// the bot knows no such token, with what to paste when the whole
// API_TOKENS entry was.
func TestHookSaysOnStderrWhyItPassesThrough(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t)
	event := `{"session_id":"s-why","hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls"}}`
	tests := []struct {
		name, token string
		args        []string
		why         []string
	}{
		{"nobody answers within -wait", hookToken, []string{"-wait", "1s"},
			[]string{"nobody answered in Slack within 1s", "SLACKGATE_WAIT=5m is not used: the hook waits 1s"}},
		{"the whole entry pasted", "laptop:" + general + ":" + hookToken, nil,
			[]string{"401", "whole API_TOKENS entry (name:channel:token)", "keep only the token"}},
		{"an unknown token", "not-a-token-the-bot-knows-at-all", nil, []string{"401", "the bot knows no such token"}},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		p := program{environ: []string{"SLACKGATE_URL=" + base, "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, tc.token, 0o600), "SLACKGATE_WAIT=5m"},
			stdin: strings.NewReader(event), stdout: &out, stderr: &errb}
		start := time.Now()
		if err := p.run(a.ctx, append([]string{"hook"}, tc.args...)); err != nil || strings.TrimSpace(out.String()) != "{}" {
			t.Errorf("%s: hook = %v, stdout %q; want the pass-through and exit 0", tc.name, err, out.String())
		}
		for _, w := range tc.why {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s: stderr %q does not say %q", tc.name, errb.String(), w)
			}
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s: took %s; the hook's -wait is 1s, not SLACKGATE_WAIT's 5m", tc.name, d)
		}
	}
}
