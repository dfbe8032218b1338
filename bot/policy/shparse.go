package policy

import (
	"strings"
)

// shParser reads Bash's grammar as far as a rule needs it: where each
// simple command starts and ends, its words and redirections, and every
// command nested in it. It records simple commands in out and stops at
// the first thing it does not understand (err).
type shParser struct {
	src   string
	pos   int
	depth int
	out   *[]part
	docs  []heredoc
	err   string
}

// heredoc is a here-document whose body starts at the next newline.
type heredoc struct {
	delim  string
	strip  bool // <<-: leading tabs are removed
	expand bool // unquoted delimiter: $(…) and `…` in the body run
}

func (p *shParser) fail(why string) {
	if p.err == "" {
		p.err = why
	}
}

func (p *shParser) peek(i int) byte {
	if p.pos+i < len(p.src) {
		return p.src[p.pos+i]
	}
	return 0
}

func (p *shParser) more() bool { return p.err == "" && p.pos < len(p.src) }

// blanks skips spaces, tabs and backslash-newline continuations.
func (p *shParser) blanks() {
	for p.pos < len(p.src) {
		switch {
		case p.src[p.pos] == ' ' || p.src[p.pos] == '\t':
			p.pos++
		case p.src[p.pos] == '\\' && p.peek(1) == '\n':
			p.pos += 2
		default:
			return
		}
	}
}

// sub reads src (a backtick body, a here-document line, an sh -c string)
// as a nested command line, recording into the same parts.
func (p *shParser) sub(src string, read func(q *shParser)) {
	q := &shParser{src: src, depth: p.depth + 1, out: p.out}
	if q.depth > maxShellDepth {
		p.fail("nested too deeply")
		return
	}
	read(q)
	if q.err == "" {
		q.readHeredocs()
	}
	p.fail(q.err)
}

// nested reads a command line nested in this one up to the closing ).
func (p *shParser) nested() {
	p.depth++
	if p.depth > maxShellDepth {
		p.fail("nested too deeply")
		return
	}
	p.list(')')
	p.depth--
}

// list reads commands and the operators between them until the end, or
// until closer (')') when it is not 0.
func (p *shParser) list(closer byte) {
	for p.err == "" {
		p.blanks()
		if p.pos >= len(p.src) {
			if closer != 0 {
				p.fail("unclosed (")
			}
			return
		}
		switch c := p.src[p.pos]; {
		case c == closer:
			p.pos++
			return
		case c == ')':
			p.fail("unexpected )")
		case c == '\n':
			p.pos++
			p.readHeredocs()
		case c == ';':
			if p.peek(1) == ';' || p.peek(1) == '&' {
				p.fail(";; outside case")
			}
			p.pos++
		case c == '&' && p.peek(1) != '>':
			p.pos++
			if p.peek(0) == '&' {
				p.pos++
			}
		case c == '|':
			p.pos++
			if p.peek(0) == '|' || p.peek(0) == '&' {
				p.pos++
			}
		case c == '#':
			p.comment()
		default:
			p.command()
		}
	}
}

// comment skips to the end of the line.
func (p *shParser) comment() {
	if i := strings.IndexByte(p.src[p.pos:], '\n'); i >= 0 {
		p.pos += i
	} else {
		p.pos = len(p.src)
	}
}

// delimiter reports whether c ends an unquoted word.
func delimiter(c byte) bool {
	return strings.IndexByte(" \t\n;&|()<>", c) >= 0 || c == 0
}

// reserved returns the reserved word at the current position, if any.
func (p *shParser) reserved() string {
	end := p.pos
	for end < len(p.src) && !delimiter(p.src[end]) && strings.IndexByte(`'"\$`+"`", p.src[end]) < 0 {
		end++
	}
	if end < len(p.src) && !delimiter(p.src[end]) {
		return ""
	}
	switch w := p.src[p.pos:end]; w {
	case "{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
		"for", "select", "case", "esac", "function", "coproc", "[[":
		return w
	}
	return ""
}

// command reads one command: a reserved word, a subshell or a simple
// command with its words and redirections.
func (p *shParser) command() {
	switch w := p.reserved(); w {
	case "":
	case "for", "select":
		p.forHeader()
		return
	case "case", "esac", "function", "coproc":
		p.fail(w + " is not read")
		return
	case "[[":
		p.test()
		return
	default: // { } ! if then else elif fi do done while until: the command follows
		p.pos += len(w)
		return
	}
	if p.src[p.pos] == '(' {
		if p.peek(1) == '(' {
			p.fail("(( is not read")
			return
		}
		p.pos++
		p.nested()
		return
	}
	p.simple()
}

// simple reads a simple command up to the operator that ends it.
func (p *shParser) simple() {
	var pt part
	words := 0
	for p.more() {
		p.blanks()
		if p.pos >= len(p.src) {
			break
		}
		c := p.src[p.pos]
		if c == '\n' || c == ';' || c == '|' || c == ')' || (c == '&' && p.peek(1) != '>') || c == '#' {
			break
		}
		if c == '(' {
			p.fail("( inside a command")
			return
		}
		if p.redirection() {
			p.redirect(&pt)
			continue
		}
		start := p.pos
		w := p.word()
		if p.pos == start {
			p.fail("no progress") // a byte no rule of the reader takes
			return
		}
		kind := tokWord
		if words == 0 && assignment(w) {
			kind = tokAssign
		} else {
			words++
		}
		pt.toks = append(pt.toks, token{kind: kind, raw: w.raw, word: w})
	}
	p.add(pt)
}

