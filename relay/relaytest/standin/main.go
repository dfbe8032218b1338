// Command standin is a stand-in for the Claude Code CLI in load runs: it
// speaks the stream-json protocol on stdin and stdout the way `claude -p`
// does, but asks for a fixed number of approvals per turn instead of
// running a model, so hundreds of sessions fit on a small machine. The real
// CLI stays the fidelity check; this one only has to be shaped like it.
//
// Every turn: system/init, then for each of N requests an assistant
// tool_use line and a can_use_tool control_request for a Bash command,
// then, once the host answers, a tool_result (an error when denied); after
// the last, an assistant text line and a success result. N comes from
// CLAUDE_CODE_STANDIN_REQUESTS (default 2): the worker lets CLAUDE_CODE_*
// variables through to the CLI. The command names the prompt, the step and
// the time the request was written (unix nanoseconds), so a benchmark can
// match each card to its request and time it. With
// CLAUDE_CODE_STANDIN_TIMES set to a directory, each process also appends
// one line per answered request to a file of its own there, "ASKED
// ANSWERED" in unix nanoseconds (when it wrote the control_request and
// when it read the response), so a load run can time the way back too.
// Like the CLI it answers --version and `auth status --json` (an API key
// in the environment is a login). Nothing is executed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
}

// session is one stand-in process: what it was started with and where it
// writes.
type session struct {
	id       string
	model    string
	mode     string
	requests int
	out      *json.Encoder
	in       <-chan relay.Message
	asked    int      // requests written so far, for unique ids
	times    *os.File // CLAUDE_CODE_STANDIN_TIMES' file, nil when unset
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 1 && args[0] == "--version" {
		_, err := fmt.Fprintln(stdout, "0.0.0 (Claude Code stand-in)")
		return err
	}
	if len(args) >= 3 && strings.Join(args[len(args)-3:], " ") == "auth status --json" {
		return authStatus(stdout)
	}
	s, err := parseFlags(args)
	if err != nil {
		return err
	}
	s.out = json.NewEncoder(stdout)
	s.out.SetEscapeHTML(false)
	if dir := os.Getenv("CLAUDE_CODE_STANDIN_TIMES"); dir != "" {
		f, err := os.CreateTemp(dir, "times-*")
		if err != nil {
			return fmt.Errorf("CLAUDE_CODE_STANDIN_TIMES: %w", err)
		}
		defer f.Close()
		s.times = f
	}
	in := make(chan relay.Message)
	go readLines(stdin, in)
	s.in = in
	for m := range in {
		if m.Type == relay.TypeControlRequest {
			if err := s.answerHost(m.ControlRequest); err != nil {
				return err
			}
			continue
		}
		if m.User == nil {
			continue
		}
		if err := s.turn(promptOf(m.User)); err != nil {
			return err
		}
	}
	return nil
}

// parseFlags reads the few flags that shape the output (--session-id,
// --resume, --model, --permission-mode) and takes every other one as given:
// the formats, the prompt tool and whatever CLAUDE_ARGS adds.
func parseFlags(args []string) (*session, error) {
	s := &session{model: "standin", mode: "default", requests: 2}
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(args[i], "=")
		if !inline && i+1 < len(args) {
			value = args[i+1]
		}
		target := map[string]*string{"--session-id": &s.id, "--resume": &s.id, "--model": &s.model, "--permission-mode": &s.mode}[name]
		if target == nil {
			continue
		}
		*target = value
		if !inline {
			i++
		}
	}
	if v := os.Getenv("CLAUDE_CODE_STANDIN_REQUESTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("CLAUDE_CODE_STANDIN_REQUESTS=%q: want a count", v)
		}
		s.requests = n
	}
	if s.id == "" {
		s.id = uuid.NewString()
	}
	return s, nil
}

// readLines decodes stdin until EOF; a line that does not decode ends the
// process like the real CLI, which exits on invalid input.
func readLines(r io.Reader, out chan<- relay.Message) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		m, err := relay.DecodeLine(sc.Bytes())
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error parsing streaming input line:", err)
			os.Exit(1)
		}
		out <- m
	}
}

