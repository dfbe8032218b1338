package store

import (
	"context"
	"strings"
	"time"
	"unicode"
)

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
	// AuditChainReset: an operator (By) acknowledged a break of the audit
	// chain (`slackgate audit reset`); Message says why and what the
	// reset supersedes. The reset checkpoint that follows seals it.
	AuditChainReset AuditAction = "chain_reset"
)

// Valid reports whether a is one of the known actions.
func (a AuditAction) Valid() bool {
	switch a {
	case AuditCreated, AuditSettled, AuditRefused, AuditAnsweredFromMemory, AuditAnswerRemembered, AuditAnswerForgotten, AuditToolRan,
		AuditSessionRefused, AuditInputRefused, AuditAnswerRefused, AuditModeChanged, AuditGrantAdded, AuditGrantForgotten,
		AuditReminded, AuditEscalated, AuditChainReset:
		return true
	}
	return false
}

// appendable reports whether an entry of action a is appended on its own
// (AppendAudit), because no store transition writes it.
func (a AuditAction) appendable() bool {
	switch a {
	case AuditToolRan, AuditSessionRefused, AuditInputRefused, AuditAnswerRefused, AuditModeChanged, AuditReminded, AuditEscalated,
		AuditChainReset:
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
	// and WorkDir its working directory, filled in by the store from the
	// session when the caller left them empty (an export filters and
	// links by them).
	Channel  string `json:"channel,omitempty"`
	ThreadTS string `json:"thread_ts,omitempty"`
	WorkDir  string `json:"workdir,omitempty"`
	// Input and InputSHA256 say what a request's entry was about
	// (AuditInput): the command, path or other argument, secrets masked
	// and cut to MaxAuditInput characters, and the digest of the whole
	// input, secrets masked. A settlement records the input that ran:
	// the one a person edited, when they did.
	Input       string `json:"input,omitempty"`
	InputSHA256 string `json:"input_sha256,omitempty"`
	// Approvers names everyone who approved a request that needed several
	// (AuditApprovers): all of them when it was allowed, those before a
	// deny or an expiry otherwise. By is who settled it.
	Approvers string `json:"approvers,omitempty"`
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
	case AuditChainReset:
		if a.By == "" || a.Message == "" {
			return invalid("chain_reset audit entry without who reset it or why")
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

// Audit is the append-only audit log. The transitions that a request,
// an answer or a grant goes through append their own entries, atomically
// with the transition; the chain that links them is AuditChain's.
type Audit interface {
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
}

// AuditApprovers names each approver of as, in order: "name (id)", or the
// id alone, joined by ", ", each name cut to 80 characters with the
// characters that would make the list ambiguous ("(", ")", ",", line
// breaks) left out.
func AuditApprovers(as []Approval) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		id := strings.Map(plainListRune, a.By)
		name := strings.TrimSpace(cutRunes(strings.Map(plainListRune, a.ByName), 80))
		if name == "" {
			parts = append(parts, id)
			continue
		}
		parts = append(parts, name+" ("+id+")")
	}
	return strings.Join(parts, ", ")
}

func plainListRune(r rune) rune {
	if r == '(' || r == ')' || r == ',' || unicode.IsControl(r) {
		return -1
	}
	return r
}
