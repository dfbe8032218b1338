package policy

import (
	"path"
	"slices"
	"strings"
)

// add records a simple command, and the commands its wrappers run.
func (p *shReader) add(pt part) {
	pt.ws = nil
	ws := pt.words()
	pt.ws = ws
	if len(ws) == 0 && !pt.writes && !slices.ContainsFunc(pt.toks, func(t token) bool { return t.kind == tokAssign }) {
		return // nothing, or only input redirections and fd duplications
	}
	if len(*p.out) >= maxShellParts {
		p.fail("too many commands")
		return
	}
	if len(ws) > 0 {
		pt.dynamic = dynamicProgram(ws[0])
	}
	pt = p.unwrap(pt)
	p.builtin(pt)
	if !pt.dynamic {
		pt.risky = risky(pt.words())
		for _, r := range pt.risky {
			for _, cmd := range r.exec {
				p.sub(cmd)
			}
		}
		pt.extra = append(pt.extra, gitWithoutGlobals(pt.words())...)
	}
	*p.out = append(*p.out, pt)
}

// dynamicProgram: the program's name is known only when it runs.
func dynamicProgram(w word) bool { return w.expands || w.glob || w.lit == "" }

// shells are the programs whose -c argument is a command line.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true}

type wrapMode uint8

const (
	wrapExec    wrapMode = iota // runs args[at:] as a command
	wrapShell                   // runs args[at:] joined as a command line (ssh, watch, sudo -s)
	wrapNone                    // runs no command of the arguments (command -v, su without -c)
	wrapUnknown                 // an option it does not know: where the command starts is unclear
)

// wrapSpec describes a program that runs another: which options take an
// argument, and what comes before the command.
type wrapSpec struct {
	// safe: the CLI strips it before matching (timeout, time, nice,
	// nohup, stdbuf), and so does an allow rule here.
	safe bool
	// short options: taking an argument, a flag, one whose argument is a
	// command line (-c), one making the rest a command line (sudo -s), an
	// optional attached argument (xargs -i), and one that runs no command.
	argOpts, flags, shellOpts, shellFlags, optArg, noCmd string
	longArg, longFlag                                    []string
	longShell                                            string // long option whose argument is a command line
	positional                                           int    // words before the command (timeout's duration)
	assigns                                              bool   // NAME=value words before the command (env)
	appends                                              bool   // adds arguments to the command (xargs)
	shell                                                bool   // its arguments are a command line (ssh, watch)
	numeric                                              bool   // -N is an option (nice -5)
	needShellOpt                                         bool   // without shellOpts it runs no command (su, script)
}

