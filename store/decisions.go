package store

import (
	"encoding/json"
	"time"
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
