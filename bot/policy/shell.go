package policy

import (
	"path"
	"strings"
)

// Bounds on what the shell reader takes on, so a hostile command costs
// little: longer or deeper commands are unparseable (never allowed).
const (
	// MaxCommandBytes is the longest Bash command read as shell.
	MaxCommandBytes = 64 << 10
	// maxShellParts bounds the simple commands one command line holds,
	// nested ones included.
	maxShellParts = 256
	// maxShellDepth bounds nesting: substitutions, subshells, sh -c.
	maxShellDepth = 8
	// maxDenyTexts bounds the forms of one simple command a deny rule is
	// tried on.
	maxDenyTexts = 16
)

// word is one shell word as written and after quote removal.
type word struct {
	raw string // as written
	lit string // quotes removed; expansions left as written
	// expands: holds $…, `…`, $'…' or a process substitution, whose value
	// is known only when it runs.
	expands bool
	// glob: holds unquoted *, ? or […], or {a,b} braces, which the shell
	// may turn into other words.
	glob bool
}

type tokKind uint8

const (
	tokWord tokKind = iota
	tokAssign
	tokRedir
)

// token is one item of a simple command, in the order written.
type token struct {
	kind tokKind
	raw  string
	word word
	// quiet: a redirection no rule needs to see (2>&1, >/dev/null); it is
	// left out of the text allow rules match.
	quiet bool
}

// part is one simple command of a command line, nested ones included.
type part struct {
	toks []token
	// writes: an output redirection to a file (it may write anywhere).
	writes bool
	// dynamic: the program is computed when it runs ($X, $(…), globs).
	dynamic bool
	// opaque: a wrapper (env, sudo, timeout …) whose command could not be
	// told apart from its options.
	opaque bool
	// more: the shell adds arguments when it runs (xargs), so only a
	// prefix rule can allow it.
	more bool
	// risky are its words that write files or run programs by the
	// program's own options (progopts.go): an allow rule must spell each.
	risky []riskSpan
	// stdin is the text of its here-string or here-document, if any.
	stdin *word
	// ws caches words once the tokens are final.
	ws []word
	// extra are further texts deny and ask rules are tried on: the command
	// before a wrapper was stripped, or each place a wrapper's command may
	// start.
	extra []string
}

// words are the part's words, assignments and redirections left out.
func (p part) words() []word {
	if p.ws != nil {
		return p.ws
	}
	ws := make([]word, 0, len(p.toks))
	for _, t := range p.toks {
		if t.kind == tokWord {
			ws = append(ws, t.word)
		}
	}
	return ws
}

// allowable reports whether an allow rule may match the part at all.
func (p part) allowable() bool {
	return !p.writes && !p.dynamic && !p.opaque && p.allowText() != ""
}

// allowText is the text allow rules match: the part as written, its words
// joined by single spaces, without quiet redirections.
func (p part) allowText() string {
	s, _ := p.allowTextSpans()
	return s
}

