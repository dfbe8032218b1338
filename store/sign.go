package store

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of the Verify functions. Both mean the record must not be acted on.
var (
	// ErrUnsigned: the record carries no signature.
	ErrUnsigned = errors.New("not signed")
	// ErrBadSignature: the signature does not cover this record under the
	// key (forged, altered after signing, made for another request or
	// session, made for another kind of record, or signed with another key).
	ErrBadSignature = errors.New("signature does not verify")
)

// A bot signs, with one Ed25519 key, every record that decides what a
// worker runs or who acted: decisions, sessions, queued inputs and
// standing rules (standing.go). Each kind's payload starts with a domain string of
// its own, which also names the payload's version, so a signature of one
// kind never verifies as another, and the rest of the payload is the
// kind's fields in a fixed JSON form.
const (
	decisionDomain   = "slackgate decision v2\n"
	decisionDomainV1 = "slackgate decision v1\n" // verified, no longer signed
	sessionDomain    = "slackgate session v1\n"
	inputDomain      = "slackgate input v1\n"
)

// payloadOf is domain followed by v as JSON.
func payloadOf(domain string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte(domain), body...), nil
}

// signPayload signs the payload made by payload with key; what names the
// record in errors.
func signPayload(key ed25519.PrivateKey, what string, payload func() ([]byte, error)) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("store: sign %s: %w", what, invalid("signing key of %d bytes", len(key)))
	}
	p, err := payload()
	if err != nil {
		return nil, fmt.Errorf("store: sign %s: %w", what, err)
	}
	return ed25519.Sign(key, p), nil
}

// verifyPayload checks that sig is pub's signature over the payload made
// by payload; what names the record in errors, which wrap ErrUnsigned or
// ErrBadSignature.
func verifyPayload(pub ed25519.PublicKey, what string, sig []byte, payload func() ([]byte, error)) error {
	if len(sig) == 0 {
		return fmt.Errorf("store: verify %s: %w", what, ErrUnsigned)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("store: verify %s: verify key of %d bytes: %w", what, len(pub), ErrBadSignature)
	}
	p, err := payload()
	if err != nil {
		return fmt.Errorf("store: verify %s: %w: %w", what, ErrBadSignature, err)
	}
	if !ed25519.Verify(pub, p, sig) {
		return fmt.Errorf("store: verify %s: %w", what, ErrBadSignature)
	}
	return nil
}

// stamp is a signed time: UTC, to the nanosecond, so a time that went
// through a store's encoding (its zone and monotonic reading lost) signs
// the same.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// A decision's payload is versioned by its domain. v2 (decisionPayload),
// signed now, names who decided in one group (Decider) and holds every
// field always, so a new kind of decider is a new Decider.Kind, not a new
// field. v1 (signedPayload), signed by earlier releases, grew a field left
// out when empty per feature; VerifyDecision still accepts it, so a
// decision made before an upgrade is carried out after it.

// decisionPayload is what a decision's signature covers (v2): the request
// it answers, with the facts the policy read of it, and everything of the
// decision that reaches Claude or the audit trail. Input is the exact
// input that will run, in canonical JSON (see signedPayload).
type decisionPayload struct {
	RequestID    string            `json:"request_id"`
	SessionID    string            `json:"session_id"`
	CLIRequestID string            `json:"cli_request_id"`
	Kind         Kind              `json:"kind"`
	Tool         string            `json:"tool"`
	Home         string            `json:"home"`
	Resolved     map[string]string `json:"resolved"`
	TurnBy       []string          `json:"turn_by"`
	Outcome      Outcome           `json:"outcome"`
	Input        []byte            `json:"input"`
	Answers      map[string]string `json:"answers"`
	Permissions  []Suggestion      `json:"permissions"`
	Content      []byte            `json:"content"`
	Message      string            `json:"message"`
	Interrupt    bool              `json:"interrupt"`
	Skipped      bool              `json:"skipped"`
	Decider      Decider           `json:"decider"`
	// By and ByName are the person the decision is in the name of: who
	// decided, added the grant or remembered the answer; empty for a rule
	// and the system.
	By        string             `json:"by"`
	ByName    string             `json:"by_name"`
	Approvals []decisionApproval `json:"approvals"`
	At        string             `json:"at"`
}

