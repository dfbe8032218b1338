package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A request a policy rule asks several people to approve (count: N) is
// approved in steps: each approval but the last is kept on the pending
// request (Approve), and the last settles it with a decision that names
// every approver (Decision.Approvals). The store keeps the partial
// approvals, so replicas and restarts share them, and counts them
// atomically, so of two approvals at once exactly one is the last.

// ErrInputChanged: an approval approves another input than the approvals
// before it (the first approver edited it). The request returned alongside
// holds the approvals so far.
var ErrInputChanged = errors.New("approves another input than the approvals before it")

// Approval is one person's approval of a request that needs several.
type Approval struct {
	By     string    `json:"by"` // Slack user id
	ByName string    `json:"by_name,omitempty"`
	At     time.Time `json:"at"`
	// Input is what the approval approves when the first approver edited
	// Claude's input (Edit & approve): the edited input, which every later
	// approval must approve too and the last decision runs. Nil is the
	// input as Claude asked. Empty in Decision.Approvals (the decision's
	// UpdatedInput says it).
	Input json.RawMessage `json:"input,omitempty"`
	// Signature is the bot's signature over the approval of this request
	// (SignApproval); one that does not verify counts for nothing. Empty
	// in Decision.Approvals (the decision's signature covers them).
	Signature []byte `json:"signature,omitempty"`
}

// Validate checks a as Approve takes it: who and when.
func (a Approval) Validate() error {
	switch {
	case a.By == "":
		return invalid("approval without who approved")
	case a.At.IsZero():
		return invalid("approval by %s without a time", a.By)
	}
	return nil
}

// Approves is the input a approves in canonical form ("" for Claude's
// own): two approvals approve the same input when their Approves are
// equal. A canonical form of input that is not JSON is its bytes, which
// then only equal themselves.
func (a Approval) Approves() string {
	canon, err := canonicalJSON(a.Input)
	if err != nil {
		return string(bytes.TrimSpace(a.Input))
	}
	return string(canon)
}

// Approvals are the partial approvals of pending requests.
type Approvals interface {
	// Approve records a on the pending request id, which needs need
	// approvals (need ≥ 2), atomically, and returns the request with its
	// approvals after the call and whether a was the approval that made
	// them need: of several calls at once exactly one is the last. A
	// person counts once: when a.By approved already nothing changes (and
	// last is false). Once the request has need approvals (its decision
	// not stored yet) a further one is not recorded either. ErrInputChanged
	// when a approves another input than the approvals before it;
	// ErrAlreadyDecided (with the settled request) once it is settled;
	// ErrNotFound for an unknown id; ErrInvalid when a fails Validate or
	// need < 2. Approvals go with the request: Decide does not clear them,
	// and retention removes them with it.
	Approve(ctx context.Context, id string, a Approval, need int) (r Request, last bool, err error)
}

// ValidateApprove checks Approve's arguments.
func ValidateApprove(a Approval, need int) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if need < 2 {
		return invalid("approval by %s of a request that needs %d approvals; Decide settles one that needs one", a.By, need)
	}
	return nil
}

// AddApproval is Approve's transition on r as a backend holds it: it
// appends a unless a.By approved already or need people have, and
// reports whether a was appended and whether it was the last. People are
// counted, not entries: a copy of an approval written into the record by
// someone else counts for no one more. ErrInputChanged when a approves
// another input than r's first approval.
func AddApproval(r *Request, a Approval, need int) (added, last bool, err error) {
	people := Approvers(r.Approvals)
	if slices.Contains(people, a.By) || len(people) >= need {
		return false, false, nil
	}
	if len(r.Approvals) > 0 && r.Approvals[0].Approves() != a.Approves() {
		return false, false, ErrInputChanged
	}
	r.Approvals = append(r.Approvals, a)
	return true, len(people)+1 == need, nil
}

// Approvers are the distinct people of as, in the order they first
// approved.
func Approvers(as []Approval) []string {
	var out []string
	for _, a := range as {
		if !slices.Contains(out, a.By) {
			out = append(out, a.By)
		}
	}
	return out
}

// approvalDomain starts an approval's signed payload (see sign.go).
const approvalDomain = "slackgate approval v1\n"

// approvalPayload is what an approval's signature covers: the request it
// approves, the exact input it approves, and who and when.
type approvalPayload struct {
	RequestID    string `json:"request_id"`
	SessionID    string `json:"session_id"`
	CLIRequestID string `json:"cli_request_id"`
	Tool         string `json:"tool"`
	Input        []byte `json:"input"`
	By           string `json:"by"`
	ByName       string `json:"by_name"`
	At           string `json:"at"`
}

func approvalPayloadOf(r Request, a Approval) ([]byte, error) {
	input := r.Input
	if len(a.Input) > 0 {
		input = a.Input
	}
	canon, err := canonicalJSON(input)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	return payloadOf(approvalDomain, approvalPayload{
		RequestID: r.ID, SessionID: r.SessionID, CLIRequestID: r.CLIRequestID, Tool: r.ToolName,
		Input: canon, By: a.By, ByName: a.ByName, At: stamp(a.At),
	})
}

// SignApproval signs a, an approval of r, with key and stores the
// signature in a.Signature.
func SignApproval(key ed25519.PrivateKey, r Request, a *Approval) error {
	sig, err := signPayload(key, "approval of "+r.ID+" by "+a.By, func() ([]byte, error) { return approvalPayloadOf(r, *a) })
	if err != nil {
		return err
	}
	a.Signature = sig
	return nil
}

// VerifyApproval checks that a carries a signature by pub's private key
// over a approving r. It returns an error wrapping ErrUnsigned or
// ErrBadSignature when a must not count.
func VerifyApproval(pub ed25519.PublicKey, r Request, a Approval) error {
	return verifyPayload(pub, "approval of "+r.ID+" by "+a.By, a.Signature, func() ([]byte, error) { return approvalPayloadOf(r, a) })
}

// decisionApprovals is how a decision's signature covers its approvers:
// who and when, in order.
type decisionApproval struct {
	By     string `json:"by"`
	ByName string `json:"by_name"`
	At     string `json:"at"`
}

func signedApprovals(as []Approval) []decisionApproval {
	if len(as) == 0 {
		return nil
	}
	out := make([]decisionApproval, len(as))
	for i, a := range as {
		out[i] = decisionApproval{By: a.By, ByName: a.ByName, At: stamp(a.At)}
	}
	return out
}
