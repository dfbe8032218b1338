package policy

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shReader walks a command line parsed as Bash (mvdan.cc/sh's parser)
// into the simple commands it runs. It records parts in out; fail stops
// it (over a bound: nothing it read counts), and model notes the first
// construct whose effect it does not model, which leaves every part it
// found for deny and ask rules but lets no allow rule match.
type shReader struct {
	src   string
	depth int
	out   *[]part
	err   string
	why   *string
}

func (p *shReader) fail(why string) {
	if p.err == "" {
		p.err = why
	}
}

// model notes that the command holds something the reader cannot model.
func (p *shReader) model(why string) {
	if *p.why == "" {
		*p.why = why
	}
}

func (p *shReader) text(n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a > b || b > len(p.src) {
		return ""
	}
	return p.src[a:b]
}

func newBashParser() *syntax.Parser {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}

// read parses src and walks it.
func (p *shReader) read() {
	f, err := newBashParser().Parse(strings.NewReader(p.src), "")
	if err != nil {
		p.fail("not Bash the reader can parse: " + err.Error())
		return
	}
	p.stmts(f.Stmts)
}

// sub reads src (an sh -c string, eval's words) as a command line nested
// in this one, recording into the same parts. One that does not parse
// is not modeled: its pieces reach deny rules through plausible.
func (p *shReader) sub(src string) {
	if p.depth+1 > maxShellDepth {
		p.fail("nested too deeply")
		return
	}
	q := &shReader{src: src, depth: p.depth + 1, out: p.out, why: p.why}
	f, err := newBashParser().Parse(strings.NewReader(src), "")
	if err != nil {
		p.model("a command line inside it does not parse: " + err.Error())
		*p.out = append(*p.out, plausible(src)...)
		if len(*p.out) > maxShellParts {
			p.fail("too many commands")
		}
		return
	}
	q.stmts(f.Stmts)
	p.fail(q.err)
}

// nest runs f one level deeper.
func (p *shReader) nest(f func()) {
	p.depth++
	if p.depth > maxShellDepth {
		p.fail("nested too deeply")
	} else {
		f()
	}
	p.depth--
}

func (p *shReader) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		if p.err != "" {
			return
		}
		p.stmt(s)
	}
}

func (p *shReader) stmt(s *syntax.Stmt) {
	switch c := s.Cmd.(type) {
	case nil:
		p.simple(nil, nil, s.Redirs)
	case *syntax.CallExpr:
		p.simple(c.Assigns, c.Args, s.Redirs)
	default:
		p.compound(c)
		p.simple(nil, nil, s.Redirs) // { …; } > out writes like a command would
	}
}

func (p *shReader) compound(c syntax.Command) {
	switch c := c.(type) {
	case *syntax.BinaryCmd:
		p.stmt(c.X)
		p.stmt(c.Y)
	case *syntax.Subshell:
		p.nest(func() { p.stmts(c.Stmts) })
	case *syntax.Block:
		p.stmts(c.Stmts)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			p.stmts(c.Cond)
			p.stmts(c.Then)
		}
	case *syntax.WhileClause:
		p.stmts(c.Cond)
		p.stmts(c.Do)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				p.word(w)
			}
		case *syntax.CStyleLoop:
			p.model("for (( )) is arithmetic, which runs what variables name")
			p.arith(l.Init)
			p.arith(l.Cond)
			p.arith(l.Post)
		}
		p.stmts(c.Do)
	case *syntax.CaseClause:
		p.word(c.Word)
		for _, it := range c.Items {
			for _, w := range it.Patterns {
				p.word(w)
			}
			p.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		p.model("a function definition: what it runs depends on where it is called")
		p.nest(func() { p.stmt(c.Body) })
	case *syntax.ArithmCmd:
		p.model("(( )) is arithmetic, which runs what variables name")
		p.arith(c.X)
	case *syntax.TestClause:
		p.testClause(c)
	case *syntax.DeclClause:
		p.declClause(c)
	case *syntax.LetClause:
		p.model("let is arithmetic, which runs what variables name")
		pt := part{toks: []token{litToken("let")}}
		for _, x := range c.Exprs {
			p.arith(x)
			raw := p.text(x)
			pt.toks = append(pt.toks, token{kind: tokWord, raw: raw, word: word{raw: raw, lit: raw, expands: true}})
		}
		p.add(pt)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			p.stmt(c.Stmt)
		}
	case *syntax.CoprocClause:
		p.model("coproc runs a command beside the shell")
		p.stmt(c.Stmt)
	default:
		p.model(fmt.Sprintf("%T is not modeled", c))
	}
}