// signedPayload is what a decision's signature covered in v1: the request it
// answers and everything of the decision that reaches Claude or the audit
// trail (an elicitation's submitted content too). Input is the exact input that will run, in canonical JSON, so the
// bot (which reads the request back from the store) and the worker (which
// holds the request as it came from the CLI) agree on its bytes.
type signedPayload struct {
	RequestID    string            `json:"request_id"`
	SessionID    string            `json:"session_id"`
	CLIRequestID string            `json:"cli_request_id"`
	Kind         Kind              `json:"kind"`
	Tool         string            `json:"tool"`
	Outcome      Outcome           `json:"outcome"`
	Input        []byte            `json:"input"`
	Answers      map[string]string `json:"answers"`
	Permissions  []Suggestion      `json:"permissions"`
	Message      string            `json:"message"`
	Interrupt    bool              `json:"interrupt"`
	Skipped      bool              `json:"skipped"`
	By           string            `json:"by"`
	ByName       string            `json:"by_name"`
	At           string            `json:"at"`
	// Remembered is left out when empty, so the payload of every other
	// decision is what it was before remembered answers existed.
	Remembered string `json:"remembered,omitempty"`
	// Content (an elicitation's form) is left out when empty, so the
	// payload of every other decision is what it was before it existed.
	Content []byte `json:"content,omitempty"`
	// The policy's facts and verdict, each left out when empty, so the
	// payload of a decision without them is what it was before policies:
	// the home and resolved paths the policy read (the side that filled
	// them checks them against its own), and the rule that decided.
	Home         string            `json:"home,omitempty"`
	Resolved     map[string]string `json:"resolved,omitempty"`
	Rule         string            `json:"rule,omitempty"`
	PolicyDigest string            `json:"policy_digest,omitempty"`
	// Approvals (a request several people approved) are left out when
	// empty, so the payload of every other decision is what it was
	// before they existed.
	Approvals []decisionApproval `json:"approvals,omitempty"`
	// Grant (the grant that allowed it) is left out when empty, likewise.
	Grant string `json:"grant,omitempty"`
	// TurnBy (whose messages the turn answers, filled by the worker) is
	// left out when empty, likewise.
	TurnBy []string `json:"turn_by,omitempty"`
}

// DecisionPayload is the byte string a signature of d, settling r, covers
// (v2). It fails when the input that would run is not JSON.
func DecisionPayload(r Request, d Decision) ([]byte, error) {
	if !d.oneDecider() {
		return nil, fmt.Errorf("store: decision payload of %s: %w", r.ID, invalid("a decision naming more than one of a remembered answer, a rule and a grant"))
	}
	f, err := factsOf(r, d)
	if err != nil {
		return nil, err
	}
	p, err := payloadOf(decisionDomain, decisionPayload{
		RequestID: r.ID, SessionID: r.SessionID, CLIRequestID: r.CLIRequestID, Kind: r.Kind, Tool: r.ToolName,
		Home: r.Home, Resolved: f.resolved, TurnBy: f.turnBy,
		Outcome: d.Outcome, Input: f.input, Answers: f.answers, Permissions: f.perms, Content: f.content,
		Message: d.Message, Interrupt: d.Interrupt, Skipped: d.Skipped,
		Decider: d.Decider(), By: d.By, ByName: d.ByName, Approvals: signedApprovals(d.Approvals), At: stamp(d.At),
	})
	if err != nil {
		return nil, fmt.Errorf("store: decision payload of %s: %w", r.ID, err)
	}
	return p, nil
}

