package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/slackgate/slackgate/store"
)

// Message types on the CLI's stdout (and stdin) that the host understands.
// Anything else is kept as raw JSON (Message.Raw) and passed over.
const (
	TypeControlRequest  = "control_request"
	TypeControlResponse = "control_response"
	TypeControlCancel   = "control_cancel_request"
	TypeKeepAlive       = "keep_alive"
	TypeAssistant       = "assistant"
	TypeUser            = "user"
	TypeResult          = "result"
	TypeSystem          = "system"
)

// Control request subtypes the host sends or answers.
const (
	SubtypeCanUseTool        = "can_use_tool"
	SubtypeElicitation       = "elicitation"
	SubtypeInterrupt         = "interrupt"
	SubtypeSetPermissionMode = "set_permission_mode"
	SubtypeSuccess           = "success"
	SubtypeError             = "error"
)

// ErrMalformed marks a stdout line that is not a JSON object with a "type",
// or a known message whose fields have the wrong shape.
var ErrMalformed = errors.New("malformed line")

// Message is one decoded line. Type and Subtype are always set when the line
// is a JSON object; exactly one typed field is set for a known type, and Raw
// always holds the line as read, so unknown types and subtypes are kept.
type Message struct {
	Type    string
	Subtype string
	Raw     json.RawMessage

	ControlRequest  *ControlRequest
	ControlResponse *ControlResponse
	ControlCancel   *ControlCancel
	Assistant       *AssistantMessage
	User            *UserMessage
	Result          *ResultMessage
	System          *SystemMessage
}

// Known reports whether the line decoded into one of the typed fields.
func (m Message) Known() bool {
	return m.ControlRequest != nil || m.ControlResponse != nil || m.ControlCancel != nil ||
		m.Assistant != nil || m.User != nil || m.Result != nil || m.System != nil || m.Type == TypeKeepAlive
}

// ControlRequest is a request from the CLI to the host. Request holds the
// inner object verbatim; CanUseTool is decoded from it for can_use_tool.
type ControlRequest struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`

	Subtype     string       `json:"-"`
	CanUseTool  *CanUseTool  `json:"-"`
	Elicitation *Elicitation `json:"-"`
}

// Elicitation is the body of an elicitation request (store.Elicitation).
// Raw is the request as the CLI sent it, which slackgate keeps as the
// store request's input.
type Elicitation struct {
	store.Elicitation
	Raw json.RawMessage `json:"-"`
}

// CanUseTool is the body of a can_use_tool request: Claude asks whether it
// may run a tool (AskUserQuestion and ExitPlanMode arrive this way too).
type CanUseTool struct {
	Subtype string `json:"subtype"`
	store.ToolCall
	// Suggestions are the permission_suggestions as the CLI sent them:
	// NewRequest keeps those of a known shape, so one of another shape
	// costs the person an option, not the request.
	Suggestions []json.RawMessage `json:"permission_suggestions,omitempty"`
}

// ControlResponse answers a control request; the CLI sends them for the
// host's requests (interrupt, set_permission_mode), the host for can_use_tool.
type ControlResponse struct {
	Type     string               `json:"type"`
	Response ControlResponseInner `json:"response"`
}

// ControlResponseInner is the payload of a control_response. Response may
// be absent on success (interrupt); Error is set when Subtype is "error".
type ControlResponseInner struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// ControlCancel withdraws a pending request; it has no reply.
type ControlCancel struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

// ContentBlock is one block of an assistant or user message: text, tool_use
// or tool_result. Content of a tool_result is a string or a list of blocks.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// AssistantMessage is one content block of a model reply (the CLI prints one
// line per block, all with the same message id).
type AssistantMessage struct {
	Type            string     `json:"type"`
	Message         APIMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id,omitempty"`
	UUID            string     `json:"uuid,omitempty"`
	// Error is set on the line the CLI writes itself (model "<synthetic>")
	// when an API call failed: authentication_failed, billing_error,
	// rate_limit, … Its text is the CLI's message ("Not logged in ·
	// Please run /login"), which the turn's result repeats.
	Error string `json:"error,omitempty"`
}

