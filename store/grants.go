package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"
)

// A grant is slackgate's own "Always allow": an approver who approves a
// card with "Approve and allow… for 1 hour in this session" or "… in this
// repository" lets the same permission rules run without a card, for that
// scope, until the grant expires or is forgotten. The bot signs it; a grant
// that does not verify is ignored. A policy rule that matches a request
// always decides before any grant does.

// GrantScopeKind says where a grant applies.
type GrantScopeKind string

const (
	GrantSession GrantScopeKind = "session" // one session, by id
	GrantRepo    GrantScopeKind = "repo"    // sessions working in one directory
)

// GrantScope is where a grant applies. For GrantRepo, Value is the working
// directory and Token, for a session of the approval API, its token's
// name (a client's directory is its own word, as for AnswerScope).
type GrantScope struct {
	Kind  GrantScopeKind `json:"kind"`
	Value string         `json:"value"`
	Token string         `json:"token,omitempty"`
}

// Key is the scope as one string, unique per scope.
func (s GrantScope) Key() string {
	if s.Token != "" {
		return string(s.Kind) + "@" + s.Token + ":" + s.Value
	}
	return string(s.Kind) + ":" + s.Value
}

// Grant lets requests that match Rules run in Scope without a card.
type Grant struct {
	ID    string     `json:"id"` // set by a bot before signing
	Scope GrantScope `json:"scope"`
	// Rules are permission rules in Claude Code's syntax
	// ("Bash(npm test:*)", "Edit(src/**)"), as the card's suggestion
	// named them; a request matches the grant when one of them allows it
	// (package bot/policy's matching).
	Rules []string `json:"rules"`
	By    string   `json:"by"` // the approver's Slack user id
	// ByName is the approver's display name at the time.
	ByName    string    `json:"by_name,omitempty"`
	At        time.Time `json:"at"`
	Expires   time.Time `json:"expires,omitzero"` // zero: until forgotten
	RequestID string    `json:"request_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Channel   string    `json:"channel,omitempty"`
	// Signature is the Ed25519 signature of the bot that added the grant
	// (SignGrant); a grant decides only when it verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Live reports whether g applies at now: it has no expiry, or now is
// before it.
func (g Grant) Live(now time.Time) bool { return g.Expires.IsZero() || now.Before(g.Expires) }

// Validate checks g as AddGrant takes it.
func (g Grant) Validate() error {
	switch {
	case g.ID == "":
		return invalid("grant without an id")
	case g.Scope.Kind != GrantSession && g.Scope.Kind != GrantRepo:
		return invalid("grant %s of unknown scope %q", g.ID, g.Scope.Kind)
	case strings.TrimSpace(g.Scope.Value) == "":
		return invalid("grant %s without a scope value", g.ID)
	case len(g.Rules) == 0:
		return invalid("grant %s without rules", g.ID)
	case g.By == "" || g.At.IsZero():
		return invalid("grant %s without who added it or when", g.ID)
	case !g.Expires.IsZero() && !g.Expires.After(g.At):
		return invalid("grant %s expires before it was added", g.ID)
	}
	return nil
}

// GrantAddedAudit is the audit entry AddGrant appends for g.
func GrantAddedAudit(g Grant) AuditEntry {
	return AuditEntry{At: g.At, Action: AuditGrantAdded, GrantID: g.ID, RequestID: g.RequestID, SessionID: g.SessionID,
		By: g.By, ByName: g.ByName, Message: grantWords(g)}
}

// GrantForgottenAudit is the audit entry ForgetGrant appends when by
// forgets g.
func GrantForgottenAudit(g Grant, by, byName string, at time.Time) AuditEntry {
	return AuditEntry{At: at, Action: AuditGrantForgotten, GrantID: g.ID, By: by, ByName: byName, Message: grantWords(g)}
}

// grantWords is what a grant's audit entries say of it.
func grantWords(g Grant) string {
	s := strings.Join(g.Rules, ", ") + " in " + g.Scope.Key()
	if !g.Expires.IsZero() {
		s += " until " + g.Expires.UTC().Format(time.RFC3339)
	}
	return s
}

// Grants keeps grants. An expired grant may stay listed until it is
// forgotten or its backend drops it (Redis: at its expiry); callers check
// Live.
type Grants interface {
	// AddGrant stores g and appends a GrantAddedAudit entry, atomically.
	// ErrInvalid when g fails Validate; ErrExists when g.ID is taken.
	AddGrant(ctx context.Context, g Grant) error
	// ListGrants returns every grant, newest first.
	ListGrants(ctx context.Context) ([]Grant, error)
	// ForgetGrant removes grant id and appends a GrantForgottenAudit entry
	// naming by, atomically; it returns the grant removed. ErrNotFound for
	// an unknown id; ErrInvalid for an empty by.
	ForgetGrant(ctx context.Context, id, by, byName string) (Grant, error)
}

// grantDomain starts a grant's signed payload (see sign.go).
const grantDomain = "slackgate grant v1\n"

type grantPayload struct {
	ID        string     `json:"id"`
	Scope     GrantScope `json:"scope"`
	Rules     []string   `json:"rules"`
	By        string     `json:"by"`
	ByName    string     `json:"by_name"`
	At        string     `json:"at"`
	Expires   string     `json:"expires"`
	RequestID string     `json:"request_id"`
	SessionID string     `json:"session_id"`
	Channel   string     `json:"channel"`
}

func grantPayloadOf(g Grant) ([]byte, error) {
	expires := ""
	if !g.Expires.IsZero() {
		expires = stamp(g.Expires)
	}
	return payloadOf(grantDomain, grantPayload{
		ID: g.ID, Scope: g.Scope, Rules: g.Rules, By: g.By, ByName: g.ByName, At: stamp(g.At), Expires: expires,
		RequestID: g.RequestID, SessionID: g.SessionID, Channel: g.Channel,
	})
}

// SignGrant signs all of g with key and stores the signature in
// g.Signature: its scope, rules, expiry and who added it cannot change.
func SignGrant(key ed25519.PrivateKey, g *Grant) error {
	if g.ID == "" || g.At.IsZero() {
		return fmt.Errorf("store: sign grant %q: %w", g.ID, invalid("a signed grant needs its id and time set"))
	}
	sig, err := signPayload(key, "grant "+g.ID, func() ([]byte, error) { return grantPayloadOf(*g) })
	if err != nil {
		return err
	}
	g.Signature = sig
	return nil
}

// VerifyGrant checks that g carries a signature by pub's private key over
// all of it. It returns an error wrapping ErrUnsigned or ErrBadSignature
// when g must not decide anything.
func VerifyGrant(pub ed25519.PublicKey, g Grant) error {
	return verifyPayload(pub, "grant "+g.ID, g.Signature, func() ([]byte, error) { return grantPayloadOf(g) })
}