var wrappers = map[string]wrapSpec{
	"timeout": {safe: true, argOpts: "sk", flags: "v", longArg: []string{"signal", "kill-after"}, longFlag: []string{"preserve-status", "foreground", "verbose"}, positional: 1},
	"time":    {safe: true, flags: "p"},
	"nice":    {safe: true, argOpts: "n", longArg: []string{"adjustment"}, numeric: true},
	"nohup":   {safe: true},
	"stdbuf":  {safe: true, argOpts: "ioe", longArg: []string{"input", "output", "error"}},

	"env": {argOpts: "uC", flags: "i0v", longArg: []string{"unset", "chdir"}, longFlag: []string{"ignore-environment", "null", "debug"}, assigns: true},
	"xargs": {argOpts: "adEILnPs", flags: "0prtx", optArg: "eil", appends: true,
		longArg:  []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longFlag: []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty"}},
	"sudo": {argOpts: "CDghpRrTtUuc", flags: "AbEHknPSBN", shellFlags: "si", noCmd: "eKklLvV",
		longArg:  []string{"user", "group", "host", "prompt", "chdir", "chroot", "role", "type", "close-from", "command-timeout", "other-user", "login-class"},
		longFlag: []string{"askpass", "background", "preserve-env", "set-home", "non-interactive", "preserve-groups", "stdin", "bell"}},
	"doas":       {argOpts: "uC", flags: "n", shellFlags: "s"},
	"command":    {flags: "p", noCmd: "vV"},
	"builtin":    {},
	"exec":       {argOpts: "a", flags: "cl"},
	"setsid":     {flags: "cfw"},
	"chroot":     {longArg: []string{"userspec", "groups"}, longFlag: []string{"skip-chdir"}, positional: 1},
	"flock":      {argOpts: "wE", flags: "sxeunoFv", shellOpts: "c", longArg: []string{"timeout", "conflict-exit-code"}, longShell: "command", positional: 1},
	"watch":      {argOpts: "nq", flags: "bcdegptwx", shell: true},
	"su":         {argOpts: "gGsw", flags: "lmpfP", shellOpts: "c", longShell: "command", needShellOpt: true, longArg: []string{"group", "supp-group", "shell", "whitelist-environment"}, longFlag: []string{"login", "preserve-environment", "pty"}},
	"script":     {flags: "aefqE", shellOpts: "c", longShell: "command", needShellOpt: true},
	"ssh":        {argOpts: "BbcDEeFIiJLlmOopQRSWw", flags: "46AaCfGgKkMNnqsTtVvXxYy", positional: 1, shell: true},
	"busybox":    {},
	"strace":     {argOpts: "abeEIoOpPsSuUX", flags: "cCdDfFhiknqrTtvVwxyYZ"},
	"unbuffer":   {flags: "p"},
	"ionice":     {argOpts: "cn", flags: "t", noCmd: "p"},
	"taskset":    {flags: "ac", noCmd: "p", positional: 1},
	"caffeinate": {argOpts: "tw", flags: "dimsu"},
}

// command finds where the command a wrapper runs starts in its arguments:
// at, or the index of the argument that is a command line (shellArg).
func (s wrapSpec) command(args []word) (at, shellArg int, mode wrapMode) {
	mode = wrapExec
	if s.shell {
		mode = wrapShell
	}
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a.expands || a.glob {
			return 0, -1, wrapUnknown
		}
		l := a.lit
		if l == "--" {
			i++
			break
		}
		if len(l) < 2 || l[0] != '-' {
			if s.assigns && (l == "-" || assignment(a)) {
				continue
			}
			break
		}
		if long, ok := strings.CutPrefix(l, "--"); ok {
			name, _, hasVal := strings.Cut(long, "=")
			switch {
			case name == s.longShell && s.longShell != "":
				if hasVal {
					return 0, -1, wrapUnknown
				}
				return 0, i + 1, mode
			case slices.Contains(s.longArg, name):
				if !hasVal {
					i++
				}
			case !slices.Contains(s.longFlag, name):
				return 0, -1, wrapUnknown
			}
			continue
		}
		if s.numeric && isDigits(l[1:]) {
			continue
		}
		next, m := s.short(l[1:])
		switch {
		case m == wrapUnknown || m == wrapNone:
			return 0, -1, m
		case next == shellNext:
			return 0, i + 1, mode
		case m == wrapShell:
			mode = wrapShell
		}
		if next == argNext {
			i++
		}
	}
	if s.needShellOpt {
		return 0, -1, wrapNone
	}
	at = i + s.positional
	if at >= len(args) {
		return 0, -1, wrapNone
	}
	return at, -1, mode
}

const (
	argNone   = iota // the bundle takes no further word
	argNext          // the next word is an option's argument
	shellNext        // the next word is a command line
)

// short reads one bundle of short options (without its dash).
func (s wrapSpec) short(bundle string) (next int, mode wrapMode) {
	mode = wrapExec
	for j := 0; j < len(bundle); j++ {
		c := bundle[j : j+1]
		switch {
		case strings.Contains(s.noCmd, c):
			return argNone, wrapNone
		case strings.Contains(s.shellOpts, c):
			if j+1 < len(bundle) {
				return argNone, wrapUnknown
			}
			return shellNext, mode
		case strings.Contains(s.argOpts, c):
			if j+1 < len(bundle) {
				return argNone, mode // attached: -n5
			}
			return argNext, mode
		case strings.Contains(s.optArg, c):
			return argNone, mode // -i or -i{}
		case strings.Contains(s.shellFlags, c):
			mode = wrapShell
		case !strings.Contains(s.flags, c):
			return argNone, wrapUnknown
		}
	}
	return argNone, mode
}

