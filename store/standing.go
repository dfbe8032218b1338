package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"strings"
	"time"
)

// A standing rule is what an approver keeps for later while deciding a
// card, so the next matching request in the same scope is settled without
// one, in their name:
//
//   - a grant, slackgate's own "Always allow": "Approve and allow… for 1
//     hour in this session" or "… in this repository" lets the same
//     permission rules run, until the grant expires or is forgotten;
//   - a remembered answer ("Always answer this way"): the answer to a
//     question form (AskUserQuestion), given again to the same form from a
//     session in its repository or channel, until it is forgotten or
//     replaced. Tool approvals are never remembered this way.
//
// The bot signs each; one that does not verify decides nothing. A policy
// rule that matches a request always decides before a standing rule does.

// StandingKind says what a standing rule settles.
type StandingKind string

const (
	StandingGrant  StandingKind = "grant"  // tool calls one of its Rules allows
	StandingAnswer StandingKind = "answer" // the question form with its Fingerprint
)

// ScopeKind says where a standing rule applies.
type ScopeKind string

const (
	ScopeSession ScopeKind = "session" // one session, by id (grants)
	ScopeRepo    ScopeKind = "repo"    // sessions working in one directory
	ScopeChannel ScopeKind = "channel" // sessions whose thread is in one channel (answers)
)

// Scope is where a standing rule applies. For ScopeRepo, Value is the
// session's working directory, and Token, for a session that reached
// slackgate through the approval API, the name of its token: a directory a
// client reports is its own word, so it only ever meets what was kept for
// that token's sessions. For ScopeSession, Value is the session id; for
// ScopeChannel, the channel id.
type Scope struct {
	Kind  ScopeKind `json:"kind"`
	Value string    `json:"value"`
	Token string    `json:"token,omitempty"`
}

// Key is the scope as one string, unique per scope.
func (s Scope) Key() string {
	if s.Token != "" {
		return string(s.Kind) + "@" + s.Token + ":" + s.Value
	}
	return string(s.Kind) + ":" + s.Value
}

