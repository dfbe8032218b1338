package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// These tests run the real CLI in -p mode, as a CI job would, with `slackgate
// mcp` as its permission-prompt tool. The MCP server is this test binary
// (mcpSwitch in TestMain).

const mcpSwitch = "SLACKGATE_TEST_RUN_MCP"

// runMCPIfAsked makes the test binary act as `slackgate mcp` when Claude
// Code starts it as its MCP server.
func runMCPIfAsked() {
	if os.Getenv(mcpSwitch) != "1" {
		return
	}
	p := program{environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := p.run(context.Background(), []string{"mcp"}); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate mcp:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runCI runs claude -p with the test binary as the MCP server slackgate
// and its approve tool as the permission-prompt tool.
func runCI(t *testing.T, a *app, base, wait, prompt string) *terminalRun {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"slackgate": map[string]any{"type": "stdio", "command": self, "args": []string{"mcp"}},
	}})
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--permission-mode", "default", "--mcp-config", string(config),
		"--permission-prompt-tool", "mcp__slackgate__approve"}
	return startCLI(t, a, args, prompt, append([]string{mcpSwitch + "=1"}, hookEnv(t, base, wait)...)...)
}

func TestMCPBashApprovedInSlackRuns(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_m1", "Bash", bash("echo approved > ci.txt", "Write ci.txt")),
		relaytest.ToolUse("toolu_m1b", "Bash", bash("echo again > again.txt", "Write again.txt")),
		relaytest.Text("done"))
	run := runCI(t, a, base, "60s", "write the files")
	root, card := apiCard(t, a, "Approve")
	if !root.HasText(a.workdir) {
		t.Errorf("the root does not name the working directory: %s", root.AllText())
	}
	a.click(dana, card.Ref(), "Approve")
	// The CLI does not name its session in tools/call: the server's own
	// session id must still put the session's next prompt in the same thread.
	second, err := a.slack.WaitThread(a.ctx, general, root.TS, func(m fakeslack.Message) bool {
		return m.HasText("echo again") && slices.Contains(m.Buttons(), "Approve")
	})
	if err != nil {
		t.Fatalf("the second prompt is not in the session's thread: %v\n%s", err, a.dump(root.TS))
	}
	a.click(dana, second.Ref(), "Approve")
	run.wait(t, a)
	if got := strings.TrimSpace(a.file("ci.txt")); got != "approved" {
		t.Errorf("ci.txt = %q", got)
	}
	if got := strings.TrimSpace(a.file("again.txt")); got != "again" {
		t.Errorf("again.txt = %q", got)
	}
	if res := a.toolResult("toolu_m1"); res.IsError {
		t.Errorf("the model got an error: %q", res.Content)
	}
	a.settled(card.Ref(), "Approved")
}

func TestMCPDenyWithAReasonTellsTheModelAndRunsNothing(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_m2", "Bash", bash("rm -rf build && touch wiped.txt", "Clean the build")),
		relaytest.Text("OK, I will not."))
	run := runCI(t, a, base, "60s", "clean up")
	_, card := apiCard(t, a, "Deny")
	a.click(dana, card.Ref(), "Deny")
	if _, err := a.slack.SubmitView(a.ctx, dana, a.view(dana).ID, map[string]string{"Reason (Claude reads it)": "use make clean instead"}); err != nil {
		t.Fatalf("submitting the deny modal: %v", err)
	}
	run.wait(t, a)
	res := a.toolResult("toolu_m2")
	if !res.IsError || !strings.Contains(res.Content, "use make clean instead") {
		t.Errorf("the model got %q (is_error %v), want the reason as an error result", res.Content, res.IsError)
	}
	a.noFile("wiped.txt")
	a.settled(card.Ref(), "Denied")
}

func TestMCPEditAndApproveRunsTheEditedCommand(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_m3", "Bash", bash("echo prod > target.txt", "Pick the target")),
		relaytest.Text("done"))
	run := runCI(t, a, base, "60s", "set the target")
	_, card := apiCard(t, a, "Edit & approve")
	a.click(dana, card.Ref(), "Edit & approve")
	if _, err := a.slack.SubmitView(a.ctx, dana, a.view(dana).ID, map[string]string{"Command": "echo staging > target.txt"}); err != nil {
		t.Fatalf("submitting the edit modal: %v", err)
	}
	run.wait(t, a)
	if res := a.toolResult("toolu_m3"); res.IsError {
		t.Fatalf("the edited command failed: %q", res.Content)
	}
	if got := a.file("target.txt"); got != "staging\n" {
		t.Errorf("target.txt = %q, want the edited command's output", got)
	}
	a.settled(card.Ref(), "Approved")
}

func TestMCPNobodyAnsweringIsADenyThatSaysSo(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_m4", "Bash", bash("echo late > late.txt", "Write late.txt")),
		relaytest.Text("carried on"))
	run := runCI(t, a, base, "2s", "write the file")
	_, card := apiCard(t, a, "Approve")
	// A prompt tool must answer: the card is withdrawn and Claude is told
	// why the command did not run.
	a.settled(card.Ref(), "Nobody answered within 2s, so Claude was told no")
	run.wait(t, a)
	a.noFile("late.txt")
	if res := a.toolResult("toolu_m4"); !res.IsError || !strings.Contains(res.Content, "Nobody answered") {
		t.Errorf("the model got %q (is_error %v), want a deny saying nobody answered", res.Content, res.IsError)
	}
	if !strings.Contains(run.result, `"subtype":"success"`) {
		t.Errorf("the turn did not end normally: %s", run.result)
	}
}
