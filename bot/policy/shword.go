package policy

import "strings"

// word reads one word: quotes, escapes and every substitution in it
// (whose commands are recorded as parts of their own).
func (p *shParser) word() word {
	start := p.pos
	var lit strings.Builder
	var w word
	var brace, braceSep, bracket bool
	for p.more() {
		c := p.src[p.pos]
		if (c == '<' || c == '>') && p.pos == start && p.peek(1) == '(' {
			p.pos += 2 // process substitution
			p.nested()
			w.expands = true
			lit.WriteString(p.src[start:min(p.pos, len(p.src))])
			continue
		}
		if delimiter(c) {
			break
		}
		switch c {
		case '\\':
			p.escape(&lit)
		case '\'':
			end := strings.IndexByte(p.src[p.pos+1:], '\'')
			if end < 0 {
				p.fail("unclosed '")
				break
			}
			lit.WriteString(p.src[p.pos+1 : p.pos+1+end])
			p.pos += end + 2
		case '"':
			p.dquote(&lit, &w)
		case '`':
			p.backtick(&lit)
			w.expands = true
		case '$':
			p.dollar(&lit, &w, false)
		default:
			switch {
			case c == '*' || c == '?':
				w.glob = true
			case c == '[':
				bracket = true
			case c == ']' && bracket:
				w.glob = true
			case c == '{':
				brace = true
			case c == ',' && brace:
				braceSep = true
			case c == '.' && brace && p.peek(1) == '.':
				braceSep = true
			case c == '}' && brace && braceSep:
				w.glob = true
			}
			lit.WriteByte(c)
			p.pos++
		}
	}
	p.pos = min(p.pos, len(p.src))
	w.raw, w.lit = p.src[start:p.pos], lit.String()
	return w
}

// escape reads a backslash outside quotes.
func (p *shParser) escape(lit *strings.Builder) {
	switch next := p.peek(1); {
	case p.pos+1 >= len(p.src):
		lit.WriteByte('\\')
		p.pos++
	case next == '\n':
		p.pos += 2
	default:
		lit.WriteByte(next)
		p.pos += 2
	}
}

// dquote reads a double-quoted string, substitutions included.
func (p *shParser) dquote(lit *strings.Builder, w *word) {
	p.pos++
	for p.err == "" {
		if p.pos >= len(p.src) {
			p.fail(`unclosed "`)
			return
		}
		switch c := p.src[p.pos]; c {
		case '"':
			p.pos++
			return
		case '\\':
			switch next := p.peek(1); next {
			case '$', '`', '"', '\\':
				lit.WriteByte(next)
				p.pos += 2
			case '\n':
				p.pos += 2
			default:
				lit.WriteByte('\\')
				p.pos++
			}
		case '$':
			p.dollar(lit, w, true)
		case '`':
			p.backtick(lit)
			w.expands = true
		default:
			lit.WriteByte(c)
			p.pos++
		}
	}
}

// dollar reads what starts with $: $(…), $((…)), ${…}, $'…', $"…", $NAME
// or a lone $. Expansions are kept as written in lit.
func (p *shParser) dollar(lit *strings.Builder, w *word, quoted bool) {
	start := p.pos
	switch next := p.peek(1); {
	case next == '(' && p.peek(2) == '(':
		p.pos += 3
		p.arith()
	case next == '(':
		p.pos += 2
		p.nested()
	case next == '{':
		p.pos += 2
		p.braces()
	case next == '\'' && !quoted:
		p.pos += 2
		for p.pos < len(p.src) && p.src[p.pos] != '\'' {
			if p.src[p.pos] == '\\' {
				p.pos++
			}
			p.pos++
		}
		if p.pos >= len(p.src) {
			p.pos = len(p.src)
			p.fail("unclosed $'")
			return
		}
		p.pos++
	case next == '"' && !quoted:
		p.pos++
		p.dquote(lit, w)
		return
	case validName(string(next)) || strings.IndexByte("0123456789@*#?-$!", next) >= 0 && next != 0:
		p.pos += 2
		for validName(string(next)) && p.pos < len(p.src) && validName("a"+string(p.src[p.pos])) {
			p.pos++
		}
	default:
		lit.WriteByte('$')
		p.pos++
		return
	}
	w.expands = true
	if p.pos > len(p.src) {
		p.pos = len(p.src)
	}
	lit.WriteString(p.src[start:p.pos])
}

// arith reads $(( … )) up to its closing )), substitutions included.
func (p *shParser) arith() {
	var discard strings.Builder
	var w word
	depth := 0
	for p.more() {
		switch c := p.src[p.pos]; c {
		case '(':
			depth++
			p.pos++
		case ')':
			if depth == 0 {
				if p.peek(1) != ')' {
					p.fail("unclosed $((")
					return
				}
				p.pos += 2
				return
			}
			depth--
			p.pos++
		case '$':
			p.dollar(&discard, &w, true)
		case '`':
			p.backtick(&discard)
		case '"':
			p.dquote(&discard, &w)
		case '\\':
			p.pos += 2
		default:
			p.pos++
		}
	}
	p.fail("unclosed $((")
}

// braces reads ${ … } up to its closing }, substitutions included.
func (p *shParser) braces() {
	var discard strings.Builder
	var w word
	for p.more() {
		switch c := p.src[p.pos]; c {
		case '}':
			p.pos++
			return
		case '\\':
			p.pos += 2
		case '\'':
			end := strings.IndexByte(p.src[p.pos+1:], '\'')
			if end < 0 {
				p.fail("unclosed '")
				return
			}
			p.pos += end + 2
		case '"':
			p.dquote(&discard, &w)
		case '$':
			p.dollar(&discard, &w, true)
		case '`':
			p.backtick(&discard)
		default:
			p.pos++
		}
	}
	p.fail("unclosed ${")
}

// backtick reads `…`: the body, unescaped, is a nested command line.
func (p *shParser) backtick(lit *strings.Builder) {
	start := p.pos
	var body strings.Builder
	i := p.pos + 1
	for ; i < len(p.src) && p.src[i] != '`'; i++ {
		if p.src[i] == '\\' && i+1 < len(p.src) && strings.IndexByte("$`\\\n", p.src[i+1]) >= 0 {
			if p.src[i+1] != '\n' {
				body.WriteByte(p.src[i+1])
			}
			i++
			continue
		}
		body.WriteByte(p.src[i])
	}
	if i >= len(p.src) {
		p.fail("unclosed `")
		return
	}
	p.pos = i + 1
	lit.WriteString(p.src[start:p.pos])
	p.sub(body.String(), func(q *shParser) { q.list(0) })
}
