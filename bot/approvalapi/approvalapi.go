package approvalapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Bounds of what one call may carry.
const (
	// MaxBody caps a request body; MaxInput the tool input in it;
	// MaxErrorText a tool result's error.
	MaxBody      = 1 << 20
	MaxInput     = 256 << 10
	MaxErrorText = 4000
	// MaxWait bounds one long poll, below common proxy idle timeouts.
	MaxWait = 60 * time.Second
	// DefaultTimeout is how long a request waits for a person when the
	// caller names no timeout; MaxTimeout bounds what it may name.
	DefaultTimeout = 10 * time.Minute
	MaxTimeout     = 24 * time.Hour
)

// Session says where a request or a report comes from. Every field is
// the client's word.
type Session struct {
	ID   string `json:"id"`             // the Claude session id
	Host string `json:"host,omitempty"` // the machine it runs on
	Cwd  string `json:"cwd,omitempty"`  // its working directory
	Name string `json:"name,omitempty"` // who runs it (a display name)
}

// NewRequest is the body of POST /v1/requests: a permission prompt or a
// question to put on a card.
type NewRequest struct {
	// ToolCall is the call asked about. The bot takes its ToolName,
	// Input, ToolUseID, Title and Description (see Call).
	store.ToolCall
	Suggestions []store.Suggestion `json:"permission_suggestions,omitempty"`
	// Timeout is how long the request waits for a person ("10m"); past
	// it, it is settled as expired. Default DefaultTimeout.
	Timeout string  `json:"timeout,omitempty"`
	Session Session `json:"session"`
	// Home and Resolved are what the team policy needs from the machine
	// Claude runs on (store.Request has them): the home of the user it
	// runs as, and the real path of each path the input names and of the
	// working directory and home. A path without one never matches an
	// allow rule.
	Home     string            `json:"home,omitempty"`
	Resolved map[string]string `json:"resolved,omitempty"`
}

// Call is the tool call as the bot takes it from a client: its name,
// input, tool use id, title and description. The rest of a ToolCall is
// what Claude Code's own prompt says (a display name the card shows in
// place of the tool's, the reason it asks, a subagent, …): a client's
// word for it would put on the card what Claude Code never said, so it is
// left out.
func (n NewRequest) Call() store.ToolCall {
	return store.ToolCall{ToolName: n.ToolName, Input: n.Input, ToolUseID: n.ToolUseID, Title: n.Title, Description: n.Description}
}

// Bounds of a request's facts: MaxResolved paths, each and the home at
// most MaxPathBytes.
const (
	MaxResolved  = 64
	MaxPathBytes = 4096
)