// decisionPayloadV1 is the byte string a signature of d covered before
// v2 (signedPayload), for the decisions earlier releases signed.
func decisionPayloadV1(r Request, d Decision) ([]byte, error) {
	f, err := factsOf(r, d)
	if err != nil {
		return nil, err
	}
	p, err := payloadOf(decisionDomainV1, signedPayload{
		RequestID: r.ID, SessionID: r.SessionID, CLIRequestID: r.CLIRequestID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, Input: f.input, Answers: f.answers, Permissions: f.perms,
		Message: d.Message, Interrupt: d.Interrupt, Skipped: d.Skipped, By: d.By, ByName: d.ByName,
		At: stamp(d.At), Remembered: d.Remembered, Content: f.content, Approvals: signedApprovals(d.Approvals), Grant: d.Grant,
		Home: r.Home, Resolved: f.resolved, Rule: d.Rule, PolicyDigest: d.PolicyDigest, TurnBy: f.turnBy,
	})
	if err != nil {
		return nil, fmt.Errorf("store: decision payload of %s: %w", r.ID, err)
	}
	return p, nil
}

// signedFacts are the parts of a decision's payload that need a fixed
// form before signing.
type signedFacts struct {
	input, content []byte
	answers        map[string]string
	perms          []Suggestion
	resolved       map[string]string
	turnBy         []string
}

// factsOf puts r's and d's fields in their signed form: the input that
// will run and the content in canonical JSON, and an empty map or list as
// absent (it reads back from a store so).
func factsOf(r Request, d Decision) (signedFacts, error) {
	input := r.Input
	if len(d.UpdatedInput) > 0 {
		input = d.UpdatedInput
	}
	canon, err := canonicalJSON(input)
	if err != nil {
		return signedFacts{}, fmt.Errorf("store: decision payload of %s: input: %w", r.ID, err)
	}
	content, err := canonicalJSON(d.Content)
	if err != nil {
		return signedFacts{}, fmt.Errorf("store: decision payload of %s: content: %w", r.ID, err)
	}
	f := signedFacts{input: canon, content: content, answers: d.Answers, perms: d.Permissions, resolved: r.Resolved, turnBy: r.TurnBy}
	if len(f.answers) == 0 {
		f.answers = nil
	}
	if len(f.resolved) == 0 {
		f.resolved = nil
	}
	if len(f.perms) == 0 {
		f.perms = nil
	}
	if len(f.turnBy) == 0 {
		f.turnBy = nil
	}
	return f, nil
}

// canonicalJSON compacts raw and escapes <, > and & the way encoding/json
// does when it stores a json.RawMessage, so the input as the CLI sent it
// and as it reads back from a store give the same bytes. An empty input is
// its own canonical form.
func canonicalJSON(raw []byte) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes(), nil
}

// SignDecision signs d, which settles r, with key and stores the signature
// in d.Signature. The side that took the person's answer signs, right
// before Decide.
func SignDecision(key ed25519.PrivateKey, r Request, d *Decision) error {
	sig, err := signPayload(key, "decision of "+r.ID, func() ([]byte, error) { return DecisionPayload(r, *d) })
	if err != nil {
		return err
	}
	d.Signature = sig
	return nil
}

// VerifyDecision checks that d carries a signature by pub's private key
// over d settling r, in payload v2 or, as an earlier release signed it,
// v1. It returns an error wrapping ErrUnsigned or ErrBadSignature when d
// must not be acted on.
func VerifyDecision(pub ed25519.PublicKey, r Request, d Decision) error {
	what := "decision of " + r.ID
	err := verifyPayload(pub, what, d.Signature, func() ([]byte, error) { return DecisionPayload(r, d) })
	if errors.Is(err, ErrBadSignature) && verifyPayload(pub, what, d.Signature, func() ([]byte, error) { return decisionPayloadV1(r, d) }) == nil {
		return nil
	}
	return err
}