func litToken(s string) token {
	return token{kind: tokWord, raw: s, word: word{raw: s, lit: s}}
}

// simple records one simple command: its assignments, words and
// redirections in the order written.
func (p *shReader) simple(assigns []*syntax.Assign, args []*syntax.Word, redirs []*syntax.Redirect) {
	type placed struct {
		at  uint
		tok token
	}
	toks := make([]placed, 0, len(assigns)+len(args)+len(redirs))
	pt := part{toks: make([]token, 0, cap(toks))}
	for _, a := range assigns {
		p.assign(a)
		raw := p.text(a)
		toks = append(toks, placed{a.Pos().Offset(), token{kind: tokAssign, raw: raw, word: word{raw: raw, lit: raw}}})
	}
	for _, w := range args {
		toks = append(toks, placed{w.Pos().Offset(), token{kind: tokWord, raw: p.text(w), word: p.word(w)}})
	}
	for _, r := range redirs {
		t, writes, in := p.redirect(r)
		pt.writes = pt.writes || writes
		if in != nil {
			pt.stdin = in
		}
		toks = append(toks, placed{r.Pos().Offset(), t})
	}
	slices.SortStableFunc(toks, func(a, b placed) int { return int(a.at) - int(b.at) })
	for _, t := range toks {
		pt.toks = append(pt.toks, t.tok)
	}
	p.add(pt)
}

// assign reads NAME=value, NAME[i]=value or NAME=(…).
func (p *shReader) assign(a *syntax.Assign) {
	if a.Index != nil {
		p.model("an array subscript, which is arithmetic and runs what it names")
		p.arith(a.Index)
	}
	if a.Array != nil {
		p.model("an array assignment, whose subscripts are arithmetic")
		for _, e := range a.Array.Elems {
			if e.Index != nil {
				p.arith(e.Index)
			}
			if e.Value != nil {
				p.word(e.Value)
			}
		}
	}
	if a.Value != nil {
		p.word(a.Value)
	}
}

// assignValue reads an assignment's parts and reports whether its value
// is known only when it runs.
func (p *shReader) assignValue(a *syntax.Assign) bool {
	v := a.Value
	a2 := *a
	a2.Value = nil
	p.assign(&a2)
	return p.word(v).expands
}

// redirect reads one redirection: its token, whether it writes a file,
// and the text it gives as input (a here-string or here-document).
func (p *shReader) redirect(r *syntax.Redirect) (token, bool, *word) {
	n := ""
	if r.N != nil {
		n = r.N.Value
		if !isDigits(n) {
			p.model("a redirection that assigns a file descriptor variable")
		}
	}
	target := word{}
	if r.Word != nil {
		target = p.word(r.Word)
	}
	t := token{kind: tokRedir, raw: n + r.Op.String() + target.raw}
	writes := false
	var in *word
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		in = p.heredoc(r)
	case syntax.WordHdoc:
		in = &target
	case syntax.RdrIn:
	case syntax.DplIn, syntax.DplOut:
		switch {
		case isDigits(target.lit) || target.lit == "-":
			t.quiet = !target.expands
		case r.Op == syntax.DplOut:
			t.quiet, writes = quietTarget(target), !quietTarget(target)
		}
	default: // > >> >| &> &>> <>
		t.quiet, writes = quietTarget(target), !quietTarget(target)
	}
	return t, writes, in
}