// allowTextSpans is allowText and where each word starts and ends in it.
func (p part) allowTextSpans() (string, [][2]int) {
	var b strings.Builder
	var spans [][2]int
	for _, t := range p.toks {
		if t.quiet {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if t.kind == tokWord {
			spans = append(spans, [2]int{b.Len(), b.Len() + len(t.raw)})
		}
		b.WriteString(t.raw)
	}
	if p.more && b.Len() > 0 {
		b.WriteString(" …")
	}
	return b.String(), spans
}

// denyTexts are every form of the part a deny or ask rule is tried on:
// as written, with quotes removed and leading assignments and
// redirections dropped, with the program's directory dropped
// (/bin/rm → rm), and the extra forms wrappers gave.
func (p part) denyTexts() []string {
	out := []string{p.allowText()}
	ws := p.words()
	if len(ws) > 0 {
		out = append(out, canonical(ws)...)
	}
	out = append(out, p.extra...)
	if len(out) > maxDenyTexts {
		out = out[:maxDenyTexts]
	}
	return out
}

// canonical is words with quotes removed joined by spaces, and the same
// with the program's directory dropped when it has one.
func canonical(ws []word) []string {
	lits := make([]string, len(ws))
	for i, w := range ws {
		lits[i] = w.lit
	}
	out := []string{strings.Join(lits, " ")}
	if strings.Contains(lits[0], "/") {
		lits[0] = path.Base(lits[0])
		out = append(out, strings.Join(lits, " "))
	}
	return out
}

// shell is a Bash command read into its simple commands.
type shell struct {
	parts []part
	// ok: the reader modeled every part of the command, so an allow
	// rule may match it. When false, why says what it did not model, and
	// parts hold what it read and the plausible pieces of the whole, for
	// deny and ask rules.
	ok  bool
	why string
	// texts are each part's texts, worked out once.
	texts []texts
}

// texts are what rules match of one part.
type texts struct {
	allow     string
	allowable bool
	dynamic   bool
	deny      []string
	// risky are the places in allow an allow rule must spell.
	risky []textSpan
}

// textSpan is a risky word's place in a part's allow text, and what it
// does.
type textSpan struct {
	start, end int
	why        string
}

func (sh shell) withTexts() shell {
	sh.texts = make([]texts, len(sh.parts))
	for i, p := range sh.parts {
		allow, spans := p.allowTextSpans()
		t := texts{allow: allow, allowable: p.allowable(), dynamic: p.dynamic, deny: p.denyTexts()}
		for _, r := range p.risky {
			if r.word < len(spans) {
				s := textSpan{spans[r.word][0], spans[r.word][1], r.why}
				if r.name > 0 && s.start+r.name < s.end {
					s.end = s.start + r.name
				}
				t.risky = append(t.risky, s)
			}
		}
		sh.texts[i] = t
	}
	return sh
}

// parseShell reads a Bash command line into every simple command it runs:
// those joined by ;, &, &&, ||, | and newlines, inside subshells, groups,
// loops, conditionals and case, inside $(…), `…`, <(…) and >(…) (also
// within quotes, ${…}, $((…)) and here-documents), and those run by
// wrappers (sh -c, eval, env, sudo, xargs, find -exec …). What it cannot
// parse (unclosed quotes, NUL bytes, over the bounds) gives only the
// plausible pieces; what it parses but does not model (builtins.go, and
// the constructs shread.go names) keeps its parts and adds the pieces,
// and either way ok is false and why says what.
func parseShell(cmd string) shell {
	if len(cmd) > MaxCommandBytes {
		return shell{parts: plausible(cmd[:MaxCommandBytes]), why: "longer than the reader reads"}.withTexts()
	}
	if strings.ContainsRune(cmd, 0) {
		return shell{parts: plausible(cmd), why: "a NUL byte"}.withTexts()
	}
	var parts []part
	var why string
	p := &shReader{src: cmd, out: &parts, why: &why}
	p.read()
	if p.err != "" {
		return shell{parts: plausible(cmd), why: p.err}.withTexts()
	}
	if why != "" {
		for i := range parts {
			parts[i].opaque = true
		}
		parts = append(parts, plausible(cmd)...)
		if len(parts) > maxShellParts+maxShellParts {
			parts = parts[:2*maxShellParts]
		}
		return shell{parts: parts, why: why}.withTexts()
	}
	return shell{parts: parts, ok: true}.withTexts()
}

// plausible splits a command the reader could not read at every operator
// and quote, for deny and ask rules: each piece, quotes removed, and where
// a wrapper's command might start in it.
func plausible(cmd string) []part {
	pieces := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(";&|()\n`=", r)
	})
	var out []part
	for _, piece := range pieces {
		piece = strings.NewReplacer(`'`, "", `"`, "", `\`, "", "$", "").Replace(piece)
		fields := strings.Fields(piece)
		if len(fields) == 0 {
			continue
		}
		ws := make([]word, len(fields))
		for i, f := range fields {
			ws[i] = word{raw: f, lit: f}
		}
		pt := part{opaque: true}
		for _, w := range ws {
			pt.toks = append(pt.toks, token{kind: tokWord, raw: w.raw, word: w})
		}
		pt.extra, pt.ws = suffixes(ws), ws
		out = append(out, pt)
		if len(out) == maxShellParts {
			break
		}
	}
	return out
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

// validName reports whether s is a shell variable's name.
func validName(s string) bool { return s != "" && (s[0] < '0' || s[0] > '9') && wordChars(s) }

// wordChars reports whether s holds only ASCII letters, digits and '_'.
func wordChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
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
