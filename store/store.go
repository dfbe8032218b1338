package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Sentinel errors. Backends wrap them with context; callers test with errors.Is.
var (
	// ErrNotFound: no request, session or input with that id.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyDecided: the request was settled before (by a person, a
	// deadline, a cancellation or the end of its process). The Request
	// returned alongside carries the first, winning Decision.
	ErrAlreadyDecided = errors.New("already decided")
	// ErrExists: Create was called with an id that is already taken.
	ErrExists = errors.New("already exists")
	// ErrNotOwner: the worker does not own the session it tried to act on.
	ErrNotOwner = errors.New("session not owned by this worker")
	// ErrInvalid: the argument breaks the vocabulary's rules (empty id,
	// unknown outcome, a decision without a time).
	ErrInvalid = errors.New("invalid argument")
	// ErrClosed: the store was closed; blocked calls return it too.
	ErrClosed = errors.New("store closed")
)

// MaxDeliveries bounds how often Consume hands out one event whose handler
// keeps failing, so one poisoned event cannot stall a consumer forever.
const MaxDeliveries = 5

// DefaultRedeliveryDelay is the base of RedeliveryDelay that both backends
// use unless configured otherwise.
const DefaultRedeliveryDelay = time.Second

// RedeliveryDelay is how long Consume waits, after the handler returned an
// error for an event's n-th delivery, before delivering it again: base after
// the first failure, doubling with each one after it (base, 2·base, 4·base,
// ...), at most 32·base. A failing handler usually waits on something
// outside (Slack down or rate limiting), which a quick retry only loads more.
func RedeliveryDelay(base time.Duration, n int) time.Duration {
	return base << min(max(n-1, 0), 5)
}

// Kind says what a pending request asks of a person.
type Kind string

const (
	KindTool     Kind = "tool"     // a tool call to approve or deny
	KindQuestion Kind = "question" // AskUserQuestion: options to pick, or free text
	KindPlan     Kind = "plan"     // ExitPlanMode: a plan to approve or send back
	// KindElicitation: an MCP server asks the person for input (a form
	// built from a JSON schema, or a URL to visit). Its Input holds the
	// elicitation as Claude Code sent it (ElicitationInput); an allow
	// carries the submitted form in Decision.Content.
	KindElicitation Kind = "elicitation"
)

// Outcome is how a request was settled.
type Outcome string

const (
	OutcomeAllow     Outcome = "allow"     // a person approved or answered
	OutcomeDeny      Outcome = "deny"      // a person denied, skipped or sent the plan back
	OutcomeExpired   Outcome = "expired"   // nobody answered before the deadline; Claude gets a deny
	OutcomeCancelled Outcome = "cancelled" // Claude withdrew it (control_cancel_request, interrupt); nothing is sent
	OutcomeEnded     Outcome = "ended"     // the Claude process ended while it waited; nothing is sent
	// OutcomeRefused replaces a decision the worker could not verify (not
	// signed by a bot's key, or altered since): Claude was told no.
	OutcomeRefused Outcome = "refused"
)

// Valid reports whether o is one of the known outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeAllow, OutcomeDeny, OutcomeExpired, OutcomeCancelled, OutcomeEnded, OutcomeRefused:
		return true
	}
	return false
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool {
	switch k {
	case KindTool, KindQuestion, KindPlan, KindElicitation:
		return true
	}
	return false
}

// invalid returns an error wrapping ErrInvalid that says what is wrong.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Request is one control_request from Claude Code waiting for a person:
// everything they need to decide, and, once settled, the Decision.
type Request struct {
	ID           string `json:"id"`             // slackgate's id, unique across sessions
	SessionID    string `json:"session_id"`     // the slackgate/Claude session it belongs to
	CLIRequestID string `json:"cli_request_id"` // request_id on the wire, echoed in control_response
	Kind         Kind   `json:"kind"`

	ToolName           string          `json:"tool_name"`
	DisplayName        string          `json:"display_name,omitempty"`
	Input              json.RawMessage `json:"input,omitempty"`
	Description        string          `json:"description,omitempty"`
	Suggestions        []Suggestion    `json:"permission_suggestions,omitempty"`
	BlockedPath        string          `json:"blocked_path,omitempty"`
	DecisionReason     string          `json:"decision_reason,omitempty"`
	DecisionReasonType string          `json:"decision_reason_type,omitempty"`
	ToolUseID          string          `json:"tool_use_id,omitempty"`
	AgentID            string          `json:"agent_id,omitempty"`
	// Newer CLIs also send these (absent from 2.1.197): a title for the
	// prompt, the MCP server of an MCP tool, and a request not to offer
	// "Always allow".
	Title               string `json:"title,omitempty"`
	MCPServer           string `json:"mcp_server,omitempty"`
	SuppressAlwaysAllow bool   `json:"suppress_always_allow_rule,omitempty"`

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

	CreatedAt time.Time `json:"created_at"`
	Deadline  time.Time `json:"deadline,omitzero"` // zero: waits forever

	// Card is where the bot posted this request in Slack (empty until posted).
	Card MessageRef `json:"card,omitzero"`
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
	return nil
}