// sessionPayload is what a session's signature covers: everything of it a
// worker runs by (its id, directory, permission mode and model, and
// whether it is an approval API session, which no worker runs) and who
// started it where and when. What changes as it runs (state, owner,
// status message) is not covered.
type sessionPayload struct {
	ID             string `json:"id"`
	Channel        string `json:"channel"`
	ThreadTS       string `json:"thread_ts"`
	WorkDir        string `json:"workdir"`
	StartedBy      string `json:"started_by"`
	PermissionMode string `json:"permission_mode"`
	Model          string `json:"model"`
	CreatedAt      string `json:"created_at"`
	API            bool   `json:"api"`
}

func sessionPayloadOf(s Session) ([]byte, error) {
	return payloadOf(sessionDomain, sessionPayload{
		ID: s.ID, Channel: s.Thread.Channel, ThreadTS: s.Thread.TS, WorkDir: s.WorkDir, StartedBy: s.StartedBy,
		PermissionMode: s.PermissionMode, Model: s.Model, CreatedAt: stamp(s.CreatedAt), API: s.API,
	})
}

// SignSession signs s with key and stores the signature in s.Signature.
// The bot that creates s signs it, after setting its id and CreatedAt (a
// store fills in neither then). ErrInvalid for a session without either.
func SignSession(key ed25519.PrivateKey, s *Session) error {
	if s.ID == "" || s.CreatedAt.IsZero() {
		return fmt.Errorf("store: sign session %q: %w", s.ID, invalid("a signed session needs its id and creation time set"))
	}
	sig, err := signPayload(key, "session "+s.ID, func() ([]byte, error) { return sessionPayloadOf(*s) })
	if err != nil {
		return err
	}
	s.Signature = sig
	return nil
}

// VerifySession checks that s carries a signature by pub's private key
// over its covered fields. It returns an error wrapping ErrUnsigned or
// ErrBadSignature when s must not be run.
func VerifySession(pub ed25519.PublicKey, s Session) error {
	return verifyPayload(pub, "session "+s.ID, s.Signature, func() ([]byte, error) { return sessionPayloadOf(s) })
}

// inputPayload is what an input's signature covers: all of it. The
// session id binds it to its session: a copy queued for another session
// does not verify.
type inputPayload struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	Text      string `json:"text"`
	User      string `json:"user"`
	At        string `json:"at"`
	Control   string `json:"control"`
	// Mode and Process (ControlSetMode) are left out when empty, so the
	// payload of every other input is what it was before they existed.
	Mode    string `json:"mode,omitempty"`
	Process string `json:"process,omitempty"`
}

func inputPayloadOf(in Input) ([]byte, error) {
	return payloadOf(inputDomain, inputPayload{
		ID: in.ID, SessionID: in.SessionID, Text: in.Text, User: in.User, At: stamp(in.At), Control: in.Control, Mode: in.Mode,
		Process: in.Process,
	})
}

// SignInput signs in with key and stores the signature in in.Signature.
// The bot that queues in signs it, after setting its id and At (a store
// fills in neither then). ErrInvalid for an input without either.
func SignInput(key ed25519.PrivateKey, in *Input) error {
	if in.ID == "" || in.At.IsZero() {
		return fmt.Errorf("store: sign input %q of %s: %w", in.ID, in.SessionID, invalid("a signed input needs its id and time set"))
	}
	sig, err := signPayload(key, "input "+in.ID, func() ([]byte, error) { return inputPayloadOf(*in) })
	if err != nil {
		return err
	}
	in.Signature = sig
	return nil
}

// VerifyInput checks that in carries a signature by pub's private key
// over all of it. It returns an error wrapping ErrUnsigned or
// ErrBadSignature when in must not be delivered.
func VerifyInput(pub ed25519.PublicKey, in Input) error {
	return verifyPayload(pub, "input "+in.ID, in.Signature, func() ([]byte, error) { return inputPayloadOf(in) })
}
