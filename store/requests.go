package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Kind says what a pending request asks of a person.
type Kind string

const (
	KindTool     Kind = "tool"     // a tool call to approve or deny
	KindQuestion Kind = "question" // AskUserQuestion: options to pick, or free text
	KindPlan     Kind = "plan"     // ExitPlanMode: a plan to approve or send back
	// KindElicitation: an MCP server asks the person for input (a form
	// built from a JSON schema, or a URL to visit). Its Input holds the
	// elicitation as Claude Code sent it (Elicitation); an allow
	// carries the submitted form in Decision.Content.
	KindElicitation Kind = "elicitation"
)

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindTool, KindQuestion, KindPlan, KindElicitation:
		return true
	}
	return false
}

// Request is one control_request from Claude Code waiting for a person:
// everything they need to decide, and, once settled, the Decision.
type Request struct {
	ID           string `json:"id"`             // slackgate's id, unique across sessions
	SessionID    string `json:"session_id"`     // the slackgate/Claude session it belongs to
	CLIRequestID string `json:"cli_request_id"` // request_id on the wire, echoed in control_response
	Kind         Kind   `json:"kind"`

	// ToolCall is the call the request asks about, as its asker put it
	// (an elicitation's Input is the elicitation itself); Suggestions are
	// its permission_suggestions of a known shape, which "Approve and
	// allow…" offers back.
	ToolCall
	Suggestions []Suggestion `json:"permission_suggestions,omitempty"`

	// Home and Resolved are what only the machine Claude runs on knows,
	// for the team policy: the home of the user Claude runs as, and the
	// real path (symlinks resolved) of each path the input names and of
	// the working directory and home. The stdio worker fills them, and
	// `slackgate hook` and `slackgate mcp` send them through the approval
	// API. A decision's signature covers both (DecisionPayload), so a
	// store writer who changes them makes every decision of the request
	// fail the check of the side that filled them.
	Home     string            `json:"home,omitempty"`
	Resolved map[string]string `json:"resolved,omitempty"`
	// TurnBy are the Slack users whose messages the turn that made this
	// request answers (the stdio worker fills it): under a not_self rule
	// none of them approves it. A decision's signature covers it, like
	// Home and Resolved.
	TurnBy []string `json:"turn_by,omitempty"`

	CreatedAt time.Time `json:"created_at"`
	Deadline  time.Time `json:"deadline,omitzero"` // zero: waits forever

	// Card is where the bot posted this request in Slack (empty until posted).
	Card MessageRef `json:"card,omitzero"`
	// CardState is who posts the card and how its outcome was shown (see
	// Cards); empty on a new request.
	CardState CardState `json:"card_state,omitzero"`
	// Reach is where else it was announced, and the reminder and
	// escalation taken (see Reaches); empty on a new request.
	Reach Reach `json:"reach,omitzero"`

	// Approvals are the approvals so far of a request that needs several
	// (Approvals.Approve), oldest first; the first one's Input is what
	// they approve.
	Approvals []Approval `json:"approvals,omitempty"`

	// Decision is nil while the request is pending and set exactly once.
	Decision *Decision `json:"decision,omitempty"`
}

// Pending reports whether nobody has settled the request yet.
func (r Request) Pending() bool { return r.Decision == nil }

// Validate checks r against the vocabulary: it has an id, a session and a
// known kind, and its Decision, if any, is valid. A zero CreatedAt is
// allowed: the store fills it in (see Requests.CreateRequest).
func (r Request) Validate() error {
	switch {
	case r.ID == "":
		return invalid("request without an id")
	case r.SessionID == "":
		return invalid("request %s without a session", r.ID)
	case !r.Kind.Valid():
		return invalid("request %s of unknown kind %q", r.ID, r.Kind)
	}
	if r.Decision != nil {
		if err := r.Decision.Validate(); err != nil {
			return fmt.Errorf("request %s: %w", r.ID, err)
		}
	}
	return nil
}

// ValidateNew checks r as CreateRequest takes it: valid and still pending.
func (r Request) ValidateNew() error {
	if err := r.Validate(); err != nil {
		return err
	}
	if !r.Pending() {
		return invalid("request %s is decided already; a new request must be pending", r.ID)
	}
	if !r.Reach.IsZero() {
		return invalid("request %s reached people already; a new request has no copies or reach steps", r.ID)
	}
	if !r.CardState.IsZero() {
		return invalid("request %s has a card's state already; a new request's card has taken no step", r.ID)
	}
	return nil
}