// Suggestion is one of Claude Code's permission_suggestions (a PermissionUpdate
// on the wire), with every field the protocol defines, so an accepted one
// goes back in updatedPermissions exactly as it came.
type Suggestion struct {
	Type        string           `json:"type"` // addRules, replaceRules, removeRules, setMode, addDirectories, removeDirectories
	Rules       []SuggestionRule `json:"rules,omitempty"`
	Behavior    string           `json:"behavior,omitempty"`
	Mode        string           `json:"mode,omitempty"`
	Directories []string         `json:"directories,omitempty"`
	Destination string           `json:"destination,omitempty"`
}

// SuggestionRule is one rule of an addRules-style suggestion.
type SuggestionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// Decision is how a request was settled, by whom and when.
type Decision struct {
	Outcome Outcome   `json:"outcome"`
	By      string    `json:"by,omitempty"`      // Slack user id; empty when the system settled it
	ByName  string    `json:"by_name,omitempty"` // display name at the time, for the audit trail
	At      time.Time `json:"at"`

	// Message: the deny reason (sent to Claude), or why the request expired,
	// was cancelled or ended (shown on the card).
	Message string `json:"message,omitempty"`
	// Skipped: the person skipped the question rather than deny it (deny
	// only). Message still holds what Claude is told; the card says
	// "Skipped" from this field, never from the message's wording.
	Skipped bool `json:"skipped,omitempty"`
	// Interrupt: deny and stop the turn (deny only).
	Interrupt bool `json:"interrupt,omitempty"`
	// UpdatedInput replaces the tool input when a person edited it (allow
	// only); nil means the original input.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Permissions are the suggestions the person accepted ("Always allow"),
	// sent back as updatedPermissions (allow only).
	Permissions []Suggestion `json:"permissions,omitempty"`
	// Answers maps each AskUserQuestion question text to the chosen label,
	// several labels joined by ", ", or free text (allow only).
	Answers map[string]string `json:"answers,omitempty"`
	// Content is an elicitation's submitted form: a JSON object whose
	// values are typed by the requested schema (allow only).
	Content json.RawMessage `json:"content,omitempty"`
	// Signature is the Ed25519 signature of the bot that took the person's
	// answer (see SignDecision); a worker acts on an allow or deny only
	// when it verifies. Decisions the worker makes itself carry none.
	Signature []byte `json:"signature,omitempty"`
	// Remembered is the id of the remembered answer the bot answered a
	// question with (allow only); By and ByName then name the approver
	// who remembered it. Empty for a person's own answer.
	Remembered string `json:"remembered,omitempty"`
	// Rule names the policy rule that decided (an allow or deny without
	// a card), and PolicyDigest the SHA-256 of the policy file it is in;
	// both empty for a person's decision.
	Rule         string `json:"rule,omitempty"`
	PolicyDigest string `json:"policy_digest,omitempty"`
	// Grant is the id of the grant that allowed the request without a
	// card (allow only); By and ByName then name who added it.
	Grant string `json:"grant,omitempty"`
	// Approvals name every person who approved a request that needed
	// several, in order (By and ByName are the last of them); only By,
	// ByName and At are set. Allow only.
	Approvals []Approval `json:"approvals,omitempty"`
}

// Validate checks d as Decide takes it: a known outcome, a time, and the
// fields that belong to another outcome left empty.
func (d Decision) Validate() error {
	if !d.Outcome.Valid() {
		return invalid("unknown outcome %q", d.Outcome)
	}
	if d.At.IsZero() {
		return invalid("%s decision without a time", d.Outcome)
	}
	if d.Outcome != OutcomeDeny && (d.Skipped || d.Interrupt) {
		return invalid("%s decision marked skipped or interrupting; only a deny can be", d.Outcome)
	}
	if d.Outcome != OutcomeAllow && (len(d.UpdatedInput) > 0 || len(d.Permissions) > 0 || len(d.Answers) > 0 || len(d.Content) > 0) {
		return invalid("%s decision with an edited input, permissions, answers or content; only an allow has them", d.Outcome)
	}
	if (len(d.Approvals) > 0 || d.Grant != "") && d.Outcome != OutcomeAllow {
		return invalid("%s decision with approvals or a grant; only an allow has them", d.Outcome)
	}
	if d.Remembered != "" && (d.Outcome != OutcomeAllow || len(d.Answers) == 0) {
		return invalid("%s decision from a remembered answer without answers; only an allow with answers can be", d.Outcome)
	}
	return nil
}

// MessageRef points at one Slack message.
type MessageRef struct {
	Channel string `json:"channel,omitempty"`
	TS      string `json:"ts,omitempty"`
}

// IsZero reports whether the reference points nowhere.
func (m MessageRef) IsZero() bool { return m.Channel == "" && m.TS == "" }

