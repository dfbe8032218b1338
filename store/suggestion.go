package store

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// "Approve and allow…" on a card hands Claude Code back one of its own
// permission_suggestions, for the session. The request is in the store,
// where anyone who can write it can swap a suggestion after the card was
// posted; so the card names each choice by the digest of the suggestion
// it rendered (SuggestionDigest), the bot takes a click only while the
// request still holds that suggestion, and the side that asked (the
// worker, `slackgate hook`, `slackgate mcp`) passes a permission update
// on only when it is one of its own request's suggestions
// (CheckPermissions).

// ErrNotSuggested: a decision carries a permission update the request as
// its asker made it did not suggest (or that it asked not to offer).
var ErrNotSuggested = errors.New("permission update the request did not suggest")

// ForSession is s as "Approve and allow…" sends it back: applied to the
// session, whatever destination the CLI suggested (localSettings rules are
// ignored in an untrusted workspace; the session is where a rule always
// takes effect).
func (s Suggestion) ForSession() Suggestion {
	s.Destination = "session"
	return s
}

// suggestionDomain starts what a suggestion's digest covers.
const suggestionDomain = "slackgate suggestion v1\n"

// SuggestionDigest names s: 128 bits of SHA-256 over its JSON (every
// field, empty ones left out, so a suggestion that went through a store
// names itself the same), in URL-safe base64. Two suggestions with the
// same digest grant the same.
func SuggestionDigest(s Suggestion) string {
	body, err := json.Marshal(s)
	if err != nil {
		return "" // a struct of strings always encodes
	}
	sum := sha256.Sum256(append([]byte(suggestionDomain), body...))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// CheckPermissions checks perms, the permission updates a decision of r
// would hand Claude Code, against r as its asker made it: each must be one
// of r's suggestions applied to the session (ForSession), and a request
// that asked not to offer "Always allow", or is no tool call, has none.
// It fails with ErrNotSuggested.
func CheckPermissions(r Request, perms []Suggestion) error {
	if len(perms) == 0 {
		return nil
	}
	if r.SuppressAlwaysAllow || r.Kind != KindTool {
		return fmt.Errorf("store: request %s: %w: it offers no \"Always allow\"", r.ID, ErrNotSuggested)
	}
	offered := make(map[string]bool, len(r.Suggestions))
	for _, s := range r.Suggestions {
		offered[SuggestionDigest(s.ForSession())] = true
	}
	for _, p := range perms {
		if p.Destination != "session" || !offered[SuggestionDigest(p)] {
			return fmt.Errorf("store: request %s: %w (%s for %s)", r.ID, ErrNotSuggested, p.Type, p.Destination)
		}
	}
	return nil
}

// Suggestion is one of Claude Code's permission_suggestions (a PermissionUpdate
// on the wire), with every field the protocol defines, so an accepted one
// goes back in updatedPermissions exactly as it came.
type Suggestion struct {
	Type        string           `json:"type"` // addRules, replaceRules, removeRules, setMode, addDirectories, removeDirectories
	Rules       []SuggestionRule `json:"rules,omitempty"`
	Behavior    string           `json:"behavior,omitempty"`
	Mode        string           `json:"mode,omitempty"`
	Directories []string         `json:"directories,omitempty"`
	Destination string           `json:"destination,omitempty"`
}

// SuggestionRule is one rule of an addRules-style suggestion.
type SuggestionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// String is the rule in Claude Code's permission-rule syntax:
// "Bash(npm test:*)", or the bare tool name.
func (r SuggestionRule) String() string {
	if r.RuleContent == "" {
		return r.ToolName
	}
	return r.ToolName + "(" + r.RuleContent + ")"
}