func promptOf(u *relay.UserMessage) string {
	blocks, _ := u.Message.Blocks()
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// turn answers one prompt: the requests one after another, like Bash
// commands that are not concurrency-safe, then the result.
func (s *session) turn(prompt string) error {
	start := time.Now()
	cwd, _ := os.Getwd()
	if err := s.emit(map[string]any{"type": "system", "subtype": "init", "session_id": s.id, "cwd": cwd,
		"model": s.model, "permissionMode": s.mode, "claude_code_version": "standin", "tools": []string{"Bash"},
		"uuid": uuid.NewString()}); err != nil {
		return err
	}
	denied := 0
	for step := range s.requests {
		ok, err := s.ask(prompt, step)
		if err != nil {
			return err
		}
		if !ok {
			denied++
		}
	}
	text := fmt.Sprintf("finished %s (%d denied)", prompt, denied)
	if err := s.emit(s.assistant(relay.ContentBlock{Type: "text", Text: text})); err != nil {
		return err
	}
	stop := "end_turn"
	return s.emit(relay.ResultMessage{Type: relay.TypeResult, Subtype: relay.SubtypeSuccess,
		DurationMS: time.Since(start).Milliseconds(), NumTurns: s.requests + 1, Result: text,
		StopReason: &stop, SessionID: s.id, TerminalReason: "completed", UUID: uuid.NewString()})
}

// ask writes one tool_use and its can_use_tool request, waits for the
// host's answer and writes the tool's result. It reports whether the tool
// was allowed.
func (s *session) ask(prompt string, step int) (bool, error) {
	s.asked++
	toolID := fmt.Sprintf("toolu_standin_%d", s.asked)
	reqID := fmt.Sprintf("standin-%s-%d", s.id, s.asked)
	asked := time.Now().UnixNano()
	input, err := json.Marshal(map[string]string{
		"command":     fmt.Sprintf("echo '[%s] step %d' # asked-at %d", prompt, step, asked),
		"description": fmt.Sprintf("step %d of %s", step, prompt),
	})
	if err != nil {
		return false, fmt.Errorf("input: %w", err)
	}
	if err := s.emit(s.assistant(relay.ContentBlock{Type: "tool_use", ID: toolID, Name: "Bash", Input: input})); err != nil {
		return false, err
	}
	body := relay.CanUseTool{Subtype: relay.SubtypeCanUseTool, ToolCall: store.ToolCall{
		ToolName: "Bash", DisplayName: "Bash", Input: input,
		Description: fmt.Sprintf("step %d", step), DecisionReason: "This command requires approval",
		DecisionReasonType: "other", ToolUseID: toolID,
	}}
	inner, err := json.Marshal(body)
	if err != nil {
		return false, fmt.Errorf("request: %w", err)
	}
	if err := s.emit(relay.ControlRequest{Type: relay.TypeControlRequest, RequestID: reqID, Request: inner}); err != nil {
		return false, err
	}
	allowed, content := s.await(reqID)
	if err := s.answered(asked, time.Now().UnixNano()); err != nil {
		return false, err
	}
	res, err := json.Marshal(content)
	if err != nil {
		return false, fmt.Errorf("result: %w", err)
	}
	blocks, err := json.Marshal([]relay.ContentBlock{{Type: "tool_result", ToolUseID: toolID, Content: res, IsError: !allowed}})
	if err != nil {
		return false, fmt.Errorf("result: %w", err)
	}
	return allowed, s.emit(relay.UserMessage{Type: relay.TypeUser, SessionID: s.id, UUID: uuid.NewString(),
		Message: relay.APIMessage{Role: "user", Content: blocks}})
}

// answered records when the answer to the request written at asked was
// read, when CLAUDE_CODE_STANDIN_TIMES asks for it.
func (s *session) answered(asked, at int64) error {
	if s.times == nil {
		return nil
	}
	if _, err := fmt.Fprintf(s.times, "%d %d\n", asked, at); err != nil {
		return fmt.Errorf("CLAUDE_CODE_STANDIN_TIMES: %w", err)
	}
	return nil
}

// await reads stdin until the answer to reqID arrives and returns whether
// it allowed the tool and what the model would be told. Other lines are
// handled as the CLI would: host requests answered, prompts folded into
// the turn (dropped here), stray answers ignored. Stdin closing denies.
func (s *session) await(reqID string) (bool, string) {
	for m := range s.in {
		switch {
		case m.ControlRequest != nil:
			if err := s.answerHost(m.ControlRequest); err != nil {
				return false, err.Error()
			}
		case m.ControlResponse != nil && m.ControlResponse.Response.RequestID == reqID:
			r := m.ControlResponse.Response
			if r.Subtype != relay.SubtypeSuccess {
				return false, "Tool permission request failed: Error: " + r.Error
			}
			var p relay.PermissionResult
			if err := json.Unmarshal(r.Response, &p); err != nil || p.Validate() != nil {
				return false, fmt.Sprintf("Tool permission request failed: invalid result %s", r.Response)
			}
			if p.Behavior == "allow" {
				return true, "(Bash completed with no output)"
			}
			return false, p.Message
		}
	}
	return false, "Tool permission request failed: Error: Tool permission stream closed before response received"
}

// answerHost replies to the host's own control requests: the two slackgate
// sends succeed (an interrupt here only lets the current step finish),
// anything else is refused like the CLI refuses unknown subtypes.
func (s *session) answerHost(cr *relay.ControlRequest) error {
	reply := map[string]any{"subtype": relay.SubtypeSuccess, "request_id": cr.RequestID}
	switch cr.Subtype {
	case relay.SubtypeInterrupt:
	case relay.SubtypeSetPermissionMode:
		var m struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(cr.Request, &m)
		s.mode = m.Mode
		reply["response"] = map[string]string{"mode": m.Mode}
	default:
		reply = map[string]any{"subtype": relay.SubtypeError, "request_id": cr.RequestID,
			"error": "Unsupported control request subtype: " + cr.Subtype}
	}
	return s.emit(map[string]any{"type": relay.TypeControlResponse, "response": reply})
}

// assistant is one content block of a model reply, as the CLI prints them.
func (s *session) assistant(b relay.ContentBlock) relay.AssistantMessage {
	msgID := "msg_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	content, _ := json.Marshal([]relay.ContentBlock{b})
	return relay.AssistantMessage{Type: relay.TypeAssistant, SessionID: s.id, UUID: uuid.NewString(),
		Message: relay.APIMessage{ID: msgID, Role: "assistant", Model: s.model, Content: content}}
}

// emit writes one stdout line; Encode ends it with the newline.
func (s *session) emit(v any) error {
	if err := s.out.Encode(v); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// authStatus answers `auth status --json` as the CLI does for an API key
// in the environment (the worker asks before it starts), and fails as it
// does without one.
func authStatus(stdout io.Writer) error {
	if os.Getenv("ANTHROPIC_API_KEY") == "" {
		_, _ = fmt.Fprintln(stdout, `{"loggedIn":false,"authMethod":"none","apiProvider":"firstParty"}`)
		return fmt.Errorf("not logged in")
	}
	_, err := fmt.Fprintln(stdout, `{"loggedIn":true,"authMethod":"api_key","apiProvider":"firstParty","apiKeySource":"ANTHROPIC_API_KEY"}`)
	return err
}
