package relaytest

import (
	"context"
	"encoding/json"
	"fmt"
)

// Step is one scripted answer to one main /v1/messages call: an assistant
// reply (Reply, Text, ToolUse, Func, WritePlan, Hold) or an API error
// (APIError).
type Step interface {
	answer(ctx context.Context, req Request) answer
}

// answer is what the server sends for one call: a reply, or an error
// status with the API's error body when status is non-zero.
type answer struct {
	reply   Reply
	status  int
	errType string
	errMsg  string
}

// Reply is the content of one assistant message, in order. Its stop reason
// is tool_use when it holds a tool_use block and end_turn otherwise. Write
// several tool uses in one reply (concurrent permission requests) as
//
//	relaytest.Reply{relaytest.ToolUseBlock(...), relaytest.ToolUseBlock(...)}
type Reply []Block

func (r Reply) answer(context.Context, Request) answer { return answer{reply: r} }

// StopReason is what the fake puts in message_delta for this reply.
func (r Reply) StopReason() string {
	for _, b := range r {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// Block is one content block of a scripted reply: text or tool_use.
type Block struct {
	Type  string // "text" or "tool_use"
	Text  string // text blocks
	ID    string // tool_use blocks: the tool_use id ("toolu_...")
	Name  string // tool_use blocks: the tool name
	Input any    // tool_use blocks: marshalled to JSON; nil means {}
}

// TextBlock is a text content block.
func TextBlock(text string) Block { return Block{Type: "text", Text: text} }

// ToolUseBlock is a tool_use content block. input is marshalled with
// encoding/json (a map, a struct or a json.RawMessage); it must encode to a
// JSON object.
func ToolUseBlock(id, name string, input any) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

// Text is a step where the model answers text and ends its turn.
func Text(text string) Reply { return Reply{TextBlock(text)} }

// ToolUse is a step where the model calls one tool (and waits for its result).
func ToolUse(id, name string, input any) Reply {
	return Reply{ToolUseBlock(id, name, input)}
}

// Func is a step computed from the request it answers, for tests that need
// to look at what came in (a tool result, the user's text) before deciding.
// fn runs on the server's goroutine; it must not block for long and must
// not call t.FailNow.
func Func(fn func(req Request) Reply) Step { return funcStep(fn) }

type funcStep func(Request) Reply

func (f funcStep) answer(_ context.Context, req Request) answer { return answer{reply: f(req)} }

// APIError is a step where the API fails the call with an HTTP status and
// the API's error body ({"type":"error","error":{"type":errType,...}}).
// The CLI retries: 2.1.330 repeats a 400 five times at once, and both
// versions retry 429 and 5xx with backoff (seconds each). Every retry of the
// same conversation (same number of messages) gets the same error without
// consuming a step, so one APIError fails the whole turn: with 400
// "invalid_request_error" the turn ends quickly with a result that has
// is_error true and the message in its text.
func APIError(status int, errType, message string) Step {
	return answer{status: status, errType: errType, errMsg: message}
}

func (a answer) answer(context.Context, Request) answer { return a }

// Hold is a step that keeps the call open, before any byte of the answer,
// until release is closed (then it answers then), the CLI gives up on the
// call (an interrupt aborts the stream), or the server closes. It lets a
// test act while the model is "thinking": interrupt a turn mid-request,
// or queue a follow-up. WaitRequests tells when the held call arrived.
func Hold(release <-chan struct{}, then Reply) Step {
	return holdStep{release: release, then: then}
}

type holdStep struct {
	release <-chan struct{}
	then    Reply
}

func (h holdStep) answer(ctx context.Context, _ Request) answer {
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	return answer{reply: h.then}
}

// inputJSON encodes a tool_use input, defaulting to {}.
func (b Block) inputJSON() (json.RawMessage, error) {
	if b.Input == nil {
		return json.RawMessage(`{}`), nil
	}
	raw, err := json.Marshal(b.Input)
	if err != nil {
		return nil, fmt.Errorf("relaytest: tool_use %s input: %w", b.ID, err)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("relaytest: tool_use %s input is not a JSON object: %s", b.ID, raw)
	}
	return raw, nil
}

// WritePlan is a plan-mode step: the model writes plan to the plan file
// the CLI named in its plan-mode instructions (a Write tool use with id
// toolUseID, which plan mode allows without asking). Follow it with
// ToolUse(id, "ExitPlanMode", map[string]any{}): the CLI then sends the
// host can_use_tool with input {"plan": plan, "planFilePath": path}.
// With no plan file in the request the step writes to "PLAN.md", which
// plan mode refuses, so a test notices.
func WritePlan(toolUseID, plan string) Step {
	return Func(func(req Request) Reply {
		path := req.PlanFile()
		if path == "" {
			path = "PLAN.md"
		}
		return ToolUse(toolUseID, "Write", map[string]any{"file_path": path, "content": plan})
	})
}

// validate checks what writeStream cannot report once it has started.
func (r Reply) validate() error {
	for _, b := range r {
		switch b.Type {
		case "text":
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return fmt.Errorf("relaytest: tool_use block needs an id and a name: %+v", b)
			}
			if _, err := b.inputJSON(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("relaytest: unknown block type %q", b.Type)
		}
	}
	return nil
}
