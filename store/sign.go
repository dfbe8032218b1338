package store

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Errors of VerifyDecision. Both mean the decision must not be acted on.
var (
	// ErrUnsigned: the decision carries no signature.
	ErrUnsigned = errors.New("decision is not signed")
	// ErrBadSignature: the signature does not cover this decision of this
	// request under the key (forged, altered after signing, made for
	// another request, or signed with another key).
	ErrBadSignature = errors.New("decision signature does not verify")
)

// signingDomain separates decision signatures from anything else the same
// key might ever sign, and names the payload's version.
const signingDomain = "slackgate decision v1\n"

// signedPayload is what a decision's signature covers: the request it
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
}

// DecisionPayload is the byte string a signature of d, settling r, covers.
// It fails when the input that would run is not JSON.
func DecisionPayload(r Request, d Decision) ([]byte, error) {
	input := r.Input
	if len(d.UpdatedInput) > 0 {
		input = d.UpdatedInput
	}
	canon, err := canonicalJSON(input)
	if err != nil {
		return nil, fmt.Errorf("store: decision payload of %s: input: %w", r.ID, err)
	}
	content, err := canonicalJSON(d.Content)
	if err != nil {
		return nil, fmt.Errorf("store: decision payload of %s: content: %w", r.ID, err)
	}
	// An empty map or list reads back from a store as absent: sign both
	// the same way.
	answers, perms := d.Answers, d.Permissions
	if len(answers) == 0 {
		answers = nil
	}
	if len(perms) == 0 {
		perms = nil
	}
	p := signedPayload{
		RequestID: r.ID, SessionID: r.SessionID, CLIRequestID: r.CLIRequestID, Kind: r.Kind, Tool: r.ToolName,
		Outcome: d.Outcome, Input: canon, Answers: answers, Permissions: perms,
		Message: d.Message, Interrupt: d.Interrupt, Skipped: d.Skipped, By: d.By, ByName: d.ByName,
		At: d.At.UTC().Format(time.RFC3339Nano), Remembered: d.Remembered, Content: content,
	}
	body, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("store: decision payload of %s: %w", r.ID, err)
	}
	return append([]byte(signingDomain), body...), nil
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
	if len(key) != ed25519.PrivateKeySize {
		return fmt.Errorf("store: sign decision of %s: %w", r.ID, invalid("signing key of %d bytes", len(key)))
	}
	payload, err := DecisionPayload(r, *d)
	if err != nil {
		return err
	}
	d.Signature = ed25519.Sign(key, payload)
	return nil
}

// VerifyDecision checks that d carries a signature by pub's private key
// over d settling r. It returns an error wrapping ErrUnsigned or
// ErrBadSignature when d must not be acted on.
func VerifyDecision(pub ed25519.PublicKey, r Request, d Decision) error {
	if len(d.Signature) == 0 {
		return fmt.Errorf("store: verify decision of %s: %w", r.ID, ErrUnsigned)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("store: verify decision of %s: verify key of %d bytes: %w", r.ID, len(pub), ErrBadSignature)
	}
	payload, err := DecisionPayload(r, d)
	if err != nil {
		return fmt.Errorf("store: verify decision of %s: %w: %w", r.ID, ErrBadSignature, err)
	}
	if !ed25519.Verify(pub, payload, d.Signature) {
		return fmt.Errorf("store: verify decision of %s: %w", r.ID, ErrBadSignature)
	}
	return nil
}
