package store

import (
	"encoding/json"
	"regexp"
)

// Secrets of well-known shapes in what Claude asks to run (a token in a
// command, a key in a file) are masked wherever slackgate shows it or
// records it: on a card, in the audit channel, in the audit log. The
// masking is for display and record only; what Claude receives is never
// changed by it.

// SecretMask replaces a secret MaskSecrets finds.
const SecretMask = "••••"

// shellMeta are characters a masked value may never contain: a mask hides
// a literal value, never something the shell would act on ($(…), ;, |, …).
const shellMeta = "\\s\"'<>;|&$()`\\\\{}\\[\\],*?!#"

// secretRules masks secrets of well-known shapes. Each keeps the groups
// before the secret (a recognisable prefix) and replaces the secret group
// with the mask; the order matters (sk-ant- before sk-).
var secretRules = []struct {
	re   *regexp.Regexp
	keep string // replacement: the kept groups around the mask
}{
	// A PEM private key: only lines of base64 (or the two PEM header
	// lines) between the markers, so a command line cannot hide inside.
	{regexp.MustCompile(`(-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY-----)(?:(?:\\r|\r)?(?:\\n|\n)(?:[A-Za-z0-9+/=]{1,80}|Proc-Type: [0-9A-Z,]+|DEK-Info: [A-Z0-9,-]+)?){2,}?((?:\\r|\r)?(?:\\n|\n)-----END [A-Z0-9 ]{0,30}PRIVATE KEY-----)`), "${1}" + SecretMask + "${2}"},
	{regexp.MustCompile(`\b((?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA))[A-Z0-9]{16}\b`), "${1}" + SecretMask},
	{regexp.MustCompile(`\b(gh[pousr]_)[A-Za-z0-9]{20,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`\b(github_pat_)[A-Za-z0-9_]{20,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`\b(xox[abposre]-|xapp-)[A-Za-z0-9-]{8,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`\b(sk-ant-)[A-Za-z0-9_-]{8,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`\b(sk-(?:proj-|svcacct-)?)[A-Za-z0-9_-]{20,}`), "${1}" + SecretMask},
	// Authorization: <scheme> <credentials>, or a bare credential long
	// enough not to be a scheme word (so masking twice changes nothing).
	{regexp.MustCompile(`(?i)\b(authorization"?\s*[:=]\s*"?[a-z]+ )[A-Za-z0-9._~+/=-]{4,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`(?i)\b(authorization"?\s*[:=]\s*"?)[A-Za-z0-9._~+/=-]{12,}`), "${1}" + SecretMask},
	{regexp.MustCompile(`(?i)\b((?:bearer|basic) )[A-Za-z0-9._~+/=-]{8,}`), "${1}" + SecretMask},
	// scheme://user:password@host
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]{0,20}://[^` + shellMeta + `/:@]{1,200}:)[^` + shellMeta + `/@]{1,200}(@)`), "${1}" + SecretMask + "${2}"},
	// NAME_TOKEN=…, *_SECRET=…, *_KEY=…, PASSWORD=… (also "NAME_TOKEN": "…")
	{regexp.MustCompile(`(?i)\b((?:(?:[a-z0-9]+_)+(?:token|secret|key|password|passwd|pwd|credentials?)|token|secret|password|passwd|apikey)"?\s*[=:]\s*["']?)[^` + shellMeta + `:]{1,500}`), "${1}" + SecretMask},
}

// MaskSecrets masks every secret of a known shape in s: what a card, an
// audit line and an audit entry show of a tool's input.
func MaskSecrets(s string) string {
	for _, rule := range secretRules {
		s = rule.re.ReplaceAllString(s, rule.keep)
	}
	return s
}

// MaskSecretsJSON masks secrets inside a JSON text, keeping its key
// order. The masks and kept prefixes hold no quote, backslash or control
// character; a rule whose matches would still break the JSON (a masked
// bare value) is left out here, and MaskSecrets on what is shown catches
// it line by line.
func MaskSecretsJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return raw
	}
	s := string(raw)
	for _, rule := range secretRules {
		if m := rule.re.ReplaceAllString(s, rule.keep); m != s && json.Valid([]byte(m)) {
			s = m
		}
	}
	return json.RawMessage(s)
}
