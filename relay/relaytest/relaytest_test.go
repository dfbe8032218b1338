package relaytest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackgate/slackgate/relay/relaytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cliRun drives one real CLI process over stream-json, the way the relay
// does, but with nothing of package relay.
type cliRun struct {
	tb     *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan wireLine
	wg     sync.WaitGroup
	stderr *lockedBuffer
	dir    string

	closeOnce sync.Once
}

// wireLine is one stdout line: raw and decoded loosely.
type wireLine struct {
	Raw       string
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startCLI spawns the CLI in a fresh directory against srv.
func startCLI(t *testing.T, bin string, srv *relaytest.Server, extra ...string) *cliRun {
	t.Helper()
	return startCLIIn(t, bin, t.TempDir(), srv.Env(t), extra...)
}

// startCLIIn spawns the CLI in dir with an explicit environment.
func startCLIIn(t *testing.T, bin, dir string, env []string, extra ...string) *cliRun {
	t.Helper()
	args := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", "default"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &cliRun{tb: t, cmd: cmd, stdin: stdin, lines: make(chan wireLine, 1024), stderr: &lockedBuffer{}, dir: dir}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(r.lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var wl wireLine
				if jerr := json.Unmarshal(line, &wl); jerr != nil {
					t.Errorf("stdout line is not JSON: %v: %.200s", jerr, line)
				}
				wl.Raw = string(bytes.TrimSpace(line))
				r.lines <- wl
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.close(ctx)
	})
	return r
}

// close ends stdin, drains stdout and waits for the process; the CLI exits
// by itself once stdin is closed and the turn is over. Safe to call twice.
func (r *cliRun) close(ctx context.Context) {
	r.closeOnce.Do(func() {
		_ = r.stdin.Close()
		for {
			select {
			case _, ok := <-r.lines:
				if ok {
					continue
				}
			case <-ctx.Done():
				_ = r.cmd.Process.Kill()
				for range r.lines {
				}
			}
			break
		}
		r.wg.Wait()
		if err := r.cmd.Wait(); err != nil {
			r.tb.Logf("cli exit: %v; stderr: %s", err, r.stderr.String())
		}
	})
}

// send writes one stream-json user message.
func (r *cliRun) send(text string) {
	r.tb.Helper()
	r.write(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": text},
		"parent_tool_use_id": nil,
		"session_id":         "default",
	})
}

func (r *cliRun) write(v any) {
	r.tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		r.tb.Fatal(err)
	}
	if _, err := r.stdin.Write(append(raw, '\n')); err != nil {
		r.tb.Fatalf("write stdin: %v", err)
	}
}

// respond answers a control_request with a success response.
func (r *cliRun) respond(requestID string, response any) {
	r.tb.Helper()
	r.write(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": requestID, "response": response,
	}})
}

// until reads stdout lines until one satisfies match, failing the test
// when the process ends or ctx does first.
func (r *cliRun) until(ctx context.Context, what string, match func(wireLine) bool) wireLine {
	r.tb.Helper()
	for {
		select {
		case <-ctx.Done():
			r.tb.Fatalf("waiting for %s: %v; stderr: %s", what, ctx.Err(), r.stderr.String())
		case l, ok := <-r.lines:
			if !ok {
				r.tb.Fatalf("waiting for %s: stdout closed; stderr: %s", what, r.stderr.String())
			}
			if match(l) {
				return l
			}
		}
	}
}