// heredoc reads a here-document: its body's substitutions run unless the
// delimiter is quoted. A delimiter other than a plain name, bare or
// wholly quoted, is not modeled: where bash ends the body is then too
// easy to misread.
func (p *shReader) heredoc(r *syntax.Redirect) *word {
	if !plainDelimiter(p.text(r.Word)) {
		p.model("a here-document delimiter that is neither a plain word nor wholly quoted")
	}
	if r.Hdoc == nil {
		return &word{}
	}
	w := p.word(r.Hdoc)
	w.lit = w.raw // a quoted delimiter: the body is text
	if !strings.ContainsAny(p.text(r.Word), `'"\`) {
		w.lit = unescapeDouble(w.raw) // unquoted: backslashes escape as in double quotes
	}
	return &w
}

// plainDelimiter: NAME, 'NAME', "NAME" or \NAME, NAME of letters, digits,
// _ and -.
func plainDelimiter(raw string) bool {
	name := raw
	switch {
	case len(raw) >= 2 && (raw[0] == '\'' || raw[0] == '"') && raw[len(raw)-1] == raw[0]:
		name = raw[1 : len(raw)-1]
	case strings.HasPrefix(raw, `\`):
		name = raw[1:]
	}
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '_' && c != '-' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// word reads one word: its text after quote removal and every
// substitution in it (whose commands are recorded as parts of their own).
func (p *shReader) word(w *syntax.Word) word {
	out := word{raw: p.text(w)}
	var lit strings.Builder
	for _, wp := range w.Parts {
		p.wordPart(wp, &lit, &out)
	}
	out.lit = lit.String()
	out.glob = out.glob || hasBraceExp(w)
	return out
}

// hasBraceExp reports whether bash brace-expands w ({a,b}, {1..3}).
func hasBraceExp(w *syntax.Word) bool {
	if !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		l, ok := p.(*syntax.Lit)
		return ok && strings.Contains(l.Value, "{")
	}) {
		return false
	}
	c := &syntax.Word{Parts: slices.Clone(w.Parts)}
	syntax.SplitBraces(c)
	for _, wp := range c.Parts {
		if _, ok := wp.(*syntax.BraceExp); ok {
			return true
		}
	}
	return false
}

func (p *shReader) wordPart(wp syntax.WordPart, lit *strings.Builder, out *word) {
	switch x := wp.(type) {
	case *syntax.Lit:
		s, glob := unescapeBare(x.Value)
		lit.WriteString(s)
		out.glob = out.glob || glob
	case *syntax.SglQuoted:
		if !x.Dollar {
			lit.WriteString(x.Value)
			return
		}
		s, ok := ansiC(x.Value)
		if !ok {
			out.expands = true
			s = p.text(x)
		}
		lit.WriteString(s)
	case *syntax.DblQuoted:
		if x.Dollar {
			out.expands = true // $"…" is translated when it runs
		}
		for _, q := range x.Parts {
			if l, ok := q.(*syntax.Lit); ok {
				lit.WriteString(unescapeDouble(l.Value))
				continue
			}
			p.wordPart(q, lit, out)
		}
	case *syntax.ParamExp:
		p.paramExp(x)
		out.expands = true
		lit.WriteString(p.text(x))
	case *syntax.CmdSubst:
		p.nest(func() { p.stmts(x.Stmts) })
		out.expands = true
		lit.WriteString(p.text(x))
	case *syntax.ArithmExp:
		p.arithExp(x)
		out.expands = true
		lit.WriteString(p.text(x))
	case *syntax.ProcSubst:
		p.nest(func() { p.stmts(x.Stmts) })
		out.expands = true
		lit.WriteString(p.text(x))
	case *syntax.ExtGlob:
		p.model("an extended glob, whose pattern is not read")
		*p.out = append(*p.out, plausible(x.Pattern.Value)...)
		out.glob = true
		lit.WriteString(p.text(x))
	default:
		p.model(fmt.Sprintf("%T in a word is not modeled", x))
		out.expands = true
		lit.WriteString(p.text(wp))
	}
}

// unescapeBare removes the backslashes of unquoted text and reports
// whether it holds an unescaped glob character.
func unescapeBare(s string) (string, bool) {
	var b strings.Builder
	glob, bracket := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		case c == '*' || c == '?':
			glob = true
		case c == '[':
			bracket = true
		case c == ']' && bracket:
			glob = true
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// unescapeDouble removes the backslashes double quotes give meaning to.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// paramExp reads ${…}. Only a name alone, its length, or a default of
// plain text is modeled: every other form either runs what a variable
// holds (indirection, subscripts, offsets, ${x@P}) or reads its word by
// rules that differ by context (quotes inside ${…} inside double quotes
// are text, not quoting), so a command holding one is never allowed.
func (p *shReader) paramExp(x *syntax.ParamExp) {
	if x.Index != nil {
		p.arith(x.Index)
	}
	if x.Slice != nil {
		p.arith(x.Slice.Offset)
		p.arith(x.Slice.Length)
	}
	if x.Repl != nil {
		p.wordOpt(x.Repl.Orig)
		p.wordOpt(x.Repl.With)
	}
	if x.Exp != nil {
		p.wordOpt(x.Exp.Word)
	}
	switch {
	case x.Excl || x.Index != nil || x.Slice != nil || x.Repl != nil || x.Names != 0 || x.Width || x.Param == nil:
		p.model("a ${…} expansion that can run what a variable holds")
	case x.Exp != nil && !plainDefault(x.Exp):
		p.model("a ${…} expansion whose word is read by rules of its own")
	}
}

func (p *shReader) wordOpt(w *syntax.Word) {
	if w != nil {
		p.word(w)
	}
}

// plainDefault: ${x:-text}, ${x-text}, ${x:+text}, ${x+text} with text of
// letters, digits and /._,:@%+= only.
func plainDefault(e *syntax.Expansion) bool {
	switch e.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
	default:
		return false
	}
	if e.Word == nil {
		return true
	}
	for _, wp := range e.Word.Parts {
		l, ok := wp.(*syntax.Lit)
		if !ok {
			return false
		}
		for _, c := range []byte(l.Value) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("/._,:@%+=-", c) >= 0) {
				return false
			}
		}
	}
	return true
}

// arithExp reads $((…)) and $[…]: arithmetic on numbers alone is
// modeled; a name in it is evaluated, and evaluating a name runs the
// substitutions its value's subscripts hold.
func (p *shReader) arithExp(x *syntax.ArithmExp) {
	if !numbersOnly(x.X) {
		p.model("arithmetic on a variable, which runs what its value names")
	}
	p.arith(x.X)
}

// arith reads the substitutions in an arithmetic expression.
func (p *shReader) arith(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryArithm:
		p.arith(x.X)
		p.arith(x.Y)
	case *syntax.UnaryArithm:
		p.arith(x.X)
	case *syntax.ParenArithm:
		p.arith(x.X)
	case *syntax.Word:
		p.word(x)
	default:
		p.model(fmt.Sprintf("%T in arithmetic is not modeled", x))
	}
}

// numbersOnly: the expression holds only decimal literals and operators
// that assign nothing.
func numbersOnly(x syntax.ArithmExpr) bool {
	switch x := x.(type) {
	case nil:
		return true
	case *syntax.BinaryArithm:
		return x.Op < syntax.Assgn && numbersOnly(x.X) && numbersOnly(x.Y) || isCompare(x.Op) && numbersOnly(x.X) && numbersOnly(x.Y)
	case *syntax.UnaryArithm:
		return x.Op != syntax.Inc && x.Op != syntax.Dec && numbersOnly(x.X)
	case *syntax.ParenArithm:
		return numbersOnly(x.X)
	case *syntax.Word:
		if len(x.Parts) != 1 {
			return false
		}
		l, ok := x.Parts[0].(*syntax.Lit)
		return ok && isDigits(l.Value)
	}
	return false
}

func isCompare(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Add, syntax.Sub, syntax.Mul, syntax.Quo, syntax.Rem, syntax.Pow,
		syntax.Eql, syntax.Gtr, syntax.Lss, syntax.Neq, syntax.Leq, syntax.Geq,
		syntax.And, syntax.Or, syntax.Xor, syntax.Shl, syntax.Shr, syntax.AndArit, syntax.OrArit:
		return true
	}
	return false
}

// testClause reads [[ … ]]. Its words are operands, never commands; an
// arithmetic comparison evaluates its operands, and -v and -R evaluate a
// subscript, so those are modeled only on literal numbers and names.
func (p *shReader) testClause(c *syntax.TestClause) {
	pt := part{toks: []token{litToken("[[")}}
	var walk func(x syntax.TestExpr)
	walk = func(x syntax.TestExpr) {
		switch x := x.(type) {
		case *syntax.BinaryTest:
			walk(x.X)
			pt.toks = append(pt.toks, litToken(x.Op.String()))
			walk(x.Y)
			if x.Op >= syntax.TsEql && x.Op <= syntax.TsGeq && !(decimalWord(x.X) && decimalWord(x.Y)) {
				p.model("an arithmetic comparison in [[ ]], which runs what its operands name")
			}
		case *syntax.UnaryTest:
			pt.toks = append(pt.toks, litToken(x.Op.String()))
			walk(x.X)
			if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
				if w, ok := x.X.(*syntax.Word); !ok || !validName(w.Lit()) {
					p.model("[[ -v ]] of something other than a name evaluates its subscript")
				}
			}
		case *syntax.ParenTest:
			pt.toks = append(pt.toks, litToken("("))
			walk(x.X)
			pt.toks = append(pt.toks, litToken(")"))
		case *syntax.Word:
			pt.toks = append(pt.toks, token{kind: tokWord, raw: p.text(x), word: p.word(x)})
		default:
			p.model(fmt.Sprintf("%T in [[ ]] is not modeled", x))
		}
	}
	walk(c.X)
	pt.toks = append(pt.toks, litToken("]]"))
	p.add(pt)
}

func decimalWord(x syntax.TestExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && isDigits(w.Lit()) && len(w.Parts) == 1
}

// declClause reads declare, local, export, readonly, typeset and
// nameref as a simple command of those words, checked like any other
// (builtins.go).
func (p *shReader) declClause(c *syntax.DeclClause) {
	pt := part{toks: []token{litToken(c.Variant.Value)}}
	for _, a := range c.Args {
		raw := p.text(a)
		w := word{raw: raw, lit: raw}
		if a.Naked && a.Name == nil && a.Value != nil {
			w = p.word(a.Value) // an option, or a word that may expand to an assignment
		} else {
			w.expands = a.Index != nil || a.Array != nil || a.Value != nil && p.assignValue(a)
		}
		w.raw = raw
		pt.toks = append(pt.toks, token{kind: tokWord, raw: raw, word: w})
	}
	p.add(pt)
}

// ansiC decodes the body of $'…' as bash does; false for what it does
// not take on (\c, a NUL, a code point that is not one).
func ansiC(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		if c := strings.IndexByte(`abeEfnrtv\'"?`, s[i]); c >= 0 {
			b.WriteByte("\a\b\x1b\x1b\f\n\r\t\v\\'\"?"[c])
			continue
		}
		digits, base, max := "", 0, 0
		switch s[i] {
		case '0', '1', '2', '3', '4', '5', '6', '7':
			digits, base, max = "01234567", 8, 3
			i--
		case 'x':
			digits, base, max = "0123456789abcdefABCDEF", 16, 2
		case 'u':
			digits, base, max = "0123456789abcdefABCDEF", 16, 4
		case 'U':
			digits, base, max = "0123456789abcdefABCDEF", 16, 8
		case 'c':
			return "", false
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
			continue
		}
		kind := s[i]
		n, v := 0, 0
		for n < max && i+1 < len(s) && strings.IndexByte(digits, s[i+1]) >= 0 {
			d := strings.IndexByte(digits, s[i+1])
			if d >= 16 {
				d -= 6
			}
			v = v*base + d
			n++
			i++
		}
		switch {
		case n == 0 && base == 16:
			b.WriteByte('\\')
			b.WriteByte(kind)
		case v == 0:
			return "", false
		case kind == 'u' || kind == 'U':
			if v > 0x10FFFF || v >= 0xD800 && v <= 0xDFFF {
				return "", false
			}
			b.WriteRune(rune(v))
		default:
			b.WriteByte(byte(v))
		}
	}
	return b.String(), true
}
