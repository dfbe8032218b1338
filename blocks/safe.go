package blocks

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/slackgate/slackgate/store"
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

// mask replaces a secret of a well-known shape (store.MaskSecrets).
const mask = store.SecretMask

// maskSecrets masks every secret of a known shape in s; the result is for
// display only.
func maskSecrets(s string) string { return store.MaskSecrets(s) }

// maskJSON masks secrets inside a JSON text (store.MaskSecretsJSON).
func maskJSON(raw json.RawMessage) json.RawMessage { return store.MaskSecretsJSON(raw) }

// shownAsIs reports whether s would be displayed exactly as it is: no
// secret masked and no invisible character escaped. A modal can only offer
// a value for editing when it is (see Editable).
func shownAsIs(s string) bool { return !hasInvisible(s) && maskSecrets(s) == s }
