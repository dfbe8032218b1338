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
	var b strings.Builder
	for _, t := range p.toks {
		if t.quiet {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.raw)
	}
	if p.more && b.Len() > 0 {
		b.WriteString(" …")
	}
	return b.String()
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
	// ok: the whole command was understood. When false, parts are only
	// the plausible pieces of it, for deny and ask rules.
	ok bool
	// texts are each part's texts, worked out once.
	texts []texts
}

// texts are what rules match of one part.
type texts struct {
	allow     string
	allowable bool
	dynamic   bool
	deny      []string
}

func (sh shell) withTexts() shell {
	sh.texts = make([]texts, len(sh.parts))
	for i, p := range sh.parts {
		sh.texts[i] = texts{allow: p.allowText(), allowable: p.allowable(), dynamic: p.dynamic, deny: p.denyTexts()}
	}
	return sh
}

// parseShell reads a Bash command line into every simple command it runs:
// those joined by ;, &, &&, ||, | and newlines, inside subshells, groups,
// loops and conditionals, inside $(…), `…`, <(…) and >(…) (also within
// quotes, ${…}, $((…)) and here-documents), and those run by wrappers
// (sh -c, eval, env, sudo, xargs, find -exec …). What it cannot read
// (case, function definitions, unclosed quotes, NUL bytes, over the bounds) gives
// ok=false and plausible pieces instead.
func parseShell(cmd string) shell {
	if len(cmd) > MaxCommandBytes {
		return shell{parts: plausible(cmd[:MaxCommandBytes])}.withTexts()
	}
	if strings.ContainsRune(cmd, 0) {
		return shell{parts: plausible(cmd)}.withTexts()
	}
	var parts []part
	p := &shParser{src: cmd, out: &parts}
	p.list(0)
	if p.err == "" {
		p.readHeredocs()
	}
	if p.err != "" {
		return shell{parts: plausible(cmd)}.withTexts()
	}
	return shell{parts: parts, ok: true}.withTexts()
}

// plausible splits a command the reader could not read at every operator
// and quote, for deny and ask rules: each piece, quotes removed, and where
// a wrapper's command might start in it.
func plausible(cmd string) []part {
	pieces := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(";&|()\n`", r)
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
