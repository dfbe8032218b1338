package bot

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"
)

// APIToken is one bearer token of the approval API: a name (it shows in
// logs and owns the requests made with it), the channel its sessions'
// threads go to, and the token itself, kept only as its SHA-256.
type APIToken struct {
	Name    string
	Channel string
	Hash    [sha256.Size]byte
}

// minAPITokenLen refuses tokens short enough to guess.
const minAPITokenLen = 24

// ParseAPITokens parses API_TOKENS: comma-separated name:channel:token
// entries. Names are letters, digits, '-' and '_' and unique; channels are
// Slack channel ids; tokens are at least 24 characters. Blank input gives
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
		case !isChannelID(ch):
			return nil, fmt.Errorf("%w: API_TOKENS entry %q: %q is not a Slack channel id (C…, G…)", ErrConfig, name, ch)
		case len(tok) < minAPITokenLen:
			return nil, fmt.Errorf("%w: API_TOKENS entry %q: the token must be at least %d characters (openssl rand -hex 32)", ErrConfig, name, minAPITokenLen)
		}
		seen[name] = true
		out = append(out, APIToken{Name: name, Channel: ch, Hash: sha256.Sum256([]byte(tok))})
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
