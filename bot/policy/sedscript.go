package policy

import "strings"

// sedScripts finds sed's scripts in a part (-e SCRIPT, --expression=…,
// or the first operand when neither is given) and reports each that
// writes a file or runs a command: the w, W and e commands, and the w
// and e flags of s. With --sandbox, sed refuses those itself.
func sedScripts(ws []word, from int) []riskSpan {
	type script struct {
		at   int
		text string
	}
	var scripts []script
	sandbox, explicit := false, false
	first := -1
	for i := from; i < len(ws); i++ {
		l := ws[i].lit
		switch {
		case l == "--":
			if first < 0 && i+1 < len(ws) {
				first = i + 1
			}
			i = len(ws)
		case l == "--sandbox":
			sandbox = true
		case strings.HasPrefix(l, "--expression="):
			scripts, explicit = append(scripts, script{i, strings.TrimPrefix(l, "--expression=")}), true
		case l == "--expression" || l == "--file" || l == "-f" || l == "--line-length" || l == "-l":
			if l == "--expression" && i+1 < len(ws) {
				scripts = append(scripts, script{i + 1, ws[i+1].lit})
			}
			explicit = explicit || l != "--line-length" && l != "-l"
			i++
		case strings.HasPrefix(l, "--"):
			explicit = explicit || strings.HasPrefix(l, "--file=")
		case strings.HasPrefix(l, "-") && len(l) > 1:
			for j := 1; j < len(l); j++ {
				switch l[j] {
				case 'e':
					explicit = true
					if j+1 < len(l) {
						scripts = append(scripts, script{i, l[j+1:]})
					} else if i+1 < len(ws) {
						i++
						scripts = append(scripts, script{i, ws[i].lit})
					}
					j = len(l)
				case 'f':
					explicit = true
					if j+1 == len(l) {
						i++
					}
					j = len(l)
				case 'l':
					if j+1 == len(l) {
						i++
					}
					j = len(l)
				case 'i':
					j = len(l) // -i[SUFFIX]
				}
			}
		default:
			if first < 0 {
				first = i
			}
		}
	}
	if !explicit && first >= 0 {
		scripts = append(scripts, script{first, ws[first].lit})
	}
	var out []riskSpan
	for _, s := range scripts {
		if ws[s.at].expands {
			out = append(out, riskSpan{word: s.at, why: "a sed script known only when it runs"})
			continue
		}
		if sandbox {
			continue
		}
		why, execs := sedRiskExec(s.text)
		if why != "" {
			out = append(out, riskSpan{word: s.at, why: why, exec: execs})
		}
	}
	return out
}

// sedRiskExec reads a GNU sed script and says what in it writes a file
// or runs a command ("" when nothing does; a script it cannot read is
// risky), and the commands its e commands run, one a line (e alone runs
// the pattern space, which no text says).
func sedRiskExec(s string) (why string, execs []string) {
	r := sedReader{s: s}
	r.script()
	return r.why, r.execs
}

type sedReader struct {
	s string
	i int
	// why is the first thing found that writes or runs; execs the
	// commands of e commands.
	why   string
	execs []string
}

func (r *sedReader) peek() byte {
	if r.i < len(r.s) {
		return r.s[r.i]
	}
	return 0
}

func (r *sedReader) blanks() {
	for r.i < len(r.s) && (r.s[r.i] == ' ' || r.s[r.i] == '\t') {
		r.i++
	}
}

// toEOL skips to the end of the line (a filename, a label, text).
func (r *sedReader) toEOL() {
	for r.i < len(r.s) && r.s[r.i] != '\n' {
		r.i++
	}
}

// risk notes what writes or runs; reading goes on, for the commands of
// later e commands.
func (r *sedReader) risk(why string) {
	if r.why == "" {
		r.why = why
	}
}

// script reads the whole script; at what it cannot read it stops, risky.
func (r *sedReader) script() {
	for r.i < len(r.s) {
		r.blanks()
		c := r.peek()
		switch c {
		case ';', '\n', '}', ' ':
			r.i++
			continue
		case '#':
			r.toEOL()
			continue
		case 0:
			return
		}
		if !r.command() {
			r.risk("a sed script the reader cannot read")
			return
		}
	}
}

