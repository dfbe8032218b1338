package approvalapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// Token is one bearer token of the approval API: a name (it shows in
// logs and owns the requests made with it), where its sessions' threads
// go (a channel, or a DM with one person: its owner), and the token
// itself, kept only as its SHA-256. The bot parses them from API_TOKENS.
type Token struct {
	Name    string
	Channel string // a channel id (C…, G…); empty when User is set
	// User is the token's owner (U…, W…) when its threads go to a DM with
	// them (opened with conversations.open). It grants nothing: who may
	// decide a card is still APPROVERS alone.
	User string
	// Owner is the person the token stands for: User for a DM token, or
	// the user a channel token's entry names after its channel
	// (C0CI@U0LEE). A not_self rule never counts them; with such a rule
	// every token needs one.
	Owner string
	Hash  [sha256.Size]byte
}

// client is how the store names what tok reports or opens: the starter of
// its sessions and the reporter of its tool results.
func (t Token) client() string { return "api:" + t.Name }

// SessionPrefix starts the store id of every API session: it names the
// token, so requests are owned by it, and it can never be a UUID a
// Slack-started session has.
const SessionPrefix = "api."

// IsSession reports whether a store session was opened by the API.
func IsSession(id string) bool { return strings.HasPrefix(id, SessionPrefix) }

// sessionPrefix starts the store id of every session of tok.
func (t Token) sessionPrefix() string { return SessionPrefix + t.Name + "." }

// sessionID is the store id of a Claude session seen through tok.
func (t Token) sessionID(claudeSession string) string { return t.sessionPrefix() + claudeSession }

// tokenFor finds the token a bearer string is; every entry is compared in
// constant time, so the time taken says nothing about which came close.
func tokenFor(tokens []Token, bearer string) (Token, bool) {
	h := sha256.Sum256([]byte(bearer))
	var found Token
	ok := 0
	for _, t := range tokens {
		if subtle.ConstantTimeCompare(h[:], t.Hash[:]) == 1 {
			found = t
			ok = 1
		}
	}
	return found, ok == 1 && bearer != ""
}