// Standing is one standing rule. Its record keeps the JSON grants and
// remembered answers had before they were one kind, so a store written by
// an earlier release reads the same.
type Standing struct {
	// ID is set by Keep when empty; a bot sets it before signing.
	ID string `json:"id"`
	// Kind is the caller's to set for Keep; reading a record back, a
	// store sets it from where the record lives, never from its JSON.
	Kind  StandingKind `json:"kind,omitempty"`
	Scope Scope        `json:"scope"`

	// Rules (a grant) are permission rules in Claude Code's syntax
	// ("Bash(npm test:*)", "Edit(src/**)"), as the card's suggestion named
	// them; a request matches when one of them allows it (package
	// bot/policy's matching).
	Rules []string `json:"rules,omitempty"`

	// Fingerprint (an answer) is the QuestionFingerprint of the form, Tool
	// the tool that asked it, Questions its questions (for people: the App
	// Home, the CLI), and Answers maps each question text to the chosen
	// labels joined by ", ", or to free text, as Decision.Answers.
	Fingerprint string               `json:"fingerprint,omitempty"`
	Tool        string               `json:"tool,omitempty"`
	Questions   []RememberedQuestion `json:"questions,omitempty"`
	Answers     map[string]string    `json:"answers,omitempty"`

	By        string    `json:"by"` // the approver's Slack user id
	ByName    string    `json:"by_name,omitempty"`
	At        time.Time `json:"at"`               // a zero At becomes the time of Keep
	Expires   time.Time `json:"expires,omitzero"` // zero: until forgotten
	RequestID string    `json:"request_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Channel   string    `json:"channel,omitempty"` // where it was kept
	// Signature is the Ed25519 signature of the bot that kept it
	// (SignStanding); it decides only when it verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Live reports whether s applies at now: it has no expiry, or now is
// before it.
func (s Standing) Live(now time.Time) bool { return s.Expires.IsZero() || now.Before(s.Expires) }

// Validate checks s as Keep takes it.
func (s Standing) Validate() error {
	if strings.TrimSpace(s.Scope.Value) == "" {
		return invalid("%s %s without a scope value", s.Kind, s.ID)
	}
	if s.By == "" {
		return invalid("%s %s without who kept it", s.Kind, s.ID)
	}
	if !s.Expires.IsZero() && !s.Expires.After(s.At) {
		return invalid("%s %s expires before it was kept", s.Kind, s.ID)
	}
	switch s.Kind {
	case StandingGrant:
		return s.validateGrant()
	case StandingAnswer:
		return s.validateAnswer()
	}
	return invalid("standing rule of unknown kind %q", s.Kind)
}

func (s Standing) validateGrant() error {
	switch {
	case s.Scope.Kind != ScopeSession && s.Scope.Kind != ScopeRepo:
		return invalid("grant %s of scope %q", s.ID, s.Scope.Kind)
	case len(s.Rules) == 0:
		return invalid("grant %s without rules", s.ID)
	case s.Fingerprint != "" || len(s.Questions) > 0 || len(s.Answers) > 0:
		return invalid("grant %s with a question form's answers", s.ID)
	}
	return nil
}

func (s Standing) validateAnswer() error {
	switch {
	case s.Scope.Kind != ScopeRepo && s.Scope.Kind != ScopeChannel:
		return invalid("remembered answer of scope %q", s.Scope.Kind)
	case s.Scope.Kind == ScopeChannel && s.Scope.Token != "":
		return invalid("a channel scope names no token")
	case s.Fingerprint == "":
		return invalid("remembered answer without a fingerprint")
	case len(s.Questions) == 0:
		return invalid("remembered answer without questions")
	case len(s.Rules) > 0:
		return invalid("remembered answer with permission rules")
	case !s.Expires.IsZero():
		return invalid("a remembered answer does not expire")
	}
	for _, q := range s.Questions {
		if _, ok := s.Answers[q.Question]; !ok {
			return invalid("remembered answer without an answer to %q", q.Question)
		}
	}
	if len(s.Answers) != len(s.Questions) {
		return invalid("remembered answer with answers to questions it does not have")
	}
	return nil
}

// KeptAudit is the audit entry Keep appends for s.
func (s Standing) KeptAudit() AuditEntry {
	e := AuditEntry{At: s.At, RequestID: s.RequestID, SessionID: s.SessionID, By: s.By, ByName: s.ByName}
	s.fillAudit(&e, AuditGrantAdded, AuditAnswerRemembered)
	return e
}

// ForgottenAudit is the audit entry Forget appends when by forgets s.
func (s Standing) ForgottenAudit(by, byName string, at time.Time) AuditEntry {
	e := AuditEntry{At: at, By: by, ByName: byName}
	s.fillAudit(&e, AuditGrantForgotten, AuditAnswerForgotten)
	return e
}

// fillAudit names s in e, with grant or answer as its action.
func (s Standing) fillAudit(e *AuditEntry, grant, answer AuditAction) {
	if s.Kind == StandingGrant {
		e.Action, e.GrantID, e.Message = grant, s.ID, strings.Join(s.Rules, ", ")+" in "+s.Scope.Key()
		if !s.Expires.IsZero() {
			e.Message += " until " + s.Expires.UTC().Format(time.RFC3339)
		}
		return
	}
	e.Action, e.AnswerID, e.Kind, e.Tool, e.Message = answer, s.ID, KindQuestion, s.Tool, s.Scope.Key()
}

// Standings keeps standing rules. They are not subject to retention: an
// answer stays until it is forgotten or replaced; an expired grant may
// stay listed until it is forgotten or its backend drops it (Redis: at its
// expiry), so callers check Live.
type Standings interface {
	// Keep stores s and appends its KeptAudit entry, atomically, and
	// returns s as stored: an empty ID becomes a new one (a signed record
	// comes with its own, which its signature covers) and a zero At the
	// time of the call. An answer replaces the one kept for the same scope
	// and fingerprint. ErrInvalid when s fails Validate; ErrExists when
	// s.ID names another record of its kind.
	Keep(ctx context.Context, s Standing) (Standing, error)
	// LookupAnswer returns the answer kept for the fingerprint in scope.
	// ErrNotFound when there is none.
	LookupAnswer(ctx context.Context, scope Scope, fingerprint string) (Standing, error)
	// Kept returns every standing rule of kind, newest first.
	Kept(ctx context.Context, kind StandingKind) ([]Standing, error)
	// Forget removes the standing rule of kind with id and appends a
	// ForgottenAudit entry naming by, atomically; it returns what it
	// removed. ErrNotFound for an unknown id; ErrInvalid for an empty by.
	Forget(ctx context.Context, kind StandingKind, id, by, byName string) (Standing, error)
}

// The two kinds sign apart, each with the payload it had before they were
// one kind, so a record signed by an earlier release verifies.
const (
	grantDomain  = "slackgate grant v1\n"
	answerDomain = "slackgate answer v1\n"
)

// grantPayload is what a grant's signature covers: all of it, so its
// scope, rules, expiry and who added it cannot change.
type grantPayload struct {
	ID        string   `json:"id"`
	Scope     Scope    `json:"scope"`
	Rules     []string `json:"rules"`
	By        string   `json:"by"`
	ByName    string   `json:"by_name"`
	At        string   `json:"at"`
	Expires   string   `json:"expires"`
	RequestID string   `json:"request_id"`
	SessionID string   `json:"session_id"`
	Channel   string   `json:"channel"`
}

// answerPayload is what a remembered answer's signature covers: all of
// it, so neither what it answers (scope, form, tool), nor the answer, nor
// in whose name it answers (By) can change.
type answerPayload struct {
	ID          string               `json:"id"`
	Scope       Scope                `json:"scope"`
	Fingerprint string               `json:"fingerprint"`
	Tool        string               `json:"tool"`
	Questions   []RememberedQuestion `json:"questions"`
	Answers     map[string]string    `json:"answers"`
	By          string               `json:"by"`
	ByName      string               `json:"by_name"`
	Channel     string               `json:"channel"`
	RequestID   string               `json:"request_id"`
	SessionID   string               `json:"session_id"`
	At          string               `json:"at"`
}

// what names s in signing errors, as the payloads always did.
func (s Standing) what() string {
	if s.Kind == StandingAnswer {
		return "remembered answer " + s.ID
	}
	return string(s.Kind) + " " + s.ID
}

func standingPayloadOf(s Standing) ([]byte, error) {
	switch s.Kind {
	case StandingGrant:
		expires := ""
		if !s.Expires.IsZero() {
			expires = stamp(s.Expires)
		}
		return payloadOf(grantDomain, grantPayload{
			ID: s.ID, Scope: s.Scope, Rules: s.Rules, By: s.By, ByName: s.ByName, At: stamp(s.At), Expires: expires,
			RequestID: s.RequestID, SessionID: s.SessionID, Channel: s.Channel,
		})
	case StandingAnswer:
		if !s.Expires.IsZero() {
			return nil, invalid("a remembered answer does not expire")
		}
		// An empty list or map reads back from a store as it was written,
		// but sign both forms the same way all the same.
		qs := make([]RememberedQuestion, len(s.Questions))
		for i, q := range s.Questions {
			if len(q.Options) == 0 {
				q.Options = nil
			}
			qs[i] = q
		}
		answers := s.Answers
		if len(answers) == 0 {
			answers = nil
		}
		return payloadOf(answerDomain, answerPayload{
			ID: s.ID, Scope: s.Scope, Fingerprint: s.Fingerprint, Tool: s.Tool, Questions: qs, Answers: answers,
			By: s.By, ByName: s.ByName, Channel: s.Channel, RequestID: s.RequestID, SessionID: s.SessionID, At: stamp(s.At),
		})
	}
	return nil, invalid("standing rule of unknown kind %q", s.Kind)
}

// SignStanding signs all of s with key and stores the signature in
// s.Signature. The bot that keeps s signs it after setting its id and At
// (Keep then keeps both); ErrInvalid without either.
func SignStanding(key ed25519.PrivateKey, s *Standing) error {
	if s.ID == "" || s.At.IsZero() {
		return fmt.Errorf("store: sign %s: %w", s.what(), invalid("a signed %s needs its id and time set", s.Kind))
	}
	sig, err := signPayload(key, s.what(), func() ([]byte, error) { return standingPayloadOf(*s) })
	if err != nil {
		return err
	}
	s.Signature = sig
	return nil
}

// VerifyStanding checks that s carries a signature by pub's private key
// over all of it, as the kind it was read as. It returns an error wrapping
// ErrUnsigned or ErrBadSignature when s must not decide anything.
func VerifyStanding(pub ed25519.PublicKey, s Standing) error {
	return verifyPayload(pub, s.what(), s.Signature, func() ([]byte, error) { return standingPayloadOf(s) })
}
