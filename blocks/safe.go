package blocks

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Text that reaches Slack from a tool input, a question, a plan or Claude's
// prose passes two display-only filters here: invisible and bidirectional
// characters become visible escapes, and secrets of well-known shapes are
// masked. Neither ever touches what Claude receives: decisions are built
// from the request as stored, never from rendered text.

// invisibleMark opens the visible form of an invisible character
// (⟦U+202E⟧). The card scans its own output for it to raise the warning, so
// every path that shows input text is covered by the one escaping path.
const invisibleMark = "⟦U+"

// invisible reports whether r would be invisible or reorder text when
// Slack shows it: every Default_Ignorable_Code_Point (zero-width and bidi
// controls, the BOM, tag characters, variation selectors, the Hangul
// fillers, the Khmer inherent vowels and the code points Unicode reserves
// as ignorable), every other format character, control characters other
// than newline and tab, line and paragraph separators, and the blank
// braille pattern. Go has no table of the derived property; it is the
// union of Cf, Variation_Selector and Other_Default_Ignorable_Code_Point
// less a few visible format characters, so the union covers it.
func invisible(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x7f:
		return r < ' '
	case r == 0x2800:
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// emojiStyle is VARIATION SELECTOR-16, which asks for the emoji look of
// the symbol before it (⚠️ is U+26A0 U+FE0F).
const emojiStyle = '\uFE0F'

// hidden reports whether r, after prev (0 at the start of a text), is
// escaped: every invisible character, except one VS16 right after a symbol
// with an emoji look. ⚠️ and ✔️ are common in commands and Claude's prose,
// and a warning on all of them would teach people to ignore it; one such
// selector per visible symbol can carry a bit, never a hidden run of
// bytes. Every other selector (a payload hides in U+FE00–FE0E and
// U+E0100–E01EF), a second VS16, a keycap's (a digit would carry a bit)
// and the joiner of emoji sequences (👩⟦U+200D⟧💻 still reads) are escaped.
func hidden(prev, r rune) bool {
	if r == emojiStyle {
		return !emojiBase(prev)
	}
	return invisible(r)
}

// emojiBase reports whether VS16 may follow r: a visible symbol beyond
// ASCII and Latin-1 (© and ® aside), or one of the few punctuation marks
// and letters Unicode gives an emoji look (ℹ ‼ ⁉ 〰 〽).
func emojiBase(r rune) bool {
	switch r {
	case 0x00A9, 0x00AE, 0x2139, 0x203C, 0x2049, 0x3030, 0x303D:
		return true
	}
	return r >= 0x2000 && unicode.In(r, unicode.So, unicode.Sm) && !invisible(r)
}

func visibleForm(r rune) string { return fmt.Sprintf("%s%04X⟧", invisibleMark, r) }

// hasInvisible reports whether s holds a character visible() would escape.
func hasInvisible(s string) bool {
	prev := rune(0)
	for _, r := range s {
		if hidden(prev, r) {
			return true
		}
		prev = r
	}
	return false
}

// visible replaces every hidden character with its escape.
func visible(s string) string {
	if !hasInvisible(s) {
		return s
	}
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		if hidden(prev, r) {
			b.WriteString(visibleForm(r))
		} else {
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

const mask = "••••"

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
	{regexp.MustCompile(`(-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY-----)(?:(?:\\r|\r)?(?:\\n|\n)(?:[A-Za-z0-9+/=]{1,80}|Proc-Type: [0-9A-Z,]+|DEK-Info: [A-Z0-9,-]+)?){2,}?((?:\\r|\r)?(?:\\n|\n)-----END [A-Z0-9 ]{0,30}PRIVATE KEY-----)`), "${1}" + mask + "${2}"},
	{regexp.MustCompile(`\b((?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|AGPA))[A-Z0-9]{16}\b`), "${1}" + mask},
	{regexp.MustCompile(`\b(gh[pousr]_)[A-Za-z0-9]{20,}`), "${1}" + mask},
	{regexp.MustCompile(`\b(github_pat_)[A-Za-z0-9_]{20,}`), "${1}" + mask},
	{regexp.MustCompile(`\b(xox[abposre]-|xapp-)[A-Za-z0-9-]{8,}`), "${1}" + mask},
	{regexp.MustCompile(`\b(sk-ant-)[A-Za-z0-9_-]{8,}`), "${1}" + mask},
	{regexp.MustCompile(`\b(sk-(?:proj-|svcacct-)?)[A-Za-z0-9_-]{20,}`), "${1}" + mask},
	// Authorization: <scheme> <credentials>, or a bare credential long
	// enough not to be a scheme word (so masking twice changes nothing).
	{regexp.MustCompile(`(?i)\b(authorization"?\s*[:=]\s*"?[a-z]+ )[A-Za-z0-9._~+/=-]{4,}`), "${1}" + mask},
	{regexp.MustCompile(`(?i)\b(authorization"?\s*[:=]\s*"?)[A-Za-z0-9._~+/=-]{12,}`), "${1}" + mask},
	{regexp.MustCompile(`(?i)\b((?:bearer|basic) )[A-Za-z0-9._~+/=-]{8,}`), "${1}" + mask},
	// scheme://user:password@host
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]{0,20}://[^` + shellMeta + `/:@]{1,200}:)[^` + shellMeta + `/@]{1,200}(@)`), "${1}" + mask + "${2}"},
	// NAME_TOKEN=…, *_SECRET=…, *_KEY=…, PASSWORD=… (also "NAME_TOKEN": "…")
	{regexp.MustCompile(`(?i)\b((?:(?:[a-z0-9]+_)+(?:token|secret|key|password|passwd|pwd|credentials?)|token|secret|password|passwd|apikey)"?\s*[=:]\s*["']?)[^` + shellMeta + `:]{1,500}`), "${1}" + mask},
}

// maskSecrets masks every secret of a known shape in s; the result is for
// display only.
func maskSecrets(s string) string {
	for _, rule := range secretRules {
		s = rule.re.ReplaceAllString(s, rule.keep)
	}
	return s
}

// maskJSON masks secrets inside a JSON text, keeping its key order. The
// masks and kept prefixes hold no quote, backslash or control character; a
// rule whose matches would still break the JSON (a masked bare value) is
// left out here, and Escape masks what it would have caught line by line.
func maskJSON(raw json.RawMessage) json.RawMessage {
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

// shownAsIs reports whether s would be displayed exactly as it is: no
// secret masked and no invisible character escaped. A modal can only offer
// a value for editing when it is (see Editable).
func shownAsIs(s string) bool { return !hasInvisible(s) && maskSecrets(s) == s }
