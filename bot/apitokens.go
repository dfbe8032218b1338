package bot

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// APIToken is one bearer token of the approval API: a name (it shows in
// logs and owns the requests made with it), where its sessions' threads
// go (a channel, or a DM with one person: its owner), and the token
// itself, kept only as its SHA-256.
type APIToken struct {
	Name    string
	Channel string // a channel id (C…, G…); empty when User is set
	// User is the token's owner (U…, W…) when its threads go to a DM with
	// them (opened with conversations.open). It grants nothing: who may
	// decide a card is still APPROVERS alone.
	User string
	Hash [sha256.Size]byte
}

// client is how the store names what tok reports or opens: the starter of
// its sessions and the reporter of its tool results.
func (t APIToken) client() string { return "api:" + t.Name }

// minAPITokenLen refuses tokens short enough to guess.
const minAPITokenLen = 24

// ParseAPITokens parses API_TOKENS: comma-separated name:channel:token
// entries. Names are letters, digits, '-' and '_' and unique; channels are
// Slack channel ids, or a user id for a DM with that person; tokens are at
// least 24 characters. Blank input gives
// none (the API is off).
func ParseAPITokens(s string) ([]APIToken, error) {
	var out []APIToken
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.SplitN(item, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%w: API_TOKENS entry is not name:channel:token", ErrConfig)
		}
		name, ch, tok := parts[0], parts[1], parts[2]
		switch {
		case !tokenName(name):
			return nil, fmt.Errorf("%w: API_TOKENS name %q: use letters, digits, - and _", ErrConfig, name)
		case seen[name]:
			return nil, fmt.Errorf("%w: API_TOKENS names %q twice", ErrConfig, name)
		case !isChannelID(ch) && !isUserID(ch):
			return nil, fmt.Errorf("%w: API_TOKENS entry %q: %q is not a Slack channel id (C…, G…) or user id (U…, W…)", ErrConfig, name, ch)
		case len(tok) < minAPITokenLen:
			return nil, fmt.Errorf("%w: API_TOKENS entry %q: the token must be at least %d characters (openssl rand -hex 32)", ErrConfig, name, minAPITokenLen)
		}
		seen[name] = true
		t := APIToken{Name: name, Channel: ch, Hash: sha256.Sum256([]byte(tok))}
		if isUserID(ch) {
			t.Channel, t.User = "", ch
		}
		out = append(out, t)
	}
	return out, nil
}

func tokenName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// tokenFor finds the token a bearer string is; every entry is compared in
// constant time, so the time taken says nothing about which came close.
func tokenFor(tokens []APIToken, bearer string) (APIToken, bool) {
	h := sha256.Sum256([]byte(bearer))
	var found APIToken
	ok := 0
	for _, t := range tokens {
		if subtle.ConstantTimeCompare(h[:], t.Hash[:]) == 1 {
			found = t
			ok = 1
		}
	}
	return found, ok == 1 && bearer != ""
}

func isUserID(id string) bool {
	return len(id) > 1 && (id[0] == 'U' || id[0] == 'W') && upperAlnum(id[1:])
}