// unwrap looks through what a command runs: sh -c and eval strings, find
// -exec, and wrappers. The command a wrapper runs becomes a part of its
// own (the wrapper's part stays: an allow rule must allow both), except
// for the CLI's safe wrappers, which are stripped from the part.
func (p *shReader) unwrap(pt part) part {
	for range maxShellDepth {
		ws := pt.words()
		if len(ws) == 0 || pt.dynamic {
			return pt
		}
		name, args := path.Base(ws[0].lit), ws[1:]
		switch {
		case shells[name]:
			p.shellC(&pt, args)
			return pt
		case name == "eval":
			p.shellWords(args)
			return pt
		case name == "find":
			p.findExec(&pt, args)
			return pt
		case name == "env":
			if s, ok := envSplitString(args); ok {
				p.shellString(s)
				pt.opaque = true
				pt.extra = append(pt.extra, suffixes(ws)...)
				return pt
			}
		}
		spec, ok := wrappers[name]
		if !ok {
			return pt
		}
		at, shellArg, mode := spec.command(args)
		switch {
		case mode == wrapNone:
			return pt
		case mode == wrapUnknown:
			pt.opaque = true
			pt.extra = append(pt.extra, suffixes(ws)...)
			return pt
		case shellArg >= 0:
			if shellArg < len(args) {
				p.shellString(args[shellArg])
			}
			return pt
		case mode == wrapShell:
			p.shellWords(args[at:])
			return pt
		case spec.safe && !slices.ContainsFunc(pt.toks, func(t token) bool { return t.kind == tokAssign }):
			pt.extra = append(pt.extra, pt.allowText())
			pt = dropWords(pt, 1+at)
			pt.dynamic = dynamicProgram(args[at])
		default:
			p.addWords(args[at:], spec.appends)
			return pt
		}
	}
	return pt
}

// dropWords removes the first n words of pt (a stripped wrapper).
func dropWords(pt part, n int) part {
	toks := make([]token, 0, len(pt.toks))
	for _, t := range pt.toks {
		if t.kind == tokWord && n > 0 {
			n--
			continue
		}
		toks = append(toks, t)
	}
	pt.toks, pt.ws = toks, nil
	pt.ws = pt.words()
	return pt
}

// addWords records the command a wrapper runs as a part of its own.
func (p *shReader) addWords(ws []word, more bool) {
	pt := part{more: more}
	for _, w := range ws {
		pt.toks = append(pt.toks, token{kind: tokWord, raw: w.raw, word: w})
	}
	p.depth++
	if p.depth > maxShellDepth {
		p.fail("nested too deeply")
	} else {
		p.add(pt)
	}
	p.depth--
}

// shellC finds the command line of sh -c and reads it. A shell given
// neither -c nor a script (or given -s) reads its commands from its
// input: a here-string or here-document of plain text is read as the
// command line, and any other input makes the part's commands known only
// when it runs.
func (p *shReader) shellC(pt *part, args []word) {
	cflag, stdin := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		l := a.lit
		switch {
		case a.expands || a.glob:
			if cflag {
				p.shellString(a)
			}
			return
		case l == "--" || l == "-":
			switch {
			case cflag && i+1 < len(args):
				p.shellString(args[i+1])
			case !cflag && (l == "-" || i+1 == len(args)):
				p.shellInput(pt)
			}
			return
		case strings.HasPrefix(l, "--"):
			if l == "--rcfile" || l == "--init-file" {
				i++
			}
			continue
		case len(l) > 1 && (l[0] == '-' || l[0] == '+'):
			cflag = cflag || (l[0] == '-' && strings.Contains(l, "c"))
			stdin = stdin || (l[0] == '-' && strings.ContainsAny(l, "si"))
			if strings.ContainsAny(l[len(l)-1:], "oO") {
				i++
			}
			continue
		}
		switch {
		case cflag:
			p.shellString(a)
		case stdin:
			p.shellInput(pt)
		}
		return
	}
	if !cflag {
		p.shellInput(pt)
	}
}