// Facts is the digest of a request's home and resolved paths, as the bot
// answers it with every allow (Decision.Facts): a client compares it with
// the digest of what it sent and refuses an allow made on other facts (a
// store writer changed them while the request waited).
func Facts(home string, resolved map[string]string) string {
	if len(resolved) == 0 {
		resolved = nil
	}
	b, _ := json.Marshal(struct {
		Home     string            `json:"home"`
		Resolved map[string]string `json:"resolved"`
	}{home, resolved}) // a map's keys marshal sorted
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ToolRan is the body of POST /v1/tool-results: a tool that ran in a
// Claude session slackgate did not start (the hook's PostToolUse and
// PostToolUseFailure), as its client reports it.
type ToolRan struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Failed: the tool reported an error; Error is its text (at most
	// MaxErrorText bytes).
	Failed  bool    `json:"failed"`
	Error   string  `json:"error,omitempty"`
	Session Session `json:"session"`
}

// Recorded answers a ToolRan.
type Recorded struct {
	Status    string `json:"status"` // "recorded"
	SessionID string `json:"session_id"`
}

// Request states.
const (
	StatusPending = "pending"
	StatusDecided = "decided"
)

// RequestStatus is the body of every answer about one request.
type RequestStatus struct {
	ID        string     `json:"id"`
	SessionID string     `json:"session_id"`
	Kind      store.Kind `json:"kind"`
	Status    string     `json:"status"` // StatusPending or StatusDecided
	Deadline  time.Time  `json:"deadline,omitzero"`
	Decision  *Decision  `json:"decision,omitempty"`
}

// Decision is a settled request's decision as the API returns it.
type Decision struct {
	Outcome store.Outcome `json:"outcome"`
	// UpdatedInput (allow only) is the whole input the tool is to run
	// with: the original or the person's edit, with a question's answers
	// added, ready to send back as updatedInput.
	UpdatedInput json.RawMessage    `json:"updated_input,omitempty"`
	Permissions  []store.Suggestion `json:"updated_permissions,omitempty"`
	Answers      map[string]string  `json:"answers,omitempty"`
	// Message is what Claude is told on a deny (never empty then).
	Message   string `json:"message,omitempty"`
	Interrupt bool   `json:"interrupt,omitempty"`
	By        string `json:"by,omitempty"`
	ByName    string `json:"by_name,omitempty"`
	// Rule is the policy rule that decided without a card ("" for a
	// person). Facts (allow only) is Facts of the request as the decision
	// was made on it.
	Rule  string `json:"rule,omitempty"`
	Facts string `json:"facts,omitempty"`
}

// Error is the body of every answer that is not a success. Limit and
// RetryAfter (seconds, also in the Retry-After header) are set on a 429.
type Error struct {
	Error      string `json:"error"`
	Limit      string `json:"limit,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"`
}

var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Validate checks the body and returns the request's timeout.
func (n NewRequest) Validate() (time.Duration, error) {
	if err := checkTool(n.ToolName, n.Input, n.Session); err != nil {
		return 0, err
	}
	if len(n.Title) > 1000 || len(n.Description) > 4000 || len(n.ToolUseID) > 256 || len(n.Suggestions) > 32 {
		return 0, errors.New("title, description, tool_use_id or permission_suggestions is too long")
	}
	if err := checkFacts(n.Home, n.Resolved); err != nil {
		return 0, err
	}
	if n.Timeout == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(n.Timeout)
	if err != nil || d < time.Second || d > MaxTimeout {
		return 0, fmt.Errorf("timeout must be a duration between 1s and %s", MaxTimeout)
	}
	return d, nil
}

// Validate checks the body.
func (n ToolRan) Validate() error {
	if err := checkTool(n.ToolName, n.Input, n.Session); err != nil {
		return err
	}
	if len(n.ToolUseID) > 256 || len(n.Error) > MaxErrorText {
		return fmt.Errorf("tool_use_id or error is too long (error: at most %d bytes)", MaxErrorText)
	}
	return nil
}

// TooLarge reports whether input is over MaxInput: a body that fails
// validation for it is answered 413, not 400.
func TooLarge(input json.RawMessage) bool { return len(input) > MaxInput }

// checkTool checks what a request and a report share: the tool, its input
// and the session.
func checkTool(tool string, input json.RawMessage, s Session) error {
	switch {
	case tool == "" || len(tool) > 256:
		return errors.New("tool_name is required (at most 256 bytes)")
	case TooLarge(input):
		return fmt.Errorf("input is larger than %d bytes", MaxInput)
	case !IsObject(input):
		return errors.New("input must be a JSON object")
	case !sessionIDRE.MatchString(s.ID):
		return errors.New("session.id is required: the Claude session id (letters, digits, - and _)")
	case len(s.Host) > 256 || len(s.Cwd) > 4096 || len(s.Name) > 256:
		return errors.New("session.host, session.cwd or session.name is too long")
	}
	return nil
}

// checkFacts bounds a request's home and resolved paths.
func checkFacts(home string, resolved map[string]string) error {
	if len(home) > MaxPathBytes || len(resolved) > MaxResolved {
		return fmt.Errorf("home is longer than %d bytes, or resolved has more than %d paths", MaxPathBytes, MaxResolved)
	}
	for k, v := range resolved {
		if k == "" || len(k) > MaxPathBytes || !strings.HasPrefix(v, "/") || len(v) > MaxPathBytes {
			return fmt.Errorf("resolved maps each path (at most %d bytes) to an absolute real path", MaxPathBytes)
		}
	}
	return nil
}

// IsObject reports whether raw is a JSON object.
func IsObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

// Why a client withdraws a request (DELETE ?reason=): the card says it.
const (
	// ReasonTerminal: the person answered in the terminal (the hook).
	ReasonTerminal = "terminal"
	// ReasonTimeout: nobody answered within the client's wait, and the
	// terminal asks again (the hook).
	ReasonTimeout = "timeout"
	// ReasonUnanswered: nobody answered within the client's wait, so
	// Claude was told no (`slackgate mcp`).
	ReasonUnanswered = "unanswered"
)

// Withdrawal is a DELETE's reason and, for the two that time out, how
// long the client waited. The zero value is a withdrawal without a reason.
type Withdrawal struct {
	Reason string
	Waited time.Duration
}

// Query is w as the DELETE's query ("" for none).
func (w Withdrawal) Query() string {
	switch w.Reason {
	case "":
		return ""
	case ReasonTerminal:
		return "?reason=" + ReasonTerminal
	}
	return "?reason=" + url.QueryEscape(w.Reason) + "&waited=" + url.QueryEscape(w.Waited.String())
}

// ParseWithdrawal reads a DELETE's query.
func ParseWithdrawal(q url.Values) (Withdrawal, error) {
	w := Withdrawal{Reason: q.Get("reason")}
	switch w.Reason {
	case "", ReasonTerminal:
		return w, nil
	case ReasonTimeout, ReasonUnanswered:
	default:
		return w, errors.New("reason must be terminal, timeout or unanswered")
	}
	if s := q.Get("waited"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > MaxTimeout {
			return w, errors.New("waited must be a duration such as 10m")
		}
		w.Waited = d
	}
	return w, nil
}
