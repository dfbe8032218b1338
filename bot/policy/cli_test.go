package policy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// fidelityRules are allow rules given both to the real CLI (as
// permissions.allow) and to one allow rule of a policy.
var fidelityRules = []string{"Bash(touch a)", "Bash(mkdir -p:*)", "Bash(chmod 600 *)"}

// fidelityCases are commands none of which the CLI allows by itself in
// default mode (it would ask without the rules), and whether the CLI and
// the policy allow them with the rules. The policy is never looser than
// the CLI; where it is stricter the case says why.
var fidelityCases = []struct {
	cmd             string
	cli, policy     bool
	stricterBecause string
}{
	{cmd: "touch a", cli: true, policy: true},
	{cmd: "touch a b"},
	{cmd: "touch zzz"},
	{cmd: "mkdir -p x/y", cli: true, policy: true},
	{cmd: "mkdir -pv x"},
	{cmd: "chmod 600 a", cli: true, policy: true},
	{cmd: "touch a && mkdir -p z", cli: true, policy: true},
	{cmd: "touch a && touch c"},
	{cmd: "mkdir -p q; chmod 644 a"},
	{cmd: "mkdir -p r | touch c"},
	{cmd: "timeout 5 mkdir -p t", cli: true, policy: true},
	{cmd: "mkdir -p $(touch c)"},
	{cmd: "mkdir -p q > out.txt"},
	{cmd: "mkdir -p q 2>&1", cli: true, policy: true},
	{cmd: "mkdir -p q > /dev/null", cli: true, policy: true},
	{cmd: "FOO=1 mkdir -p q"},
	{cmd: "nice -n 5 mkdir -p q", cli: true, policy: true},
	{cmd: "mkdir -p \"q\"", cli: true, policy: true},
	{cmd: "bash -c 'mkdir -p q'"},
	{cmd: "mkdir -p q # note", cli: true, policy: true},
	{cmd: "mkdir -p q\ntouch a", cli: true, policy: true},
	{cmd: "mkdir -p `touch c`"},
	{cmd: "env mkdir -p q"},
	{cmd: "xargs mkdir -p < list", cli: true, stricterBecause: "xargs runs mkdir with arguments it reads, and an allow rule must allow xargs too"},
	{cmd: "/bin/mkdir -p q"},
	{cmd: "mkdir  -p q", cli: true, policy: true},
}

// TestMatcherAgreesWithTheCLI runs the real CLI with fidelityRules as its
// own allow rules and a scripted model that runs each command in turn:
// a command the CLI asks about (can_use_tool, answered with a deny) it
// did not allow; one it runs without asking it did. The policy's verdict
// must be the CLI's, except where the case says why it is stricter.
func TestMatcherAgreesWithTheCLI(t *testing.T) {
	for _, env := range []string{"CLAUDE_BIN", "CLAUDE_BIN_197"} {
		t.Run(env, func(t *testing.T) {
			bin := relaytest.CLIFromEnv(t, env)
			asked := cliAsks(t, bin)
			match, _ := json.Marshal(fidelityRules)
			pol := mustParse(t, fmt.Sprintf("rules:\n  - name: cli\n    match: %s\n    allow: {}\n", match))
			for i, c := range fidelityCases {
				if (c.cli != c.policy) != (c.stricterBecause != "") || (c.policy && !c.cli) {
					t.Fatalf("%q: a case where the policy differs says why, and it only ever asks more", c.cmd)
				}
				cliAllowed := !asked[fmt.Sprintf("toolu_%d", i)]
				input, _ := json.Marshal(map[string]string{"command": c.cmd})
				v := pol.Evaluate(Request{Tool: "Bash", Input: input, Cwd: "/w", Resolved: map[string]string{"/w": "/w"}}, time.Now())
				ours := v.Action == Allow
				if cliAllowed != c.cli || ours != c.policy {
					t.Errorf("%q: the CLI allows it: %v (want %v); the policy: %v (want %v)", c.cmd, cliAllowed, c.cli, ours, c.policy)
				}
				if ours && !cliAllowed {
					t.Errorf("%q: the policy allows what the CLI does not", c.cmd)
				}
			}
		})
	}
}

// cliAsks runs every fidelity case through one CLI session and returns
// the tool use ids the CLI asked about.
func cliAsks(t *testing.T, bin string) map[string]bool {
	var steps []relaytest.Step
	for i, c := range fidelityCases {
		steps = append(steps, relaytest.ToolUse(fmt.Sprintf("toolu_%d", i), "Bash", map[string]any{"command": c.cmd, "description": "case"}))
	}
	srv := relaytest.NewServer(t, append(steps, relaytest.Text("done"))...)
	settings, _ := json.Marshal(map[string]any{"permissions": map[string]any{"allow": fidelityRules}})
	// The arguments a worker passes (relay.ProcessOptions.Args, which this
	// package may not import), with the rules as the operator's settings.
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", "default",
		"--setting-sources", "", "--strict-mcp-config", "--disable-slash-commands", "--settings", string(settings)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = t.TempDir(), srv.Env(t), 5*time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer stdin.Close()
	write := func(v any) {
		b, _ := json.Marshal(v)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	write(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "run them"}, "parent_tool_use_id": nil, "session_id": "default"})
	asked := map[string]bool{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		var l struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype   string `json:"subtype"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch {
		case l.Type == "control_request" && l.Request.Subtype == "can_use_tool":
			asked[l.Request.ToolUseID] = true
			write(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": l.RequestID,
				"response": map[string]any{"behavior": "deny", "message": "no"}}})
		case l.Type == "result":
			for i := range fidelityCases {
				if _, ok := srv.ToolResult(fmt.Sprintf("toolu_%d", i)); !ok {
					t.Fatalf("case %d (%q) never reached a tool result", i, fidelityCases[i].cmd)
				}
			}
			return asked
		}
	}
	t.Fatalf("the CLI ended without a result: %v", sc.Err())
	return nil
}
