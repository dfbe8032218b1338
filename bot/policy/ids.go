package policy

import "strings"

// Slack ids as the policy file names them: users U…/W…, user groups S…,
// channels C…/G… (and D… for a direct message).

func slackID(id string, prefixes string) bool {
	if len(id) < 2 || len(id) > 32 {
		return false
	}
	ok := false
	for i := 0; i < len(prefixes); i++ {
		ok = ok || id[0] == prefixes[i]
	}
	for i := 1; i < len(id); i++ {
		c := id[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return ok
}

func isUser(id string) bool         { return slackID(id, "UW") }
func isGroup(id string) bool        { return slackID(id, "S") }
func isPerson(id string) bool       { return isUser(id) || isGroup(id) }
func isScopeChannel(id string) bool { return slackID(id, "CGD") }
func isNotifyTarget(id string) bool { return slackID(id, "CGUW") }

// nameOf reports whether s is 1 to 64 letters, digits and the extra bytes.
func nameOf(s, extra string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && strings.IndexByte(extra, c) < 0 {
			return false
		}
	}
	return true
}
