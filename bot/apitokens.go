package bot

import (
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/slackgate/slackgate/bot/approvalapi"
)

// minAPITokenLen refuses tokens short enough to guess.
const minAPITokenLen = 24

// ParseAPITokens parses API_TOKENS, the approval API's tokens:
// comma-separated name:channel:token entries. Names are letters, digits,
// '-' and '_' and unique; channels are Slack channel ids, optionally
// followed by @ and the user id of the token's owner (C0CI@U0LEE), or a
// user id for a DM with that person (its owner); tokens are at least 24
// characters. Blank input gives none (the API is off).
func ParseAPITokens(s string) ([]approvalapi.Token, error) {
	var out []approvalapi.Token
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
		ch, owner, owned := strings.Cut(ch, "@")
		switch {
		case owned && (!isChannelID(ch) || !isUserID(owner)):
			return nil, fmt.Errorf("%w: API_TOKENS entry %q: an owner follows a channel id as @U…, like C0CI@U0LEE", ErrConfig, name)
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
		t := approvalapi.Token{Name: name, Channel: ch, Owner: owner, Hash: sha256.Sum256([]byte(tok))}
		if isUserID(ch) {
			t.Channel, t.User, t.Owner = "", ch, ch
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

func isUserID(id string) bool {
	return len(id) > 1 && (id[0] == 'U' || id[0] == 'W') && upperAlnum(id[1:])
}
