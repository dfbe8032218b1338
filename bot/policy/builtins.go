package policy

import "strings"

// Bash builtins that evaluate what their arguments name. A variable
// named with a subscript (a[$(…)]) is arithmetic, and bash runs the
// substitutions of a subscript when it evaluates it: printf -v, read,
// test -v, unset, declare and their kin all do, even when the argument
// was quoted, so an allow rule for printf would run a command hidden in
// a quoted argument. Each such builtin is modeled only with names that
// are plain and options the table knows; anything else is not modeled
// (parts found are kept for deny and ask rules; no allow rule matches).

// builtinSpec is how a builtin's arguments are read: options taking a
// word, options taking a variable name, flags, and whether operands are
// variable names.
type builtinSpec struct {
	argOpts, nameOpts, flags string
	// risky are options the reader does not model at all (mapfile -C
	// runs a callback, declare -i evaluates values).
	risky string
	// operands: which operands are variable names.
	operands operandKind
}

type operandKind uint8

const (
	operandsData  operandKind = iota // no operand names a variable
	operandsNames                    // every operand does
	operandsDecl                     // NAME or NAME=value, as declare takes them
	operandSecond                    // the second does (getopts OPTSTRING NAME)
)

var builtinSpecs = map[string]builtinSpec{
	"printf":    {nameOpts: "v"},
	"read":      {argOpts: "dinNptu", nameOpts: "a", flags: "ers", operands: operandsNames},
	"mapfile":   {argOpts: "dnOsuc", flags: "t", risky: "C", operands: operandsNames},
	"readarray": {argOpts: "dnOsuc", flags: "t", risky: "C", operands: operandsNames},
	"unset":     {flags: "fvn", operands: operandsNames},
	"wait":      {nameOpts: "p", flags: "fn"},
	"getopts":   {operands: operandSecond},
	"declare":   {flags: "fFgprtuxlcI", risky: "inaA", operands: operandsDecl},
	"typeset":   {flags: "fFgprtuxlcI", risky: "inaA", operands: operandsDecl},
	"local":     {flags: "fFgprtuxlcI", risky: "inaA", operands: operandsDecl},
	"export":    {flags: "fnp", operands: operandsDecl},
	"readonly":  {flags: "fp", risky: "aA", operands: operandsDecl},
	"nameref":   {risky: "-", operands: operandsDecl},
}

// unmodeledBuiltins change what later commands run, or run words as
// code, in ways the reader does not follow.
var unmodeledBuiltins = map[string]string{
	"let":      "let is arithmetic, which runs what variables name",
	"compgen":  "compgen expands and runs its word lists and commands",
	"complete": "complete runs commands and expands word lists",
	"bind":     "bind can run commands",
	"fc":       "fc runs commands from history",
	"enable":   "enable loads builtins or turns them off, changing what later names run",
}

// builtin notes what an evaluating builtin in pt would run that the
// reader does not model; trap's action is read as a command line.
func (p *shReader) builtin(pt part) {
	ws := pt.words()
	if len(ws) == 0 || pt.dynamic {
		return
	}
	name, args := ws[0].lit, ws[1:]
	if why, ok := unmodeledBuiltins[name]; ok {
		p.model(why)
		return
	}
	switch name {
	case "test", "[":
		for i, a := range args {
			if (a.lit == "-v" || a.lit == "-R") && i+1 < len(args) && !plainName(args[i+1]) {
				p.model(name + " -v of something other than a name evaluates its subscript")
			}
		}
		return
	case "trap":
		p.trap(args)
		return
	case "alias":
		for _, a := range args {
			if strings.Contains(a.lit, "=") || a.expands {
				p.model("alias changes what later commands run")
			}
		}
		return
	case "hash":
		for _, a := range args {
			if strings.HasPrefix(a.lit, "-") && strings.Contains(a.lit, "p") || a.expands {
				p.model("hash -p changes which program a name runs")
			}
		}
		return
	}
	spec, ok := builtinSpecs[name]
	if !ok {
		return
	}
	if why := spec.check(name, args); why != "" {
		p.model(why)
	}
}

// check reads a builtin's arguments by its spec; "" when every one is
// modeled.
func (s builtinSpec) check(name string, args []word) string {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a.expands || a.glob {
			if s.operands == operandsDecl && declAssignment(a) {
				break
			}
			return name + " with an argument known only when it runs, which may name a subscript"
		}
		l := a.lit
		if l == "--" {
			i++
			break
		}
		if len(l) < 2 || (l[0] != '-' && !(l[0] == '+' && s.operands == operandsDecl)) {
			break
		}
		for j := 1; j < len(l); j++ {
			c := l[j : j+1]
			switch {
			case strings.Contains(s.risky, c):
				return name + " " + l[:1] + c + " is not modeled"
			case strings.Contains(s.flags, c):
			case strings.Contains(s.argOpts, c) || strings.Contains(s.nameOpts, c):
				val, rest := l[j+1:], ""
				if val == "" {
					if i+1 >= len(args) {
						return ""
					}
					i++
					rest = "next"
				}
				if strings.Contains(s.nameOpts, c) {
					w := word{lit: val}
					if rest != "" {
						w = args[i]
					}
					if !plainName(w) {
						return name + " -" + c + " of something other than a name evaluates its subscript"
					}
				}
				j = len(l)
			default:
				return name + " " + l + ": an option the reader does not know"
			}
		}
	}
	ops := args[i:]
	for k, a := range ops {
		switch {
		case s.operands == operandsNames || s.operands == operandSecond && k == 1:
			if !plainName(a) {
				return name + " of something other than a name evaluates its subscript"
			}
		case s.operands == operandsDecl:
			if !plainName(a) && !declAssignment(a) {
				return name + " of something other than NAME or NAME=value evaluates its subscript"
			}
		}
	}
	return ""
}

// plainName: a variable name as written, with no subscript.
func plainName(w word) bool { return !w.expands && !w.glob && validName(w.lit) && w.raw == w.lit }

// declAssignment: NAME=value or NAME+=value written as an assignment.
func declAssignment(w word) bool {
	i := strings.IndexByte(w.raw, '=')
	return i > 0 && validName(strings.TrimSuffix(w.raw[:i], "+"))
}

// trap reads trap's action (trap [-lp] [[ACTION] SIGNAL…]) as a command
// line: it runs when the signal comes, or as the shell exits.
func (p *shReader) trap(args []word) {
	if len(args) > 0 && args[0].lit == "--" {
		args = args[1:]
	} else if len(args) > 0 && !args[0].expands && len(args[0].lit) > 1 && args[0].lit[0] == '-' {
		if strings.Trim(args[0].lit[1:], "lpP") != "" {
			p.model("trap " + args[0].lit + ": an option the reader does not know")
		}
		return // -l, -p: lists, runs nothing
	}
	if len(args) < 2 || !args[0].expands && (isDigits(args[0].lit) || args[0].lit == "-") {
		return // one operand, or a signal number or -: resets signals
	}
	p.shellString(args[0])
}
