package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// A remembered answer is an approver's answer to a question form
// (AskUserQuestion) kept for a scope, a repository or a channel: the next
// time the same form comes from a session in that scope, the bot answers it
// with the remembered choice instead of posting a card. Tool approvals are
// never remembered here ("Always allow" is Claude Code's own).

// ScopeKind says where a remembered answer applies.
type ScopeKind string

const (
	ScopeRepo    ScopeKind = "repo"    // sessions working in one directory
	ScopeChannel ScopeKind = "channel" // sessions whose thread is in one channel
)

// AnswerScope is where a remembered answer applies. For ScopeRepo, Value is
// the session's working directory, and Token, for a session that reached
// slackgate through the approval API, the name of its token: a directory a
// client reports is its own word, so it only ever meets answers remembered
// for that token's sessions. For ScopeChannel, Value is the channel id.
type AnswerScope struct {
	Kind  ScopeKind `json:"kind"`
	Value string    `json:"value"`
	Token string    `json:"token,omitempty"`
}

// Key is the scope as one string, unique per scope.
func (s AnswerScope) Key() string {
	if s.Token != "" {
		return string(s.Kind) + "@" + s.Token + ":" + s.Value
	}
	return string(s.Kind) + ":" + s.Value
}

// Validate checks the scope has a known kind and a value.
func (s AnswerScope) Validate() error {
	switch {
	case s.Kind != ScopeRepo && s.Kind != ScopeChannel:
		return invalid("answer scope of unknown kind %q", s.Kind)
	case strings.TrimSpace(s.Value) == "":
		return invalid("%s answer scope without a value", s.Kind)
	case s.Kind == ScopeChannel && s.Token != "":
		return invalid("a channel scope names no token")
	}
	return nil
}

// RememberedQuestion is one question of a remembered form, as far as it
// decides the form's fingerprint.
type RememberedQuestion struct {
	Header      string   `json:"header,omitempty"`
	Question    string   `json:"question"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Options     []string `json:"options"` // the option labels, in order
}

// RememberedAnswer is an answer kept for a question form in a scope.
type RememberedAnswer struct {
	ID          string      `json:"id"` // set by Remember when empty; a bot sets it before signing
	Scope       AnswerScope `json:"scope"`
	Fingerprint string      `json:"fingerprint"` // QuestionFingerprint of the form
	Tool        string      `json:"tool"`
	// Questions are the form's questions (for people: the App Home, the
	// CLI); Answers maps each question text to the chosen labels joined by
	// ", ", or to free text, as Decision.Answers.
	Questions []RememberedQuestion `json:"questions"`
	Answers   map[string]string    `json:"answers"`
	By        string               `json:"by"` // the approver's Slack user id
	ByName    string               `json:"by_name,omitempty"`
	Channel   string               `json:"channel,omitempty"` // where it was remembered
	RequestID string               `json:"request_id,omitempty"`
	SessionID string               `json:"session_id,omitempty"`
	At        time.Time            `json:"at"` // a zero At becomes the time of the call
	// Signature is the Ed25519 signature of the bot that remembered the
	// answer (see SignAnswer); a bot answers with it only when it
	// verifies.
	Signature []byte `json:"signature,omitempty"`
}

// Validate checks a as Remember takes it: a valid scope, a fingerprint,
// questions, an answer for each of them, and who remembered it.
func (a RememberedAnswer) Validate() error {
	if err := a.Scope.Validate(); err != nil {
		return err
	}
	switch {
	case a.Fingerprint == "":
		return invalid("remembered answer without a fingerprint")
	case len(a.Questions) == 0:
		return invalid("remembered answer without questions")
	case a.By == "":
		return invalid("remembered answer without who remembered it")
	}
	for _, q := range a.Questions {
		if _, ok := a.Answers[q.Question]; !ok {
			return invalid("remembered answer without an answer to %q", q.Question)
		}
	}
	if len(a.Answers) != len(a.Questions) {
		return invalid("remembered answer with answers to questions it does not have")
	}
	return nil
}

// QuestionFingerprint identifies a question form: the tool, and each
// question's header, text, whether it takes several answers and its option
// labels in order. Descriptions are left out (rewording one does not
// change what is asked); anything else changed is another question. It
// also returns the questions it covered. It fails for an input that is not
// a form with at least one question.
func QuestionFingerprint(tool string, input json.RawMessage) (string, []RememberedQuestion, error) {
	var in struct {
		Questions []struct {
			Question    string `json:"question"`
			Header      string `json:"header"`
			MultiSelect bool   `json:"multiSelect"`
			Options     []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	if err := json.Unmarshal(input, &in); err != nil || len(in.Questions) == 0 {
		return "", nil, invalid("input of %s is not a question form", tool)
	}
	qs := make([]RememberedQuestion, len(in.Questions))
	for i, q := range in.Questions {
		qs[i] = RememberedQuestion{Header: q.Header, Question: q.Question, MultiSelect: q.MultiSelect, Options: []string{}}
		for _, o := range q.Options {
			qs[i].Options = append(qs[i].Options, o.Label)
		}
	}
	canon, err := json.Marshal(struct {
		Tool      string               `json:"tool"`
		Questions []RememberedQuestion `json:"questions"`
	}{tool, qs})
	if err != nil {
		return "", nil, fmt.Errorf("store: fingerprint of %s: %w", tool, err)
	}
	sum := sha256.Sum256(append([]byte("slackgate question v1\n"), canon...))
	return hex.EncodeToString(sum[:]), qs, nil
}

// RememberedAudit is the audit entry Remember appends for a.
func RememberedAudit(a RememberedAnswer) AuditEntry {
	return AuditEntry{
		At: a.At, Action: AuditAnswerRemembered, AnswerID: a.ID, RequestID: a.RequestID, SessionID: a.SessionID,
		Kind: KindQuestion, Tool: a.Tool, By: a.By, ByName: a.ByName, Message: a.Scope.Key(),
	}
}

// ForgottenAudit is the audit entry ForgetAnswer appends when by forgets a.
func ForgottenAudit(a RememberedAnswer, by, byName string, at time.Time) AuditEntry {
	return AuditEntry{
		At: at, Action: AuditAnswerForgotten, AnswerID: a.ID, Kind: KindQuestion, Tool: a.Tool,
		By: by, ByName: byName, Message: a.Scope.Key(),
	}
}

// Answers keeps remembered answers. They are not subject to retention:
// one stays until it is forgotten or replaced.
type Answers interface {
	// Remember stores a, replacing the answer remembered for the same
	// scope and fingerprint if there is one, and appends a RememberedAudit
	// entry, atomically. An empty a.ID becomes a new id (a signed answer
	// comes with its own, which its signature covers); a zero a.At becomes
	// the time of the call. It returns a as stored. ErrInvalid when a
	// fails Validate; ErrExists when a.ID names another stored answer.
	Remember(ctx context.Context, a RememberedAnswer) (RememberedAnswer, error)
	// LookupAnswer returns the answer remembered for the fingerprint in
	// scope. ErrNotFound when there is none.
	LookupAnswer(ctx context.Context, scope AnswerScope, fingerprint string) (RememberedAnswer, error)
	// ListAnswers returns every remembered answer, newest first.
	ListAnswers(ctx context.Context) ([]RememberedAnswer, error)
	// ForgetAnswer removes the answer with id and appends a
	// ForgottenAudit entry naming by, atomically; it returns the answer
	// removed. ErrNotFound for an unknown id; ErrInvalid for an empty by.
	ForgetAnswer(ctx context.Context, id, by, byName string) (RememberedAnswer, error)
}