// APIMessage is the Messages-API message inside assistant and user lines.
// Content is a plain string for typed user prompts and a block list
// otherwise; ContentText/Blocks give the two views.
type APIMessage struct {
	ID         string          `json:"id,omitempty"`
	Role       string          `json:"role"`
	Model      string          `json:"model,omitempty"`
	Content    json.RawMessage `json:"content"`
	StopReason *string         `json:"stop_reason,omitempty"`
}

// Blocks decodes Content as a list of blocks; a string becomes one text block.
func (m APIMessage) Blocks() ([]ContentBlock, error) {
	c := bytes.TrimSpace(m.Content)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return nil, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, err
		}
		return []ContentBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []ContentBlock
	if err := json.Unmarshal(c, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// UserMessage is a user line: tool results, interruption markers, replays,
// and (on stdin) the host's prompts.
type UserMessage struct {
	Type            string     `json:"type"`
	Message         APIMessage `json:"message"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	SessionID       string     `json:"session_id"`
	UUID            string     `json:"uuid,omitempty"`
	IsReplay        bool       `json:"isReplay,omitempty"`
}

// ResultMessage ends a turn.
type ResultMessage struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	IsError        bool     `json:"is_error"`
	DurationMS     int64    `json:"duration_ms"`
	DurationAPIMS  int64    `json:"duration_api_ms,omitempty"`
	NumTurns       int      `json:"num_turns"`
	Result         string   `json:"result,omitempty"`
	StopReason     *string  `json:"stop_reason,omitempty"`
	SessionID      string   `json:"session_id"`
	TotalCostUSD   float64  `json:"total_cost_usd"`
	TerminalReason string   `json:"terminal_reason,omitempty"`
	Errors         []string `json:"errors,omitempty"`
	UUID           string   `json:"uuid,omitempty"`
}

// SystemMessage is a system line (init at the start of every turn, status,
// permission_denied, ...); the fields decoded are the ones the host uses.
type SystemMessage struct {
	Type              string `json:"type"`
	Subtype           string `json:"subtype"`
	SessionID         string `json:"session_id,omitempty"`
	CWD               string `json:"cwd,omitempty"`
	Model             string `json:"model,omitempty"`
	PermissionMode    string `json:"permissionMode,omitempty"`
	ClaudeCodeVersion string `json:"claude_code_version,omitempty"`
	ToolName          string `json:"tool_name,omitempty"`
	ToolUseID         string `json:"tool_use_id,omitempty"`
	Message           string `json:"message,omitempty"`
	UUID              string `json:"uuid,omitempty"`
}

// envelope is the part every line shares.
type envelope struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
}

// DecodeLine decodes one line of CLI output. It fails (ErrMalformed) only
// when the line is not a JSON object with a string "type", or when a known
// message has fields of the wrong shape; unknown types and subtypes decode
// to a Message with only Type, Subtype and Raw set.
func DecodeLine(line []byte) (Message, error) {
	line = bytes.TrimSpace(line)
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return Message{}, fmt.Errorf("relay: decode: %w: %w", ErrMalformed, err)
	}
	if len(line) == 0 || line[0] != '{' || env.Type == "" {
		return Message{}, fmt.Errorf("relay: decode: %w: no \"type\"", ErrMalformed)
	}
	m := Message{Type: env.Type, Subtype: env.Subtype, Raw: json.RawMessage(bytes.Clone(line))}
	var err error
	switch env.Type {
	case TypeControlRequest:
		var cr ControlRequest
		if err = json.Unmarshal(line, &cr); err == nil {
			err = cr.decodeInner()
			m.Subtype = cr.Subtype
			m.ControlRequest = &cr
		}
	case TypeControlResponse:
		var cr ControlResponse
		if err = json.Unmarshal(line, &cr); err == nil {
			m.Subtype = cr.Response.Subtype
			m.ControlResponse = &cr
		}
	case TypeControlCancel:
		var cc ControlCancel
		if err = json.Unmarshal(line, &cc); err == nil {
			m.ControlCancel = &cc
		}
	case TypeAssistant:
		var a AssistantMessage
		if err = json.Unmarshal(line, &a); err == nil {
			m.Assistant = &a
		}
	case TypeUser:
		var u UserMessage
		if err = json.Unmarshal(line, &u); err == nil {
			m.User = &u
		}
	case TypeResult:
		var r ResultMessage
		if err = json.Unmarshal(line, &r); err == nil {
			m.Result = &r
		}
	case TypeSystem:
		var s SystemMessage
		if err = json.Unmarshal(line, &s); err == nil {
			m.System = &s
		}
	}
	if err != nil {
		return m, fmt.Errorf("relay: decode %s: %w: %w", env.Type, ErrMalformed, err)
	}
	return m, nil
}

// decodeInner reads the subtype of the inner request and, for can_use_tool,
// its typed body.
func (cr *ControlRequest) decodeInner() error {
	var inner envelope
	if err := json.Unmarshal(cr.Request, &inner); err != nil {
		return err
	}
	cr.Subtype = inner.Subtype
	if inner.Subtype == SubtypeElicitation {
		var e Elicitation
		if err := json.Unmarshal(cr.Request, &e); err != nil {
			return err
		}
		e.Raw = cr.Request
		cr.Elicitation = &e
		return nil
	}
	if inner.Subtype != SubtypeCanUseTool {
		return nil
	}
	var c CanUseTool
	if err := json.Unmarshal(cr.Request, &c); err != nil {
		return err
	}
	cr.CanUseTool = &c
	return nil
}

// EncodeMessage writes a decoded message back as one JSON line (without the
// newline): the typed struct when the type is known, the raw object
// otherwise. Typed structs keep only the fields the host uses.
func EncodeMessage(m Message) ([]byte, error) {
	var v any
	switch {
	case m.ControlRequest != nil:
		v = m.ControlRequest
	case m.ControlResponse != nil:
		v = m.ControlResponse
	case m.ControlCancel != nil:
		v = m.ControlCancel
	case m.Assistant != nil:
		v = m.Assistant
	case m.User != nil:
		v = m.User
	case m.Result != nil:
		v = m.Result
	case m.System != nil:
		v = m.System
	default:
		v = m.Raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("relay: encode %s: %w", m.Type, err)
	}
	return b, nil
}

// PermissionResult is the host's answer to can_use_tool, in the shape the
// CLI validates: allow ALWAYS carries updatedInput (an object), deny ALWAYS
// carries a non-empty message. Build it with Allow or Deny.
type PermissionResult struct {
	Behavior           string            `json:"behavior"`
	UpdatedInput       json.RawMessage   `json:"updatedInput,omitempty"`
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            string            `json:"message,omitempty"`
	Interrupt          bool              `json:"interrupt,omitempty"`
}

// Allow builds an allow result; input must be the tool input to run with
// (the original one unless a person edited it).
func Allow(input json.RawMessage, permissions ...json.RawMessage) PermissionResult {
	return PermissionResult{Behavior: "allow", UpdatedInput: input, UpdatedPermissions: permissions}
}

// Deny builds a deny result; interrupt also ends Claude's turn.
func Deny(message string, interrupt bool) PermissionResult {
	return PermissionResult{Behavior: "deny", Message: message, Interrupt: interrupt}
}

// Validate reports a result the CLI would reject as a ZodError deny.
func (p PermissionResult) Validate() error {
	switch p.Behavior {
	case "allow":
		if !isJSONObject(p.UpdatedInput) {
			return fmt.Errorf("relay: allow without an updatedInput object: %w", ErrInvalidResult)
		}
		if p.Message != "" || p.Interrupt {
			return fmt.Errorf("relay: allow with deny fields: %w", ErrInvalidResult)
		}
	case "deny":
		if p.Message == "" {
			return fmt.Errorf("relay: deny without a message: %w", ErrInvalidResult)
		}
		if p.UpdatedInput != nil || p.UpdatedPermissions != nil {
			return fmt.Errorf("relay: deny with allow fields: %w", ErrInvalidResult)
		}
	default:
		return fmt.Errorf("relay: behavior %q: %w", p.Behavior, ErrInvalidResult)
	}
	return nil
}

// ElicitResult is the host's answer to an elicitation, the MCP
// ElicitResult: accept (with the form's content, an object, in form
// mode), decline, or cancel (dismissed without a choice).
type ElicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// Validate reports a result the MCP server could not take.
func (e ElicitResult) Validate() error {
	switch e.Action {
	case "accept":
		if len(e.Content) > 0 && !isJSONObject(e.Content) {
			return fmt.Errorf("relay: elicitation content that is not an object: %w", ErrInvalidResult)
		}
	case "decline", "cancel":
		if len(e.Content) > 0 {
			return fmt.Errorf("relay: %s with content: %w", e.Action, ErrInvalidResult)
		}
	default:
		return fmt.Errorf("relay: elicitation action %q: %w", e.Action, ErrInvalidResult)
	}
	return nil
}

// ErrInvalidResult: a permission result the CLI would not accept.
var ErrInvalidResult = errors.New("invalid permission result")

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

// Lines the host writes to the CLI's stdin.
type (
	userInput struct {
		Type            string       `json:"type"`
		Message         userInputMsg `json:"message"`
		ParentToolUseID *string      `json:"parent_tool_use_id"`
		SessionID       string       `json:"session_id"`
	}
	userInputMsg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	controlRequestOut struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   any    `json:"request"`
	}
	subtypeOnly struct {
		Subtype string `json:"subtype"`
	}
	setModeRequest struct {
		Subtype string `json:"subtype"`
		Mode    string `json:"mode"`
	}
	controlResponseOut struct {
		Type     string           `json:"type"`
		Response controlReplyBody `json:"response"`
	}
	controlReplyBody struct {
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
		Response  any    `json:"response,omitempty"`
		Error     string `json:"error,omitempty"`
	}
)

// Encoder writes host→CLI lines. Every line is json.Marshal of a typed
// struct plus '\n': the CLI exits on the first invalid JSON line, so nothing
// hand-built ever reaches it. Safe for concurrent use.
type Encoder struct {
	mu  sync.Mutex
	out io.Writer
}

// NewEncoder writes to w (the CLI's stdin).
func NewEncoder(w io.Writer) *Encoder { return &Encoder{out: w} }

func (e *Encoder) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("relay: encode: %w", err)
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.out.Write(b); err != nil {
		return fmt.Errorf("relay: write: %w", err)
	}
	return nil
}

// WriteUser sends a user prompt.
func (e *Encoder) WriteUser(text string) error {
	return e.write(userInput{
		Type:      TypeUser,
		Message:   userInputMsg{Role: "user", Content: text},
		SessionID: "default", // ignored by the CLI
	})
}

// WriteInterrupt asks the CLI to abort the current turn.
func (e *Encoder) WriteInterrupt(requestID string) error {
	return e.write(controlRequestOut{Type: TypeControlRequest, RequestID: requestID, Request: subtypeOnly{SubtypeInterrupt}})
}

// WriteSetPermissionMode changes the permission mode of the live session.
func (e *Encoder) WriteSetPermissionMode(requestID, mode string) error {
	return e.write(controlRequestOut{Type: TypeControlRequest, RequestID: requestID,
		Request: setModeRequest{Subtype: SubtypeSetPermissionMode, Mode: mode}})
}

// WritePermission answers a can_use_tool request. It refuses results the
// CLI would reject (see PermissionResult.Validate).
func (e *Encoder) WritePermission(requestID string, p PermissionResult) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return e.write(controlResponseOut{Type: TypeControlResponse,
		Response: controlReplyBody{Subtype: SubtypeSuccess, RequestID: requestID, Response: p}})
}

// WriteElicitResult answers an elicitation request.
func (e *Encoder) WriteElicitResult(requestID string, r ElicitResult) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return e.write(controlResponseOut{Type: TypeControlResponse,
		Response: controlReplyBody{Subtype: SubtypeSuccess, RequestID: requestID, Response: r}})
}

// WriteError answers a control request with an error.
func (e *Encoder) WriteError(requestID, msg string) error {
	return e.write(controlResponseOut{Type: TypeControlResponse,
		Response: controlReplyBody{Subtype: SubtypeError, RequestID: requestID, Error: msg}})
}