// shellInput reads what a shell reading its input runs: the text of its
// here-string or here-document, or, from anywhere else, something known
// only when it runs.
func (p *shReader) shellInput(pt *part) {
	if pt.stdin != nil && !pt.stdin.expands {
		p.sub(pt.stdin.lit)
		return
	}
	pt.dynamic = true
}

// findExec records the commands find's -exec, -execdir, -ok and -okdir run.
func (p *shReader) findExec(pt *part, args []word) {
	for i := 0; i < len(args); i++ {
		switch args[i].lit {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].lit != ";" && args[j].lit != "+" {
				j++
			}
			if j == len(args) {
				pt.opaque = true
				pt.extra = append(pt.extra, suffixes(args[i:])...)
				return
			}
			if j > i+1 {
				p.addWords(args[i+1:j], false)
			}
			i = j
		}
	}
}

// shellString reads one word as a command line (sh -c STRING).
func (p *shReader) shellString(w word) { p.shellWords([]word{w}) }

// shellWords reads words joined by spaces as a command line (eval, ssh).
// One computed when it runs is a dynamic part: never allowed, and caught
// by every deny and ask rule about Bash.
func (p *shReader) shellWords(ws []word) {
	if len(ws) == 0 {
		return
	}
	raws, lits := make([]string, len(ws)), make([]string, len(ws))
	dynamic := false
	for i, w := range ws {
		raws[i], lits[i] = w.raw, w.lit
		dynamic = dynamic || w.expands
	}
	if dynamic {
		if len(*p.out) >= maxShellParts {
			p.fail("too many commands")
			return
		}
		raw := strings.Join(raws, " ")
		*p.out = append(*p.out, part{dynamic: true, toks: []token{{kind: tokWord, raw: raw, word: word{raw: raw, lit: raw, expands: true}}}})
		return
	}
	p.sub(strings.Join(lits, " "))
}

// suffixes are the texts from each of the first four places after the
// program where a command might start (a word that is not an option or
// an assignment), for deny and ask rules when a wrapper's options are
// not understood.
func suffixes(ws []word) []string {
	var out []string
	starts := 0
	for i := 1; i < len(ws) && starts < 4; i++ {
		l := ws[i].lit
		if l == "" || l[0] == '-' || assignment(ws[i]) {
			continue
		}
		starts++
		out = append(out, canonical(ws[i:])...)
	}
	return out
}

// envSplitString finds env's -S STRING (--split-string): env splits it
// into the command and its arguments, much as a shell would, so it is
// read as a command line (approximately: the env part is never allowed).
func envSplitString(args []word) (word, bool) {
	for i, a := range args {
		l := a.lit
		long, isLong := strings.CutPrefix(l, "--")
		name, val, hasVal := strings.Cut(long, "=")
		switch {
		case l == "--":
			return word{}, false
		case isLong && len(name) >= 1 && strings.HasPrefix("split-string", name):
			if hasVal {
				return word{raw: val, lit: val, expands: a.expands}, true
			}
			if i+1 < len(args) {
				return args[i+1], true
			}
			return word{}, false
		case !isLong && strings.HasPrefix(l, "-") && strings.Contains(l, "S"):
			if v := l[strings.IndexByte(l, 'S')+1:]; v != "" {
				return word{raw: v, lit: v, expands: a.expands}, true
			}
			if i+1 < len(args) {
				return args[i+1], true
			}
			return word{}, false
		case !strings.HasPrefix(l, "-") && !assignment(a):
			return word{}, false
		}
	}
	return word{}, false
}