// command reads one command with its addresses; false when it cannot.
func (r *sedReader) command() bool {
	if !r.address() {
		return false
	}
	r.blanks()
	if r.peek() == ',' {
		r.i++
		r.blanks()
		if !r.address() {
			return false
		}
	}
	r.blanks()
	for r.peek() == '!' {
		r.i++
		r.blanks()
	}
	cmd := r.peek()
	r.i++
	switch cmd {
	case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
	case 'l', 'L', 'q', 'Q':
		r.blanks()
		for r.peek() >= '0' && r.peek() <= '9' {
			r.i++
		}
	case 'a', 'i', 'c':
		r.text()
	case ':', 'b', 't', 'T', 'v':
		for r.i < len(r.s) && r.s[r.i] != '\n' && r.s[r.i] != ';' {
			r.i++
		}
	case 'r', 'R':
		r.toEOL()
	case 'w', 'W':
		r.risk("the sed command " + string(cmd) + " writes a file")
		r.toEOL()
	case 'e':
		r.risk("the sed command e runs a command")
		r.blanks()
		start := r.i
		r.toEOL()
		if r.i > start {
			r.execs = append(r.execs, r.s[start:r.i])
		}
	case 's':
		return r.substitute()
	case 'y':
		d := r.peek()
		r.i++
		for range 2 { // y/SOURCE/DEST/
			if !r.delimited(d, false) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// address reads an optional address: N, N~M, $, /re/ or \cREc with
// I and M, +N, ~N.
func (r *sedReader) address() bool {
	switch c := r.peek(); {
	case c >= '0' && c <= '9' || c == '+' || c == '~':
		r.i++
		for r.peek() >= '0' && r.peek() <= '9' || r.peek() == '~' {
			r.i++
		}
	case c == '$':
		r.i++
	case c == '/' || c == '\\':
		d := byte('/')
		if c == '\\' {
			r.i++
			d = r.peek()
			if d == 0 || d == '\n' {
				return false
			}
		}
		r.i++
		if !r.delimited(d, true) {
			return false
		}
		for r.peek() == 'I' || r.peek() == 'M' {
			r.i++
		}
	}
	return true
}

// delimited reads up to an unescaped d, bracket expressions whole when
// regex is set, and past it.
func (r *sedReader) delimited(d byte, regex bool) bool {
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == '\\':
			r.i += 2
			continue
		case c == d:
			r.i++
			return true
		case c == '\n' && !regex:
			return false
		case c == '[' && regex:
			r.bracket()
			continue
		}
		r.i++
	}
	return false
}

// bracket skips a bracket expression: [], []…], [^]…] and [:class:].
func (r *sedReader) bracket() {
	r.i++
	if r.peek() == '^' {
		r.i++
	}
	if r.peek() == ']' {
		r.i++
	}
	for r.i < len(r.s) {
		if r.s[r.i] == '[' && r.i+1 < len(r.s) && strings.IndexByte(":.=", r.s[r.i+1]) >= 0 {
			end := strings.Index(r.s[r.i+2:], string(r.s[r.i+1])+"]")
			if end < 0 {
				r.i = len(r.s)
				return
			}
			r.i += end + 4
			continue
		}
		if r.s[r.i] == ']' {
			r.i++
			return
		}
		r.i++
	}
}

// substitute reads s/re/repl/flags after the s.
func (r *sedReader) substitute() bool {
	d := r.peek()
	if d == 0 || d == '\n' || d == '\\' {
		return false
	}
	r.i++
	if !r.delimited(d, true) || !r.delimited(d, false) {
		return false
	}
	for r.i < len(r.s) {
		switch c := r.s[r.i]; {
		case c == 'w':
			r.risk("the w flag of sed's s writes a file")
			r.toEOL()
			return true
		case c == 'e':
			r.risk("the e flag of sed's s runs a command")
			r.i++
		case strings.IndexByte("gpiImM0123456789", c) >= 0:
			r.i++
		default:
			return true
		}
	}
	return true
}

// text reads the text of a, i and c: the rest of the line, and the
// lines after while one ends in a backslash.
func (r *sedReader) text() {
	for r.i < len(r.s) && r.s[r.i] != '\n' {
		if r.s[r.i] == '\\' {
			r.i++
		}
		r.i++
	}
}