// CanRefuse reports whether Refuse may replace a request's decision: it is
// settled, and not refused already.
func (r Request) CanRefuse() error {
	switch {
	case r.Decision == nil:
		return invalid("request %s is pending; only a settled request's decision can be refused", r.ID)
	case r.Decision.Outcome == OutcomeRefused:
		return invalid("request %s was refused already", r.ID)
	}
	return nil
}

// ToolCall is what a permission prompt says about the tool call it asks
// about, in the words of Claude Code's can_use_tool request: the one shape
// the wire (relay.CanUseTool), the request record (Request) and the
// approval API's request embed. Its permission suggestions are left to
// each: the wire keeps them raw, as the CLI sent them, and a record keeps
// the typed ones of a known shape.
type ToolCall struct {
	ToolName    string          `json:"tool_name"`
	DisplayName string          `json:"display_name,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	Description string          `json:"description,omitempty"`
	// BlockedPath, DecisionReason and DecisionReasonType say why Claude
	// Code asks (a path outside the working directories, a rule, …).
	BlockedPath        string `json:"blocked_path,omitempty"`
	DecisionReason     string `json:"decision_reason,omitempty"`
	DecisionReasonType string `json:"decision_reason_type,omitempty"`
	ToolUseID          string `json:"tool_use_id,omitempty"`
	AgentID            string `json:"agent_id,omitempty"` // the subagent that calls the tool
	// Newer CLIs also send these (absent from 2.1.197): a title for the
	// prompt, the MCP server of an MCP tool, and a request not to offer
	// "Always allow".
	Title               string `json:"title,omitempty"`
	MCPServer           string `json:"mcp_server,omitempty"`
	SuppressAlwaysAllow bool   `json:"suppress_always_allow_rule,omitempty"`
}

// KindOf says what a tool's permission request asks of a person. An MCP
// tool named like AskUserQuestion is a question only when its input is
// exactly the question schema (IsQuestionForm): a form must not hide
// arguments the tool also receives.
func KindOf(toolName string, input json.RawMessage) Kind {
	switch {
	case IsQuestionForm(toolName, input):
		return KindQuestion
	case toolName == "ExitPlanMode":
		return KindPlan
	}
	return KindTool
}

// Elicitation is an MCP server's request for input as Claude Code sends
// it (the body of an elicitation control request), which a
// KindElicitation request keeps as its Input: a form built from
// RequestedSchema, or, in Mode "url", a visit to URL. Seen from CLI 2.1.330
// (and 2.1.197), for a server's elicitation/create:
//
//	{"subtype":"elicitation","mcp_server_name":"probe","message":"Which region?","mode":"form",
//	 "requested_schema":{"type":"object","properties":{…},"required":[…]},"property_order":["region","count"]}
//	{"subtype":"elicitation","mcp_server_name":"probe","message":"Log in please","mode":"url","url":"https://…"}
type Elicitation struct {
	Subtype         string          `json:"subtype"`
	MCPServerName   string          `json:"mcp_server_name"`
	Message         string          `json:"message"`
	Mode            string          `json:"mode,omitempty"`
	URL             string          `json:"url,omitempty"`
	ElicitationID   string          `json:"elicitation_id,omitempty"`
	RequestedSchema json.RawMessage `json:"requested_schema,omitempty"`
	PropertyOrder   []string        `json:"property_order,omitempty"`
	Title           string          `json:"title,omitempty"`
	DisplayName     string          `json:"display_name,omitempty"`
	Description     string          `json:"description,omitempty"`
}

// URLMode reports whether the elicitation asks for a visit to a URL
// rather than a form.
func (e Elicitation) URLMode() bool { return e.Mode == "url" }

// Requests is the life of a pending control request.
type Requests interface {
	// CreateRequest stores a new pending request, appends an audit entry and
	// publishes EventRequestCreated, atomically. ErrExists if the id is taken;
	// ErrInvalid if r fails ValidateNew (no id, session or known kind, or
	// already decided). A zero CreatedAt becomes the time of the call.
	CreateRequest(ctx context.Context, r Request) error
	// GetRequest returns ErrNotFound for an unknown id.
	GetRequest(ctx context.Context, id string) (Request, error)
	// ListPending returns the undecided requests of a session, oldest first;
	// sessionID "" lists every session's.
	ListPending(ctx context.Context, sessionID string) ([]Request, error)
	// CountPending returns how many requests ListPending(ctx, sessionID)
	// would return, without reading or decoding them: the count a status
	// line shows, read on every card and every outcome.
	CountPending(ctx context.Context, sessionID string) (int, error)
	// Decide settles a request exactly once: it stores d, appends an audit
	// entry and publishes EventRequestSettled, atomically, and returns the
	// settled request. If the request was settled before it returns that
	// request (with the first Decision) and ErrAlreadyDecided. ErrNotFound for
	// an unknown id, ErrInvalid when d fails Validate (an unknown outcome, a
	// zero d.At, fields of another outcome).
	Decide(ctx context.Context, id string, d Decision) (Request, error)
	// Refuse replaces the decision of a settled request with d, a refusal
	// (OutcomeRefused: the worker could not verify the decision, and
	// Claude was told no), appends a RefusedAudit entry naming the
	// decider the replaced decision claimed, and publishes
	// EventRequestSettled again, atomically; it returns the request as
	// refused. ErrNotFound for an unknown id; ErrInvalid when d fails
	// ValidateRefusal or the request is pending or refused already.
	Refuse(ctx context.Context, id string, d Decision) (Request, error)
	// WaitDecision blocks until the request is settled and returns its
	// Decision, or returns ctx.Err(). ErrNotFound for an unknown id.
	WaitDecision(ctx context.Context, id string) (Decision, error)
	// SetCard records where the request's card was posted and reports
	// whether the request was still pending then, atomically with the
	// write: a request settled before its card was recorded had nobody to
	// show its outcome on that card (the settled event found no card), so
	// the caller shows it. ErrNotFound.
	SetCard(ctx context.Context, id string, card MessageRef) (pending bool, err error)
}

// CreatedAudit is the audit entry CreateRequest appends for r.
func CreatedAudit(r Request) AuditEntry {
	a := AuditEntry{At: r.CreatedAt, Action: AuditCreated, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName}
	a.Input, a.InputSHA256 = AuditInput(r, r.Input)
	return a
}

// SettledAudit is the audit entry Decide appends when d settles r: an
// answered_from_memory entry naming the answer when d came from one. It
// records the input that ran (a person's edit of it) and everyone who
// approved.
func SettledAudit(r Request, d Decision) AuditEntry {
	a := AuditEntry{
		At: d.At, Action: AuditSettled, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, By: d.By, ByName: d.ByName, Message: d.Message, Rule: d.Rule, PolicyDigest: d.PolicyDigest,
		GrantID: d.Grant,
	}
	input := r.Input
	if d.Outcome == OutcomeAllow && len(d.UpdatedInput) > 0 {
		input = d.UpdatedInput
	}
	a.Input, a.InputSHA256 = AuditInput(r, input)
	a.Approvers = AuditApprovers(cmpSlice(d.Approvals, r.Approvals))
	if d.Remembered != "" {
		a.Action, a.AnswerID = AuditAnsweredFromMemory, d.Remembered
	}
	return a
}

// cmpSlice returns a unless it is empty, else b.
func cmpSlice[T any](a, b []T) []T {
	if len(a) > 0 {
		return a
	}
	return b
}

// RefusedAudit is the audit entry Refuse appends when d, a refusal,
// replaces claimed, the decision that had settled r: it keeps the decider
// claimed names, so the log shows whose approval was forged or altered.
func RefusedAudit(r Request, claimed, d Decision) AuditEntry {
	a := AuditEntry{
		At: d.At, Action: AuditRefused, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, By: claimed.By, ByName: claimed.ByName, Message: d.Message,
	}
	a.Input, a.InputSHA256 = AuditInput(r, r.Input)
	return a
}

// CreatedEvent is the event CreateRequest publishes for r.
func CreatedEvent(r Request) Event {
	return Event{Type: EventRequestCreated, SessionID: r.SessionID, RequestID: r.ID, At: r.CreatedAt}
}

// SettledEvent is the event Decide publishes when d settles r.
func SettledEvent(r Request, d Decision) Event {
	return Event{Type: EventRequestSettled, SessionID: r.SessionID, RequestID: r.ID, At: d.At}
}