// SessionState is where a session is in its life.
type SessionState string

const (
	SessionQueued  SessionState = "queued"  // input waiting, no worker has it yet
	SessionRunning SessionState = "running" // a worker runs its claude process
	SessionIdle    SessionState = "idle"    // no process; a new input resumes it
	SessionFailed  SessionState = "failed"  // the last process could not start or crashed
)

// Session ties a Slack thread to a Claude Code session. Its ID is the Claude
// session id (a UUID), so the same id is passed as --session-id the first
// time and --resume afterwards.
type Session struct {
	ID             string       `json:"id"`
	Thread         MessageRef   `json:"thread"` // channel + thread_ts where the conversation lives
	WorkDir        string       `json:"workdir"`
	StartedBy      string       `json:"started_by"` // Slack user id
	PermissionMode string       `json:"permission_mode,omitempty"`
	Model          string       `json:"model,omitempty"`
	State          SessionState `json:"state"`
	// Started is true once a claude process has run with this id, so the
	// next process must --resume it rather than create it.
	Started   bool      `json:"started"`
	Worker    string    `json:"worker,omitempty"` // owner while running
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Status is the bot's status message in the thread (kept current).
	Status MessageRef `json:"status,omitzero"`
	// LiveMode is the permission mode a person switched the running
	// claude process to from Slack (ControlSetMode); "" while it runs in
	// PermissionMode. The worker sets it once the CLI took the switch and
	// clears it when the process ends: the next one starts in
	// PermissionMode again. Shown on the status line; not signed (it
	// decides nothing: the signed input that asked for it did).
	LiveMode string `json:"live_mode,omitempty"`
	// API marks a session that reached slackgate through the approval
	// API: its Claude Code runs wherever its client runs, and no worker
	// ever runs it.
	API bool `json:"api,omitempty"`
	// Signature is the Ed25519 signature of the bot that created the
	// session (see SignSession); a worker runs a session only when it
	// verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Valid reports whether st is one of the known states.
func (st SessionState) Valid() bool {
	switch st {
	case SessionQueued, SessionRunning, SessionIdle, SessionFailed:
		return true
	}
	return false
}

// Validate checks s: it has an id, and a state, when set, is a known one. A
// zero CreatedAt is allowed: the store fills it in (see
// Sessions.CreateSession).
func (s Session) Validate() error {
	if s.ID == "" {
		return invalid("session without an id")
	}
	if s.State != "" && !s.State.Valid() {
		return invalid("session %s in unknown state %q", s.ID, s.State)
	}
	return nil
}

// Input is a user message queued for a session: the first prompt or a
// follow-up from the thread, or a control input. A control input (Control
// set, Text empty) asks the worker to act on the session's process rather
// than send Claude a message; it travels the same queue as messages so it
// reaches the worker that owns the session, after what was queued before it.
type Input struct {
	ID        string    `json:"id"` // set by the store when empty; a bot sets it before signing
	SessionID string    `json:"session_id"`
	Text      string    `json:"text"`
	User      string    `json:"user,omitempty"` // Slack user id
	At        time.Time `json:"at"`
	// Control names the control input (ControlInterrupt, ControlSetMode);
	// "" for a message.
	Control string `json:"control,omitempty"`
	// Mode is the permission mode a ControlSetMode input asks for.
	Mode string `json:"mode,omitempty"`
	// Signature is the Ed25519 signature of the bot that queued the input
	// (see SignInput); a worker delivers an input only when it verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Control inputs.
const (
	// ControlInterrupt aborts the session's running turn: Claude withdraws
	// its pending requests (they end OutcomeCancelled) and the turn ends
	// with an error result; the process stays for the next message. A
	// session with no live process has no turn to stop: the worker only
	// logs it, and starts no process for it.
	ControlInterrupt = "interrupt"
	// ControlSetMode switches the running claude process to the
	// permission mode Input.Mode names (the CLI's set_permission_mode);
	// the process after it starts in Session.PermissionMode again. A
	// session with no live process has nothing to switch: the worker
	// tells the thread so (EventRefused).
	ControlSetMode = "set_permission_mode"
)

// Modes are the permission modes a ControlSetMode input may ask for.
var Modes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// Validate checks in: it names its session, and a control input is a known
// one and carries no text. An empty ID and a zero At are allowed: the store
// fills them in (see Queue.Enqueue).
func (in Input) Validate() error {
	switch {
	case in.SessionID == "":
		return invalid("input without a session")
	case in.Control != "" && in.Control != ControlInterrupt && in.Control != ControlSetMode:
		return invalid("input for session %s with unknown control %q", in.SessionID, in.Control)
	case in.Control != "" && in.Text != "":
		return invalid("control input %q for session %s with text; a control input has none", in.Control, in.SessionID)
	case in.Control == ControlSetMode && !slices.Contains(Modes, in.Mode):
		return invalid("set_permission_mode input for session %s with unknown mode %q", in.SessionID, in.Mode)
	case in.Control != ControlSetMode && in.Mode != "":
		return invalid("input for session %s with a mode; only set_permission_mode has one", in.SessionID)
	}
	return nil
}

// EventType names what happened in a session.
type EventType string

const (
	EventRequestCreated EventType = "request_created" // published by CreateRequest
	EventRequestSettled EventType = "request_settled" // published by Decide
	EventSessionStarted EventType = "session_started" // a claude process started
	EventAssistantText  EventType = "assistant_text"  // model text
	EventToolUse        EventType = "tool_use"        // the model called a tool
	EventToolResult     EventType = "tool_result"     // a tool returned (short)
	EventResult         EventType = "result"          // a turn ended
	EventExit           EventType = "exit"            // the claude process exited
	EventError          EventType = "error"           // the worker could not do something (start failed, ...)
	EventInterrupted    EventType = "interrupted"     // a person stopped the running turn; Text is their Slack user id
	// EventModeChanged: the running claude process switched permission
	// mode (Text) on a person's request (By), or went back to the
	// session's own mode when it ended (By empty).
	EventModeChanged EventType = "mode_changed"
	// EventRefused: the worker refused to run the session or to deliver
	// one of its inputs, because the record did not verify or names what
	// the worker may not run, or could not act on a control input (a mode
	// switch with no process running, or one the CLI refused); Text says
	// what and why, in the worker's words, never the record's.
	EventRefused EventType = "refused"
)

// Valid reports whether t is one of the known event types.
func (t EventType) Valid() bool {
	switch t {
	case EventRequestCreated, EventRequestSettled, EventSessionStarted, EventAssistantText, EventToolUse,
		EventToolResult, EventResult, EventExit, EventError, EventInterrupted, EventRefused, EventModeChanged:
		return true
	}
	return false
}

// Event is one thing the Slack side should show or act on. Each event type
// fills the fields that apply to it.
type Event struct {
	ID        string    `json:"id,omitempty"` // set by the store
	Type      EventType `json:"type"`
	SessionID string    `json:"session_id"`
	RequestID string    `json:"request_id,omitempty"` // request_* events
	At        time.Time `json:"at"`

	Text    string          `json:"text,omitempty"`     // assistant text, tool result excerpt, error text
	By      string          `json:"by,omitempty"`       // mode_changed: who asked
	Tool    string          `json:"tool,omitempty"`     // tool_use, tool_result
	Input   json.RawMessage `json:"input,omitempty"`    // tool_use input
	IsError bool            `json:"is_error,omitempty"` // tool_result, result

	Result *Result `json:"result,omitempty"` // result
	Exit   *Exit   `json:"exit,omitempty"`   // exit
}

// Validate checks e as Publish takes it: a known type, a session, and an
// Exit, when present, that is valid. A zero At is allowed: the store fills it
// in (see Bus.Publish).
func (e Event) Validate() error {
	switch {
	case !e.Type.Valid():
		return invalid("event of unknown type %q", e.Type)
	case e.SessionID == "":
		return invalid("%s event without a session", e.Type)
	}
	if e.Exit != nil {
		if err := e.Exit.Validate(); err != nil {
			return fmt.Errorf("%s event of session %s: %w", e.Type, e.SessionID, err)
		}
	}
	return nil
}

// Result summarises one turn (a stream-json "result" line).
type Result struct {
	Subtype    string   `json:"subtype"` // success, error_during_execution, error_max_turns, ...
	IsError    bool     `json:"is_error"`
	Turns      int      `json:"num_turns"`
	DurationMS int64    `json:"duration_ms"`
	CostUSD    float64  `json:"total_cost_usd"`
	Text       string   `json:"result,omitempty"`
	Errors     []string `json:"errors,omitempty"`
}

// Exit describes how a claude process ended.
type Exit struct {
	Code int `json:"code"`
	// Cause is why it ended, for code to act on; Reason says it in words,
	// for people ("signal: killed", "exit status 1", "idle", ...).
	Cause  ExitCause `json:"cause,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Stderr []string  `json:"stderr,omitempty"` // the last lines of stderr
}

// Failed reports whether the Slack side should show the exit as a failure:
// the process crashed. An end slackgate asked for (idle, evicted, stopped,
// shutdown) is not one, whatever the code its signal left. An Exit without a
// Cause (written before causes existed) counts as failed when its code is
// not 0.
func (e Exit) Failed() bool {
	if e.Cause == "" {
		return e.Code != 0
	}
	return e.Cause == ExitCrashed
}

// Validate checks that a Cause, when set, is a known one.
func (e Exit) Validate() error {
	if e.Cause != "" && !e.Cause.Valid() {
		return invalid("exit with unknown cause %q", e.Cause)
	}
	return nil
}

// ExitCause says why a claude process ended.
type ExitCause string

const (
	// ExitFinished: the process exited on its own without failing: its
	// stdin was closed and it finished, or it reported a turn that ended in
	// an error result with its exit code (1), which the result already
	// told.
	ExitFinished ExitCause = "finished"
	// ExitIdle: the worker stopped it after it sat idle for the idle
	// timeout; the session's next input resumes it.
	ExitIdle ExitCause = "idle"
	// ExitEvicted: the worker stopped it, idle, to make room for another
	// session; the session's next input resumes it.
	ExitEvicted ExitCause = "evicted"
	// ExitStopped: stopped on request (a person or an operator asked).
	ExitStopped ExitCause = "stopped"
	// ExitShutdown: the worker is shutting down; the session resumes on a
	// worker later.
	ExitShutdown ExitCause = "shutdown"
	// ExitCrashed: it died on its own with a failure (a non-zero code or a
	// signal slackgate did not send): the one cause shown as a failure.
	ExitCrashed ExitCause = "crashed"
)

// Valid reports whether c is one of the known causes.
func (c ExitCause) Valid() bool {
	switch c {
	case ExitFinished, ExitIdle, ExitEvicted, ExitStopped, ExitShutdown, ExitCrashed:
		return true
	}
	return false
}

// AuditAction is what an audit entry records.
type AuditAction string

const (
	AuditCreated AuditAction = "created" // a request was created, pending
	AuditSettled AuditAction = "settled" // a request was settled; the entry carries the Decision's outcome, who and why
	// AuditRefused: the worker refused the decision that settled a request
	// (see Requests.Refuse); the entry names the decider the refused
	// decision claimed, and why it was refused.
	AuditRefused AuditAction = "refused"
	// AuditAnsweredFromMemory: a question was settled with a remembered
	// answer (AnswerID); By names who remembered it.
	AuditAnsweredFromMemory AuditAction = "answered_from_memory"
	// AuditAnswerRemembered: an approver remembered an answer (AnswerID)
	// while answering a request; Message is the scope's key.
	AuditAnswerRemembered AuditAction = "answer_remembered"
	// AuditAnswerForgotten: someone (By) forgot a remembered answer; it
	// names no request.
	AuditAnswerForgotten AuditAction = "answer_forgotten"
	// AuditToolRan: a client of the approval API (`slackgate hook` on
	// PostToolUse) reports that a tool ran in a Claude session slackgate
	// did not start; the entry names the session, the tool, a short
	// summary of its input (Message), its result and who reported it
	// (ReportedBy), and has no request. It records a claim, not something
	// slackgate saw.
	AuditToolRan AuditAction = "tool_ran"
	// AuditSessionRefused: a worker refused to run a session whose record
	// it could not verify or may not run (see relay); the entry names the
	// session, the starter the record claims (By) and why (Message), and
	// has no request.
	AuditSessionRefused AuditAction = "session_refused"
	// AuditInputRefused: a worker dropped a queued input it could not
	// verify; the entry names the session, the user the input claims (By)
	// and, in Message, the input and why. It has no request.
	AuditInputRefused AuditAction = "input_refused"
	// AuditAnswerRefused: a bot did not answer a question (RequestID) with
	// a remembered answer (AnswerID) it could not verify; By names who the
	// answer claims remembered it, Message why.
	AuditAnswerRefused AuditAction = "answer_refused"
	// AuditReminded and AuditEscalated: a bot reminded the people who may
	// decide a pending request, or escalated it to more (By lists them,
	// comma-separated), after the store recorded the step (MarkReach).
	AuditReminded  AuditAction = "reminded"
	AuditEscalated AuditAction = "escalated"
	// AuditModeChanged: a worker switched a session's running claude
	// process to the permission mode in Message on the request of By (from
	// Slack); it has no request.
	AuditModeChanged AuditAction = "mode_changed"
	// AuditGrantAdded: an approver (By) added a grant (GrantID) while
	// approving a request; Message says its rules, scope and expiry.
	AuditGrantAdded AuditAction = "grant_added"
	// AuditGrantForgotten: someone (By) forgot a grant; it names no request.
	AuditGrantForgotten AuditAction = "grant_forgotten"
)

// Valid reports whether a is one of the known actions.
func (a AuditAction) Valid() bool {
	switch a {
	case AuditCreated, AuditSettled, AuditRefused, AuditAnsweredFromMemory, AuditAnswerRemembered, AuditAnswerForgotten, AuditToolRan,
		AuditSessionRefused, AuditInputRefused, AuditAnswerRefused, AuditModeChanged, AuditGrantAdded, AuditGrantForgotten,
		AuditReminded, AuditEscalated:
		return true
	}
	return false
}

// appendable reports whether an entry of action a is appended on its own
// (AppendAudit), because no store transition writes it.
func (a AuditAction) appendable() bool {
	switch a {
	case AuditToolRan, AuditSessionRefused, AuditInputRefused, AuditAnswerRefused, AuditModeChanged, AuditReminded, AuditEscalated:
		return true
	}
	return false
}

// settles reports whether an entry of action a records a settlement, and
// so carries an outcome.
func (a AuditAction) settles() bool {
	return a == AuditSettled || a == AuditRefused || a == AuditAnsweredFromMemory
}

// Tool results an AuditToolRan entry records.
const (
	ToolSucceeded = "success"
	ToolFailed    = "error"
)

// AuditEntry is one line of the append-only audit log: a request created or
// settled, an answer remembered or forgotten, a tool that ran.
type AuditEntry struct {
	ID        string      `json:"id,omitempty"` // set by the store, increasing
	At        time.Time   `json:"at"`
	Action    AuditAction `json:"action"`
	RequestID string      `json:"request_id"`
	SessionID string      `json:"session_id"`
	Kind      Kind        `json:"kind"`
	Tool      string      `json:"tool"`
	Outcome   Outcome     `json:"outcome,omitempty"`
	By        string      `json:"by,omitempty"`
	ByName    string      `json:"by_name,omitempty"`
	Message   string      `json:"message,omitempty"`
	// AnswerID names the remembered answer an answer_* entry is about.
	AnswerID string `json:"answer_id,omitempty"`
	// GrantID names the grant a grant_* entry is about, or that settled
	// the request of a settled entry.
	GrantID string `json:"grant_id,omitempty"`
	// Rule and PolicyDigest name the policy rule that settled the request
	// without a card, and the SHA-256 of the policy file it is in.
	Rule         string `json:"rule,omitempty"`
	PolicyDigest string `json:"policy_digest,omitempty"`
	// ToolUseID and Result are set on AuditToolRan entries: the tool call's
	// id and ToolSucceeded or ToolFailed.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Result    string `json:"result,omitempty"`
	// ReportedBy names the client whose claim an AuditToolRan entry
	// records ("api:" and the approval API token's name); required there.
	ReportedBy string `json:"reported_by,omitempty"`
	// Channel and ThreadTS are the Slack thread of the entry's session,
	// filled in by the store from the session when the caller left them
	// empty (an export filters and links by them).
	Channel  string `json:"channel,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	// Seq, Prev and Hash link the entry into the audit chain (see the
	// package doc): set by the store as it appends, whatever the caller
	// put there. Seq counts from 1; Prev is the Hash of the entry before
	// (64 zeros for the first), both hex SHA-256. Entries appended before
	// the chain existed have none.
	Seq  uint64 `json:"seq,omitempty"`
	Prev string `json:"prev,omitempty"`
	Hash string `json:"hash,omitempty"`
}

// Validate checks a: a known action, a time, the request and session it is
// about (the remembered answer, for answer_remembered, answer_forgotten and
// answer_refused), and, for a settlement, a known outcome; an AuditToolRan
// entry has a session, a tool, who reported it and a known result instead
// of a request, and a session_refused or input_refused entry a session and
// why.
func (a AuditEntry) Validate() error {
	switch {
	case !a.Action.Valid():
		return invalid("audit entry with unknown action %q", a.Action)
	case a.At.IsZero():
		return invalid("audit entry %s of %s without a time", a.Action, a.RequestID)
	}
	switch a.Action {
	case AuditToolRan:
		if a.SessionID == "" || a.Tool == "" || a.ReportedBy == "" || (a.Result != ToolSucceeded && a.Result != ToolFailed) {
			return invalid("tool_ran audit entry without a session, a tool, who reported it or a result (%q)", a.Result)
		}
		return nil
	case AuditSessionRefused, AuditInputRefused, AuditModeChanged:
		if a.SessionID == "" || a.Message == "" {
			return invalid("%s audit entry without a session or why", a.Action)
		}
		return nil
	case AuditGrantAdded, AuditGrantForgotten:
		if a.GrantID == "" {
			return invalid("audit entry %s without a grant", a.Action)
		}
		return nil
	case AuditAnswerRemembered, AuditAnswerForgotten, AuditAnswerRefused:
		if a.AnswerID == "" {
			return invalid("audit entry %s without a remembered answer", a.Action)
		}
		if a.Action == AuditAnswerRefused && a.Message == "" {
			return invalid("answer_refused audit entry of %s without why", a.AnswerID)
		}
		return nil
	}
	switch {
	case a.RequestID == "" || a.SessionID == "":
		return invalid("audit entry %s without a request or session", a.Action)
	case a.Action.settles() && !a.Outcome.Valid():
		return invalid("audit entry %s of %s with unknown outcome %q", a.Action, a.RequestID, a.Outcome)
	}
	return nil
}

// ValidateAppend checks a as AppendAudit takes it (after its At is set):
// valid, and of an action no transition writes.
func (a AuditEntry) ValidateAppend() error {
	if !a.Action.appendable() {
		return invalid("audit entry %s cannot be appended on its own; its transition writes it", a.Action)
	}
	return a.Validate()
}

// CreatedAudit is the audit entry CreateRequest appends for r.
func CreatedAudit(r Request) AuditEntry {
	return AuditEntry{At: r.CreatedAt, Action: AuditCreated, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName}
}

// SettledAudit is the audit entry Decide appends when d settles r: an
// answered_from_memory entry naming the answer when d came from one.
func SettledAudit(r Request, d Decision) AuditEntry {
	a := AuditEntry{
		At: d.At, Action: AuditSettled, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, By: d.By, ByName: d.ByName, Message: d.Message, Rule: d.Rule, PolicyDigest: d.PolicyDigest,
		GrantID: d.Grant,
	}
	if d.Remembered != "" {
		a.Action, a.AnswerID = AuditAnsweredFromMemory, d.Remembered
	}
	return a
}

// RefusedAudit is the audit entry Refuse appends when d, a refusal,
// replaces claimed, the decision that had settled r: it keeps the decider
// claimed names, so the log shows whose approval was forged or altered.
func RefusedAudit(r Request, claimed, d Decision) AuditEntry {
	return AuditEntry{
		At: d.At, Action: AuditRefused, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, By: claimed.By, ByName: claimed.ByName, Message: d.Message,
	}
}

// ValidateRefusal checks d as Refuse takes it: a valid decision with the
// refused outcome.
func (d Decision) ValidateRefusal() error {
	if err := d.Validate(); err != nil {
		return err
	}
	if d.Outcome != OutcomeRefused {
		return invalid("a refusal with outcome %q", d.Outcome)
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

// CreatedEvent is the event CreateRequest publishes for r.
func CreatedEvent(r Request) Event {
	return Event{Type: EventRequestCreated, SessionID: r.SessionID, RequestID: r.ID, At: r.CreatedAt}
}

// SettledEvent is the event Decide publishes when d settles r.
func SettledEvent(r Request, d Decision) Event {
	return Event{Type: EventRequestSettled, SessionID: r.SessionID, RequestID: r.ID, At: d.At}
}

// Store is the durable record and the bus. Every method is safe for
// concurrent use, by several goroutines and, for networked backends, by
// several processes.
//
// Every method that stores a value checks it with its Validate first and
// returns the error, which wraps ErrInvalid, before touching anything. A
// zero creation time (Request.CreatedAt, Session.CreatedAt, Input.At,
// Event.At) is not an error: the store sets it to the time of the call, so
// a caller without a clock of its own still gets an ordered record.
//
// # Retention
//
// What the store records expires, so a store that runs for years stays the
// size of what is live. Backends take a retention (RETENTION,
// DefaultRetention) and an audit retention (AUDIT_RETENTION,
// DefaultAuditRetention); 0 keeps records forever.
//
//   - A settled request expires the retention after it was settled (by the
//     store's clock at Decide, not Decision.At). A pending request never
//     expires.
//   - A session expires, with its thread index entry and its empty inbox,
//     the retention after the last write that left it at rest: its state
//     idle or failed (SessionState.AtRest), no worker owning it, no input
//     queued and no request pending. Any write that changes one of those
//     (UpdateSession to queued or running, Enqueue, a new pending request)
//     holds it again, and the next write that leaves it at rest starts the
//     retention over. A session created at rest counts from its creation.
//     Its transcript (see Transcripts) goes with it.
//   - A dedup key expires at its ttl.
//   - The event log is capped by count (100,000 events by default, trimmed
//     as events are appended), not by time.
//   - An audit entry expires no sooner than the audit retention after it
//     was appended. The audit trail is trimmed by time only, never by
//     count, so a burst of requests cannot push out recent history, and
//     only up to a checkpoint, which stays (the package doc's "Audit
//     chain").
//
// Expiry is lazy: a record is gone some time after it is due (at once on
// Redis, at the next sweep of the embedded store), never before.
type Store interface {
	Requests
	Approvals
	Sessions
	Queue
	Bus
	Dedup
	Counts
	Workers
	Transcripts
	Answers
	Grants
	AuditChain
	AuditSinks
	Reaches
	// AuditLog returns up to limit entries with ids after `after` ("" = from
	// the start), oldest first. Audit and event ids are opaque strings that
	// sort in the order the entries were appended.
	AuditLog(ctx context.Context, after string, limit int) ([]AuditEntry, error)
	// AppendAudit appends an entry that no transition writes: AuditToolRan,
	// AuditSessionRefused, AuditInputRefused, AuditAnswerRefused,
	// AuditReminded or AuditEscalated. A zero At becomes the time of the
	// call. ErrInvalid when a fails Validate or has another action (those
	// are written atomically with their transition, never on their own).
	AppendAudit(ctx context.Context, a AuditEntry) error
	// Close releases the backend's resources; blocked calls return an error
	// wrapping ErrClosed (Consume returns it too). Closing twice is harmless.
	Close() error
}

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

// Sessions is the record of Slack threads and their Claude sessions.
type Sessions interface {
	// CreateSession stores a new session and indexes it by thread. ErrExists
	// if the id or the thread already has a session; ErrInvalid if s fails
	// Validate. A zero CreatedAt becomes the time of the call.
	CreateSession(ctx context.Context, s Session) error
	// GetSession returns ErrNotFound for an unknown id.
	GetSession(ctx context.Context, id string) (Session, error)
	// SessionByThread finds the session that lives in a Slack thread.
	// ErrNotFound if none does.
	SessionByThread(ctx context.Context, thread MessageRef) (Session, error)
	// UpdateSession applies fn to the current session and stores the result
	// atomically (fn may run more than once on contention; the id and thread
	// cannot change). An error from fn is returned unchanged and nothing is
	// stored. ErrNotFound for an unknown id.
	UpdateSession(ctx context.Context, id string, fn func(*Session) error) (Session, error)
}

// Queue carries user inputs to workers. A session with queued input and no
// owner is "ready"; a worker claims it and becomes its owner until it
// releases it, so every input of a session reaches the one process running
// it, in order.
type Queue interface {
	// Enqueue appends an input to its session's inbox and marks the session
	// ready unless a worker owns it. It returns the input with its ID set
	// (when empty) and its At set (when zero, to the time of the call).
	// ErrInvalid if in fails Validate.
	Enqueue(ctx context.Context, in Input) (Input, error)
	// Claim blocks until a ready session exists, makes worker its owner and
	// returns its id, or returns ctx.Err(). A Claim that returns an error has
	// claimed nothing, even when ctx ends as the claim is made.
	Claim(ctx context.Context, worker string) (string, error)
	// NextInput blocks until the session's inbox has an input and removes it,
	// or returns ctx.Err(). ErrNotOwner if worker does not own the session.
	NextInput(ctx context.Context, sessionID, worker string) (Input, error)
	// Requeue puts an input the worker took with NextInput but could not
	// deliver back at the head of the session's inbox, so it is the next one
	// out (for this worker or, after Release, the next owner). ErrNotOwner if
	// worker does not own the session.
	Requeue(ctx context.Context, in Input, worker string) error
	// Release gives up ownership; a session with inputs left becomes ready
	// again. ErrNotOwner if worker does not own it.
	Release(ctx context.Context, sessionID, worker string) error
	// Owned lists the sessions a worker owns, so a worker restarting under
	// the same name can end and release what its previous life left behind.
	Owned(ctx context.Context, worker string) ([]string, error)
}

// Workers is the liveness of workers. A worker beats while it runs; one
// whose beat lapsed while it still owns sessions is dead, and any other
// worker may take its sessions over, end what they left pending and hand
// them back to the queue. A heartbeat lapses by the store's clock (Redis:
// the key's TTL on the server; bbolt: the store's clock), so the workers'
// own clocks need not agree.
type Workers interface {
	// Heartbeat records that worker is alive for the next ttl. ErrInvalid
	// for an empty worker or a ttl <= 0.
	Heartbeat(ctx context.Context, worker string, ttl time.Duration) error
	// DeadWorkers lists, sorted, the workers that own at least one session
	// and whose heartbeat lapsed (or that never beat).
	DeadWorkers(ctx context.Context) ([]string, error)
	// TakeOver makes worker the owner of a session dead owns, atomically
	// checking that dead owns it and is still dead, so of several workers
	// taking over one session exactly one succeeds. ErrNotOwner when dead
	// does not own it (any more) or beats again.
	TakeOver(ctx context.Context, sessionID, dead, worker string) error
}

// Bus carries events to the Slack side.
type Bus interface {
	// Publish appends an event to the event log and returns its id.
	// ErrInvalid if e fails Validate; a zero At becomes the time of the call.
	Publish(ctx context.Context, e Event) (string, error)
	// Consume delivers every event of the log to exactly one consumer of the
	// group, calling fn for each: a session's events in log order per
	// consumer, one after another, while a backend may call fn for events of
	// different sessions at once (fn must be safe for that). A group that does
	// not exist yet is created at the oldest event still in the log, so
	// events published before any consumer ran (a worker that started first)
	// are not lost; an existing group resumes where it left off. The log is
	// capped, so an event may be dropped before a group that lags far
	// behind, or does not exist yet, reaches it. An event is acknowledged
	// when fn returns nil; when fn returns an error the event is delivered
	// again, up to MaxDeliveries times in all, each time no sooner than
	// RedeliveryDelay(base, n) after fn returned the error for its n-th
	// delivery (base is the backend's option, DefaultRedeliveryDelay unless
	// set); a failed event does not hold back the events after it. Events left
	// unacknowledged by a consumer that died are delivered to another one.
	// It blocks until ctx is cancelled and then returns nil.
	Consume(ctx context.Context, group, consumer string, fn func(context.Context, Event) error) error
}

// Dedup remembers keys for a while, so something done once is not done again.
type Dedup interface {
	// FirstSeen records key and reports whether this is the first time it was
	// seen within ttl. Of concurrent callers with one key, across processes
	// too, exactly one sees true. ErrInvalid for an empty key or a ttl <= 0.
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
	// Seen reports whether FirstSeen recorded key and its ttl has not
	// passed, without recording it. ErrInvalid for an empty key.
	Seen(ctx context.Context, key string) (bool, error)
}
