package blocks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape makes arbitrary text safe inside Slack mrkdwn: &, < and > become
// entities, so text taken from a tool input can never ping (<!channel>,
// <@U…>) or fake a link (<https://x|y>). Slack shows the entities as the
// original characters.
func Escape(s string) string {
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
	s = cut(s, max)
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

// clip keeps the first lines of raw that fit in maxLines lines and maxRunes
// runes (after escaping); it returns the kept text and a marker saying how
// much was left out ("" when nothing was).
func clip(raw string, maxLines, maxRunes int) (kept string, marker string) {
	lines := strings.Split(raw, "\n")
	var b strings.Builder
	used, n := 0, 0
	for n < len(lines) && n < maxLines {
		safe := codeSafe(lines[n])
		add := utf8.RuneCountInString(safe) + 1
		if used+add > maxRunes {
			if n == 0 { // one huge line: keep its start
				b.WriteString(cutSafe(safe, maxRunes))
				rest := utf8.RuneCountInString(raw) - utf8.RuneCountInString(cut(lines[0], maxRunes))
				return b.String(), fmt.Sprintf("… %s more characters", thousands(rest))
			}
			break
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(safe)
		used += add
		n++
	}
	if left := len(lines) - n; left > 0 {
		unit := "lines"
		if left == 1 {
			unit = "line"
		}
		return b.String(), fmt.Sprintf("… %s more %s", thousands(left), unit)
	}
	return b.String(), ""
}

// cutSafe shortens escaped text without splitting an entity (&amp;).
func cutSafe(safe string, max int) string {
	s := cut(safe, max)
	if i := strings.LastIndexByte(s, '&'); i >= 0 && !strings.Contains(s[i:], ";") {
		s = s[:i] + "…"
	}
	return s
}

const attachedNote = " — full input attached in the thread"

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
	placeholder = "\x00"
)

// Markdown converts CommonMark-ish text (what Claude writes) into Slack
// mrkdwn: **bold** → *bold*, *italic* → _italic_, ~~strike~~ → ~strike~,
// headings → bold lines, [text](http…) → <url|text> (http and https only),
// list bullets → •, code fences kept. Everything outside links is escaped, so
// the text cannot ping anyone or fake a link.
func Markdown(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
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
		text, url := p[1], p[2]
		if !(strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")) ||
			strings.ContainsAny(url, "<>|") {
			return m
		}
		text = strings.ReplaceAll(Escape(text), "|", "¦")
		return keep("<" + strings.ReplaceAll(url, "&", "&amp;") + "|" + text + ">")
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
		if head == "" {
			break
		}
		out = append(out, head)
		line = line[len(head):]
	}
	return append(out, line)
}