// canUseTool is the request of a can_use_tool control_request.
type canUseTool struct {
	Subtype   string          `json:"subtype"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

func isCanUseTool(l wireLine) bool {
	if l.Type != "control_request" {
		return false
	}
	var req canUseTool
	return json.Unmarshal(l.Request, &req) == nil && req.Subtype == "can_use_tool"
}

func isResult(l wireLine) bool { return l.Type == "result" }

// versions are the CLI binaries to test: CLAUDE_BIN (2.1.330 under make
// test) and CLAUDE_BIN_197 (the older pinned version that must keep
// working). Each skips when unset, or fails when integration is required.
var versions = []string{"CLAUDE_BIN", "CLAUDE_BIN_197"}

func cliFor(t *testing.T, env string) string {
	t.Helper()
	if env == "CLAUDE_BIN" {
		return relaytest.CLI(t)
	}
	return relaytest.CLIFromEnv(t, env)
}

// forEachCLI runs test once per CLI version.
func forEachCLI(t *testing.T, test func(t *testing.T, bin string)) {
	for _, env := range versions {
		t.Run(env, func(t *testing.T) {
			test(t, cliFor(t, env))
		})
	}
}

func within(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// decodeRequest decodes a can_use_tool request line.
func decodeRequest(t *testing.T, l wireLine) canUseTool {
	t.Helper()
	var req canUseTool
	if err := json.Unmarshal(l.Request, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

type resultLine struct {
	Subtype string `json:"subtype"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	Session string `json:"session_id"`
}

func decodeResult(t *testing.T, l wireLine) resultLine {
	t.Helper()
	var r resultLine
	if err := json.Unmarshal([]byte(l.Raw), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// assertOffline fails when the CLI called anything but the Messages API.
func assertOffline(t *testing.T, srv *relaytest.Server) {
	t.Helper()
	if out := srv.Outbound(); len(out) > 0 {
		t.Errorf("the CLI tried to reach %q", out)
	}
	for _, c := range srv.Calls() {
		if c.Kind == "other" {
			t.Errorf("the CLI called an endpoint the fake does not know: %s %s", c.Method, c.Path)
		}
	}
}

// TestCLIRunsApprovedBashThroughFake runs one approved command through
// the fake and logs how long each step took (spawn, prompt, can_use_tool,
// allow, tool result, final text, result line). Seen on both versions:
// about 0.9–1.2 s on a quiet 2-core machine and 2–3.4 s under load (load
// average 6–10); the first API call comes 0.6–2.9 s after spawn, and the
// rest of the turn takes 0.3–0.7 s.
func TestCLIRunsApprovedBashThroughFake(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t,
			relaytest.ToolUse("toolu_touch", "Bash", map[string]any{"command": "touch made-by-claude", "description": "make a file"}),
			relaytest.Text("done"))
		ctx := within(t, 90*time.Second)
		spawned := time.Now()
		run := startCLI(t, bin, srv)
		run.send("please make a file")

		l := run.until(ctx, "can_use_tool", isCanUseTool)
		req := decodeRequest(t, l)
		if req.ToolName != "Bash" || req.ToolUseID != "toolu_touch" {
			t.Fatalf("can_use_tool = %s, want Bash toolu_touch", l.Raw)
		}
		if _, err := os.Stat(filepath.Join(run.dir, "made-by-claude")); err == nil {
			t.Fatal("the command ran before it was approved")
		}
		run.respond(l.RequestID, map[string]any{"behavior": "allow", "updatedInput": req.Input})

		tr, err := srv.WaitToolResult(ctx, "toolu_touch")
		if err != nil {
			t.Fatal(err)
		}
		if tr.IsError {
			t.Fatalf("tool result is an error: %q", tr.Content)
		}
		res := decodeResult(t, run.until(ctx, "result", isResult))
		turn := time.Since(spawned)
		if _, err := os.Stat(filepath.Join(run.dir, "made-by-claude")); err != nil {
			t.Fatalf("the approved command did not run: %v", err)
		}
		if res.Subtype != "success" || res.IsError || res.Result != "done" {
			t.Fatalf("result = %+v, want success with text done", res)
		}
		if got := srv.StepsUsed(); got != 2 {
			t.Fatalf("steps used = %d, want 2", got)
		}
		first, err := srv.WaitCall(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("figures: first API call %v after spawn; spawn to result %v; calls %v", first.At.Sub(spawned), turn, kinds(srv.Calls()))
		assertOffline(t, srv)
	})
}

