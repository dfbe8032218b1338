package policy

import (
	"encoding/hex"
	"time"
)

// Action is what a rule, or the policy as a whole, does with a request.
// The zero value is Ask: a person decides.
type Action uint8

const (
	Ask   Action = iota // a card asks people (AskSpec says whom and how many)
	Allow               // it runs without a card
	Deny                // Claude is told no, without a card
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "ask"
}

// AskSpec is who must approve a request an ask rule matched, and how
// the card is followed up.
type AskSpec struct {
	// Approvers are Slack user (U…, W…) and user group (S…) ids, or "*"
	// for anyone who sees the card; nil means APPROVERS.
	Approvers []string
	// Count is how many distinct people must approve (at least 1); any
	// deny wins.
	Count int
	// NotSelf: the session's starter, or the approval API token's owner,
	// never counts among them.
	NotSelf bool
	// Notify are more channels (C…, G…) or people (U…, W…) the card is
	// announced to.
	Notify []string
	// RemindAfter, when not zero, is when a pending card is announced again.
	RemindAfter time.Duration
	// EscalateAfter, when not zero, is when EscalateTo (user and user
	// group ids) may approve too.
	EscalateAfter time.Duration
	EscalateTo    []string
}

// Rule is one rule of the policy file.
type Rule struct {
	Name string
	Line int
	// Match are the rule's match entries; the rule matches a request
	// when one of them does (see the package doc for compound commands).
	Match []Matcher
	// Channels, Repos and Tokens limit the rule to sessions in these
	// channels, working directories and approval API tokens; empty is any.
	Channels []string
	Repos    []string
	Tokens   []string
	Action   Action
	// Message is what Claude is told when the rule denies.
	Message string
	// Ask is whom the card asks when the rule asks.
	Ask AskSpec

	repos []pathPattern
}

// RuleRef names the rule that decided.
type RuleRef struct {
	Name string
	Line int
}

// Verdict is what the policy does with one request.
type Verdict struct {
	Action Action
	// Rule is the rule that decided; nil when none matched, and then the
	// request asks APPROVERS once (Ask.Count 1, Ask.Approvers nil).
	Rule *RuleRef
	// Message is what Claude is told on a deny.
	Message string
	// Ask is whom to ask, when Action is Ask.
	Ask AskSpec
	// Matcher is the match entry (or entries) that matched, as written.
	Matcher string
	// Subject is what it matched: the command, the part of a compound
	// command, the path or the host.
	Subject string
}

// Policy is a parsed policy file. It is immutable and safe for
// concurrent use; a reload parses a new one.
type Policy struct {
	file     string
	digest   [32]byte
	rules    []*Rule
	bypass   []string
	warnings []Problem
}

// File is the name the policy was parsed under.
func (p *Policy) File() string { return p.file }

// Digest is the SHA-256 of the file's bytes, in hex: audit entries
// record which policy decided.
func (p *Policy) Digest() string { return hex.EncodeToString(p.digest[:]) }

// Rules are the rules in the order they are tried.
func (p *Policy) Rules() []*Rule { return p.rules }

// BypassPermissions are the people (user and user group ids) the file
// lets set bypassPermissions from Slack; empty means nobody.
func (p *Policy) BypassPermissions() []string { return p.bypass }

// Warnings are what does not stop the policy but is likely a mistake:
// rules shadowed by an earlier one, tool names no Claude Code has.
func (p *Policy) Warnings() []Problem { return p.warnings }