// assignment reports whether w is NAME=value (or NAME+=value) as written.
func assignment(w word) bool {
	i := strings.IndexByte(w.raw, '=')
	if i <= 0 {
		return false
	}
	name := strings.TrimSuffix(w.raw[:i], "+")
	return validName(name)
}

func validName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// forHeader reads `for NAME [in WORDS]`: no command of its own, though
// its words may hold substitutions, which are read.
func (p *shParser) forHeader() {
	p.pos += len(p.reserved())
	p.blanks()
	if p.peek(0) == '(' {
		p.fail("for (( is not read")
		return
	}
	p.word()
	p.blanks()
	if p.reserved() != "" || !strings.HasPrefix(p.src[p.pos:], "in") || !delimiter(p.peek(2)) {
		return
	}
	p.pos += 2
	for p.more() {
		p.blanks()
		if p.pos >= len(p.src) || p.src[p.pos] == ';' || p.src[p.pos] == '\n' {
			return
		}
		if delimiter(p.src[p.pos]) {
			p.fail("unexpected operator in for")
			return
		}
		p.word()
	}
}

// test reads [[ … ]], where && || < > ( ) are operands, not operators.
func (p *shParser) test() {
	pt := part{toks: []token{{kind: tokWord, raw: "[[", word: word{raw: "[[", lit: "[["}}}}
	p.pos += 2
	for p.more() {
		if p.blanks(); !p.more() {
			break // blanks to the end: unclosed
		}
		if strings.HasPrefix(p.src[p.pos:], "]]") && delimiter(p.peek(2)) {
			p.pos += 2
			pt.toks = append(pt.toks, token{kind: tokWord, raw: "]]", word: word{raw: "]]", lit: "]]"}})
			p.add(pt)
			return
		}
		if p.src[p.pos] == '\n' {
			p.pos++
			continue
		}
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("&|<>()!;", p.src[p.pos]) >= 0 {
			p.pos++
		}
		var w word
		if p.pos > start {
			w = word{raw: p.src[start:p.pos], lit: p.src[start:p.pos]}
		} else {
			w = p.word()
		}
		pt.toks = append(pt.toks, token{kind: tokWord, raw: w.raw, word: w})
	}
	p.fail("unclosed [[")
}

// redirection reports whether a redirection starts here: [n]< [n]> &>.
func (p *shParser) redirection() bool {
	i := p.pos
	for i < len(p.src) && p.src[i] >= '0' && p.src[i] <= '9' {
		i++
	}
	if i >= len(p.src) {
		return false
	}
	c := p.src[i]
	if c == '&' && i == p.pos {
		return i+1 < len(p.src) && p.src[i+1] == '>'
	}
	if c != '<' && c != '>' {
		return false
	}
	// <( and >( start a process substitution, a word.
	return i > p.pos || i+1 >= len(p.src) || p.src[i+1] != '('
}

var redirOps = []string{"&>>", "&>", "<<<", "<<-", "<<", "<>", "<&", "<", ">>", ">|", ">&", ">"}

// redirect reads one redirection into pt.
func (p *shParser) redirect(pt *part) {
	start := p.pos
	for p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	var op string
	for _, o := range redirOps {
		if strings.HasPrefix(p.src[p.pos:], o) {
			op = o
			break
		}
	}
	p.pos += len(op)
	opText := p.src[start:p.pos]
	p.blanks()
	if p.pos >= len(p.src) || (delimiter(p.src[p.pos]) && !p.redirTargetIsSubst()) {
		p.fail("redirection without a target")
		return
	}
	target := p.word()
	t := token{kind: tokRedir, raw: opText + target.raw}
	switch op {
	case "<<", "<<-":
		p.docs = append(p.docs, heredoc{delim: target.lit, strip: op == "<<-", expand: !strings.ContainsAny(target.raw, `'"\`)})
	case "<", "<<<":
	case "<&", ">&":
		if isDigits(target.lit) || target.lit == "-" {
			t.quiet = !target.expands
		} else if op == ">&" {
			t.quiet, pt.writes = quietTarget(target), pt.writes || !quietTarget(target)
		}
	default: // > >> >| &> &>> <>
		t.quiet, pt.writes = quietTarget(target), pt.writes || !quietTarget(target)
	}
	pt.toks = append(pt.toks, t)
}

func (p *shParser) redirTargetIsSubst() bool {
	return (p.src[p.pos] == '<' || p.src[p.pos] == '>') && p.peek(1) == '('
}

// quietTarget: writing there changes no file.
func quietTarget(w word) bool {
	return !w.expands && !w.glob && (w.lit == "/dev/null" || w.lit == "/dev/stdout" || w.lit == "/dev/stderr")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// readHeredocs consumes the bodies of pending here-documents, reading
// the commands an unquoted one substitutes.
func (p *shParser) readHeredocs() {
	docs := p.docs
	p.docs = nil
	for _, d := range docs {
		for p.err == "" && p.pos < len(p.src) {
			line, next := p.src[p.pos:], len(p.src)
			if i := strings.IndexByte(line, '\n'); i >= 0 {
				line, next = line[:i], p.pos+i+1
			}
			p.pos = next
			check := line
			if d.strip {
				check = strings.TrimLeft(line, "\t")
			}
			if check == d.delim {
				break
			}
			if d.expand && strings.ContainsAny(line, "$`") {
				p.sub(line, (*shParser).expansions)
			}
		}
	}
}

// expansions reads only the substitutions in text that is otherwise data
// (a here-document's body).
func (p *shParser) expansions() {
	var discard strings.Builder
	var w word
	for p.more() {
		switch p.src[p.pos] {
		case '\\':
			p.pos += 2
		case '$':
			p.dollar(&discard, &w, true)
		case '`':
			p.backtick(&discard)
		default:
			p.pos++
		}
	}
}