func TestDeniedToolUseTellsTheModelWhy(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t,
			relaytest.ToolUse("toolu_rm", "Bash", map[string]any{"command": "touch should-not-exist", "description": "make a file"}),
			relaytest.Text("ok, I will not"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv)
		run.send("make a file")
		l := run.until(ctx, "can_use_tool", isCanUseTool)
		run.respond(l.RequestID, map[string]any{"behavior": "deny", "message": "not today, says Ada"})
		tr, err := srv.WaitToolResult(ctx, "toolu_rm")
		if err != nil {
			t.Fatal(err)
		}
		if !tr.IsError || !strings.Contains(tr.Content, "not today, says Ada") {
			t.Fatalf("tool result = %+v, want an error carrying the reason", tr)
		}
		if res := decodeResult(t, run.until(ctx, "result", isResult)); res.Result != "ok, I will not" {
			t.Fatalf("result = %+v", res)
		}
		if _, err := os.Stat(filepath.Join(run.dir, "should-not-exist")); err == nil {
			t.Fatal("the denied command ran")
		}
	})
}

// askInput is the AskUserQuestion input shape the relay and blocks rely on.
type askInput struct {
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		MultiSelect bool `json:"multiSelect"`
	} `json:"questions"`
}

func TestAskUserQuestionArrivesAsCanUseTool(t *testing.T) {
	input := map[string]any{"questions": []any{
		map[string]any{"question": "Which database should we use?", "header": "Database", "multiSelect": false,
			"options": []any{
				map[string]any{"label": "SQLite", "description": "one file, no server"},
				map[string]any{"label": "Postgres", "description": "a real server"},
			}},
		map[string]any{"question": "Which features do you want?", "header": "Features", "multiSelect": true,
			"options": []any{
				map[string]any{"label": "Auth", "description": "log in"},
				map[string]any{"label": "Export", "description": "CSV export"},
			}},
	}}
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t, relaytest.ToolUse("toolu_ask", "AskUserQuestion", input), relaytest.Text("thanks"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv)
		run.send("ask me something")
		l := run.until(ctx, "can_use_tool", isCanUseTool)
		t.Logf("wire: %s", l.Raw)
		req := decodeRequest(t, l)
		if req.ToolName != "AskUserQuestion" || req.ToolUseID != "toolu_ask" {
			t.Fatalf("can_use_tool = %s, want AskUserQuestion toolu_ask", l.Raw)
		}
		var ask askInput
		if err := json.Unmarshal(req.Input, &ask); err != nil {
			t.Fatal(err)
		}
		if len(ask.Questions) != 2 || ask.Questions[0].Header != "Database" || ask.Questions[0].MultiSelect ||
			!ask.Questions[1].MultiSelect || len(ask.Questions[1].Options) != 2 ||
			ask.Questions[1].Options[1].Label != "Export" || ask.Questions[1].Options[1].Description != "CSV export" {
			t.Fatalf("AskUserQuestion input = %s", req.Input)
		}
		var answered map[string]any
		if err := json.Unmarshal(req.Input, &answered); err != nil {
			t.Fatal(err)
		}
		answered["answers"] = map[string]any{"Which database should we use?": "SQLite", "Which features do you want?": "Auth, Export"}
		run.respond(l.RequestID, map[string]any{"behavior": "allow", "updatedInput": answered})
		tr, err := srv.WaitToolResult(ctx, "toolu_ask")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"Which database should we use?"="SQLite"`, `"Which features do you want?"="Auth, Export"`} {
			if !strings.Contains(tr.Content, want) || tr.IsError {
				t.Fatalf("tool result %+v lacks %s", tr, want)
			}
		}
		run.until(ctx, "result", isResult)
	})
}

func TestExitPlanModeCarriesThePlanFile(t *testing.T) {
	const plan = "# Plan\n1. do X\n2. do Y\n"
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t,
			relaytest.WritePlan("toolu_write", plan),
			relaytest.ToolUse("toolu_plan", "ExitPlanMode", map[string]any{}),
			relaytest.Text("planned"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv, "--permission-mode", "plan")
		run.send("plan something")
		// Writing the plan file is allowed by plan mode: the first prompt is
		// ExitPlanMode.
		l := run.until(ctx, "can_use_tool", isCanUseTool)
		t.Logf("wire: %s", l.Raw)
		req := decodeRequest(t, l)
		if req.ToolName != "ExitPlanMode" {
			t.Fatalf("first can_use_tool = %s, want ExitPlanMode", l.Raw)
		}
		var in struct {
			Plan         string `json:"plan"`
			PlanFilePath string `json:"planFilePath"`
		}
		if err := json.Unmarshal(req.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Plan != plan || !strings.HasPrefix(in.PlanFilePath, filepath.Join(srv.Home(), ".claude", "plans")) {
			t.Fatalf("ExitPlanMode input = %s, want the plan file's content and path", req.Input)
		}
		run.respond(l.RequestID, map[string]any{"behavior": "allow", "updatedInput": req.Input})
		tr, err := srv.WaitToolResult(ctx, "toolu_plan")
		if err != nil {
			t.Fatal(err)
		}
		if tr.IsError || !strings.Contains(tr.Content, "User has approved your plan") || !strings.Contains(tr.Content, "1. do X") {
			t.Fatalf("tool result = %+v", tr)
		}
		run.until(ctx, "result", isResult)
	})
}

func TestToolUsesInOneReplyPromptConcurrently(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		outside := t.TempDir() // outside the CLI's working directory: reads there ask
		for _, name := range []string{"a.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(outside, name), []byte("content of "+name), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		srv := relaytest.NewServer(t,
			relaytest.Reply{
				relaytest.ToolUseBlock("toolu_a", "Read", map[string]any{"file_path": filepath.Join(outside, "a.txt")}),
				relaytest.ToolUseBlock("toolu_b", "Read", map[string]any{"file_path": filepath.Join(outside, "b.txt")}),
			},
			relaytest.Text("read both"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv)
		run.send("read two files")
		first := run.until(ctx, "first can_use_tool", isCanUseTool)
		second := run.until(ctx, "second can_use_tool", isCanUseTool) // arrives before any answer
		ids := map[string]wireLine{}
		for _, l := range []wireLine{first, second} {
			ids[decodeRequest(t, l).ToolUseID] = l
		}
		if _, ok := ids["toolu_a"]; !ok || len(ids) != 2 {
			t.Fatalf("pending prompts = %v, want toolu_a and toolu_b", ids)
		}
		// Answer in the opposite order.
		for _, id := range []string{"toolu_b", "toolu_a"} {
			run.respond(ids[id].RequestID, map[string]any{"behavior": "allow", "updatedInput": decodeRequest(t, ids[id]).Input})
		}
		for _, id := range []string{"toolu_a", "toolu_b"} {
			tr, err := srv.WaitToolResult(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if tr.IsError || !strings.Contains(tr.Content, "content of") {
				t.Fatalf("%s result = %+v", id, tr)
			}
		}
		run.until(ctx, "result", isResult)
	})
}

func TestFollowUpAndResumeReachTheModel(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t, relaytest.Text("first answer"), relaytest.Text("second answer"), relaytest.Text("third answer"))
		ctx := within(t, 120*time.Second)
		run := startCLI(t, bin, srv)
		run.send("first question")
		res := decodeResult(t, run.until(ctx, "first result", isResult))
		run.send("second question")
		run.until(ctx, "second result", isResult)
		if got := srv.LastUserText(); got != "second question" {
			t.Fatalf("LastUserText = %q", got)
		}
		run.close(ctx)

		// A new process resumes the session: same HOME, same working
		// directory (2.1.197 looks for the session under it), same id.
		resumed := startCLIIn(t, bin, run.dir, srv.Env(t), "--resume", res.Session)
		resumed.send("third question")
		if r := decodeResult(t, resumed.until(ctx, "resumed result", isResult)); r.Result != "third answer" || r.Session != res.Session {
			t.Fatalf("resumed result = %+v, want third answer in session %s", r, res.Session)
		}
		reqs := srv.Requests()
		got := reqs[len(reqs)-1].UserTexts()
		want := []string{"first question", "second question", "third question"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("the resumed model saw user texts %q, want %q", got, want)
		}
	})
}

func TestAPIErrorEndsTheTurnWithAnErrorResult(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t, relaytest.APIError(400, "invalid_request_error", "relaytest says no"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv)
		run.send("hello")
		res := decodeResult(t, run.until(ctx, "result", isResult))
		if !res.IsError || !strings.Contains(res.Result, "relaytest says no") {
			t.Fatalf("result = %+v, want an error naming the API's message", res)
		}
	})
}

func TestInterruptWhileTheModelIsHeldAbortsTheTurn(t *testing.T) {
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t, relaytest.Hold(make(chan struct{}), relaytest.Text("never seen")), relaytest.Text("after"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv)
		run.send("think hard")
		if _, err := srv.WaitRequests(ctx, 1); err != nil {
			t.Fatal(err)
		}
		run.write(map[string]any{"type": "control_request", "request_id": "req_int_1",
			"request": map[string]any{"subtype": "interrupt"}})
		res := decodeResult(t, run.until(ctx, "result", isResult))
		if res.Subtype != "error_during_execution" {
			t.Fatalf("result = %+v, want error_during_execution", res)
		}
		// The session stays usable: the next message gets the next step.
		run.send("again")
		if res := decodeResult(t, run.until(ctx, "result", isResult)); res.Result != "after" {
			t.Fatalf("result after the interrupt = %+v", res)
		}
		reqs := srv.Requests()
		texts := reqs[len(reqs)-1].UserTexts()
		if srv.LastUserText() != "again" || !slices.Contains(texts, "[Request interrupted by user]") {
			t.Fatalf("after the interrupt the model saw %q (last %q)", texts, srv.LastUserText())
		}
	})
}

func kinds(calls []relaytest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method+" "+c.Path+" "+c.Kind)
	}
	return out
}

func TestSideCallsDoNotConsumeSteps(t *testing.T) {
	// In auto mode 2.1.197 asks a classifier model (calls without tools)
	// before running a Bash command that deletes; those calls must not eat
	// the script.
	forEachCLI(t, func(t *testing.T, bin string) {
		srv := relaytest.NewServer(t,
			relaytest.ToolUse("toolu_1", "Bash", map[string]any{"command": "touch x && rm -rf /tmp/relaytest-nothing-here", "description": "make x"}),
			relaytest.Text("done"))
		ctx := within(t, 90*time.Second)
		run := startCLI(t, bin, srv, "--permission-mode", "auto")
		run.send("make x")
		var res resultLine
		for {
			l := run.until(ctx, "result", func(l wireLine) bool { return isResult(l) || isCanUseTool(l) })
			if isResult(l) {
				res = decodeResult(t, l)
				break
			}
			run.respond(l.RequestID, map[string]any{"behavior": "allow", "updatedInput": decodeRequest(t, l).Input})
		}
		if res.Result != "done" || srv.StepsUsed() != 2 {
			t.Fatalf("result %+v after %d steps, want done after 2", res, srv.StepsUsed())
		}
		if _, ok := srv.ToolResult("toolu_1"); !ok {
			t.Fatal("the model never got the Bash result")
		}
		side := srv.SideRequests()
		for _, r := range side {
			if len(r.Tools) > 0 {
				t.Errorf("a call offering tools was taken for a side call: %s", r.Raw)
			}
		}
		tr, _ := srv.ToolResult("toolu_1")
		t.Logf("%d side calls; tool result %+v", len(side), tr)
	})
}
