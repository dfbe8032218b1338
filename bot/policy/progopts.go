package policy

import (
	"path"
	"slices"
	"strings"
)

// Programs' own options that write files or run other programs. An
// allow rule for a program allows its safe use: a part that uses one of
// these asks unless the rule itself spells the option (Bash(sort -o
// out.txt:*)). The CLI's own rules match such a part by its text alone;
// the policy is stricter because `git diff --output=.git/config` writes
// the configuration the next allowed `git diff` obeys.

// optStyle is how a program reads its options.
type optStyle uint8

const (
	// styleGNU is getopt_long: short options bundle (-uo FILE), options
	// come anywhere before --, and a long option may be shortened to any
	// prefix (--out=FILE).
	styleGNU optStyle = iota
	// styleGo is Go's flag package: -name or --name, =value or the next
	// word, no bundles.
	styleGo
	// styleFind is find's expression: primaries anywhere after the paths.
	styleFind
)

// progTable describes one program, or one subcommand of it.
type progTable struct {
	style optStyle
	// argShort are short options taking a value; argLong long ones.
	argShort string
	argLong  []string
	// risky are the options that write files or run programs, as
	// written: "-o", "--output" (a prefix of it counts), "-exec".
	risky []string
	why   string
	// subs are subcommands (the first operand), each with its options.
	subs map[string]*progTable
	// operands reports operands that write or run (make's VAR=value,
	// uniq's output file), as indices into the operands given.
	operands func(ws []word) []int
	// custom reads what the table cannot say (sed's scripts, tar's
	// old-style bundle): ws is the whole part, from where its options
	// start.
	custom func(ws []word, from int) []riskSpan
	// ownSubs: a subcommand the table does not list has options of its
	// own, none of them in risky (git).
	ownSubs bool
}

// riskSpan is a word of a part that writes files or runs programs, and
// what it does.
type riskSpan struct {
	word int // index among the part's words
	why  string
	// name, when set, is how much of the word names the option
	// (--output of --output=FILE): a rule spelling it allows any value.
	name int
	// exec are command lines the word runs (sed's e COMMAND), for deny
	// and ask rules.
	exec []string
}

var diffRisky = []string{"--output", "--ext-diff", "--textconv"}

const diffWhy = "writes a file or runs a configured program"

var gitSubs = map[string]*progTable{
	"diff":        {risky: diffRisky, why: diffWhy},
	"diff-tree":   {risky: diffRisky, why: diffWhy},
	"diff-index":  {risky: diffRisky, why: diffWhy},
	"diff-files":  {risky: diffRisky, why: diffWhy},
	"log":         {risky: diffRisky, why: diffWhy},
	"show":        {risky: diffRisky, why: diffWhy},
	"whatchanged": {risky: diffRisky, why: diffWhy},
	"range-diff":  {risky: diffRisky, why: diffWhy},
	"stash":       {risky: diffRisky, why: diffWhy},
	"format-patch": {argShort: "o", risky: append([]string{"-o", "--output-directory"}, diffRisky...),
		why: "writes files"},
	"archive":       {argShort: "o", risky: []string{"-o", "--output", "--remote", "--exec"}, why: "writes a file or runs a program"},
	"grep":          {risky: []string{"-O", "--open-files-in-pager", "--textconv", "--ext-grep"}, why: "runs a program"},
	"cat-file":      {risky: []string{"--textconv", "--filters"}, why: "runs a configured program"},
	"blame":         {risky: []string{"--textconv"}, why: "runs a configured program"},
	"fetch":         {risky: []string{"--upload-pack"}, why: "runs a program"},
	"pull":          {risky: []string{"--upload-pack"}, why: "runs a program"},
	"ls-remote":     {risky: []string{"--upload-pack", "--exec"}, why: "runs a program"},
	"push":          {risky: []string{"--receive-pack", "--exec"}, why: "runs a program"},
	"clone":         {argShort: "ubo", risky: []string{"-u", "--upload-pack", "--template", "-c", "--config"}, why: "runs a program or sets configuration"},
	"init":          {risky: []string{"--template"}, why: "installs hooks from a directory"},
	"rebase":        {argShort: "x", risky: []string{"-x", "--exec"}, why: "runs a command"},
	"difftool":      {argShort: "xt", risky: []string{"-x", "--extcmd", "-t", "--tool"}, why: "runs a program"},
	"mergetool":     {argShort: "t", risky: []string{"-t", "--tool"}, why: "runs a program"},
	"send-email":    {risky: []string{"--sendmail-cmd", "--smtp-server", "--to-cmd", "--cc-cmd", "--header-cmd"}, why: "runs a program"},
	"bisect":        {operands: operandNamed("run"), why: "runs a command"},
	"bundle":        {operands: operandNamed("create"), why: "writes a file"},
	"submodule":     {operands: operandNamed("foreach"), why: "runs a command"},
	"filter-branch": {operands: func(ws []word) []int { return []int{0} }, why: "runs commands"},
	"config":        {operands: gitConfigWrites, why: "writes git configuration, which names programs git runs"},
}

// programTables are the programs whose options the reader knows.
var programTables = map[string]*progTable{
	"git": {argShort: "Cc", argLong: []string{"git-dir", "work-tree", "namespace", "super-prefix", "config-env", "list-cmds", "attr-source"},
		risky: []string{"-c", "--config-env", "--exec-path", "-p", "--paginate"}, why: "sets configuration or runs a program",
		subs: gitSubs, ownSubs: true},
	"find": {style: styleFind, risky: []string{"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"},
		why: "deletes, writes files or runs commands"},
	"sort": {argShort: "kSTto", argLong: []string{"batch-size", "buffer-size", "field-separator", "key", "output", "parallel", "temporary-directory", "compress-program", "files0-from", "random-source", "sort"},
		risky: []string{"-o", "--output", "--compress-program"}, why: "writes a file or runs a program"},
	"shuf": {argShort: "inoe", argLong: []string{"head-count", "input-range", "output", "random-source"},
		risky: []string{"-o", "--output"}, why: "writes a file"},
	"sed": {argShort: "efl", argLong: []string{"expression", "file", "line-length"},
		risky: []string{"-i", "--in-place", "-f", "--file"}, why: "edits files in place or runs a script from a file",
		custom: sedScripts},
	"tar": {argShort: "bfCgHIKLNTVX", argLong: []string{"file", "directory", "use-compress-program", "to-command", "checkpoint-action", "info-script", "new-volume-script", "rsh-command", "rmt-command", "index-file", "transform", "exclude", "files-from"},
		risky: []string{"-I", "--use-compress-program", "--to-command", "--checkpoint-action", "-F", "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command", "--index-file"},
		why:   "runs a program", custom: tarOldStyle},
	"go": {style: styleGo, subs: map[string]*progTable{
		"build":    goBuild,
		"install":  goBuild,
		"run":      goBuild,
		"test":     goBuild,
		"vet":      goBuild,
		"list":     goBuild,
		"generate": goBuild,
		"env":      {style: styleGo, risky: []string{"-w", "-u"}, why: "writes go's configuration"},
	}},
	"make": {argShort: "CfIjlOoWE", argLong: []string{"directory", "file", "makefile", "include-dir", "jobs", "load-average", "output-sync", "old-file", "assume-old", "what-if", "new-file", "assume-new", "eval", "jobserver-style"},
		risky: []string{"-f", "--file", "--makefile", "-C", "--directory", "-I", "--include-dir", "-E", "--eval"},
		why:   "reads another makefile or sets a variable, which names the commands make runs", operands: makeAssignments},
	"npm":  npmTable,
	"pnpm": npmTable,
	"yarn": npmTable,
	"npx":  {operands: func(ws []word) []int { return []int{0} }, why: "downloads and runs a package"},
	"xargs": {argShort: "adEILnPs", argLong: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
		why: "runs the command after it (a part of its own)"},
	"uniq": {argShort: "fsw", argLong: []string{"skip-fields", "skip-chars", "check-chars", "group", "all-repeated"},
		operands: nthOperand(1), why: "writes its second operand"},
	"xxd":  {argShort: "cgloscnC", operands: nthOperand(1), why: "writes its second operand"},
	"tree": {argShort: "LPIoH", risky: []string{"-o"}, why: "writes a file"},
	"rg":   {argShort: "ABCEefgjMmrtT", risky: []string{"--pre"}, why: "runs a program on each file"},
	"fd":   {risky: []string{"-x", "--exec", "-X", "--exec-batch"}, why: "runs a program"},
	"curl": {argShort: "AbcCdDeEFHKmoQrTuUwxXyYz", risky: []string{"-o", "--output", "-O", "--remote-name", "--remote-name-all", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "-K", "--config", "--etag-save", "--hsts", "--alt-svc", "--stderr", "-w", "--write-out"},
		why: "writes a file or reads options from one"},
	"wget": {argShort: "eoaOPiBTtwQUYl", risky: []string{"-e", "--execute", "--config", "-o", "--output-file", "-a", "--append-output"},
		why: "runs wgetrc commands or writes a log"},
	"rsync": {argShort: "eBfT", risky: []string{"-e", "--rsh", "--rsync-path"}, why: "runs a program"},
	"zip":   {risky: []string{"-TT", "--unzip-command"}, why: "runs a program"},
}

var goBuild = &progTable{style: styleGo,
	risky: []string{"-exec", "-toolexec", "-vettool", "-o", "-coverprofile", "-cpuprofile", "-memprofile", "-blockprofile", "-mutexprofile", "-trace", "-outputdir", "-pkgdir", "-modfile", "-overlay"},
	why:   "runs a program or writes a file"}

var npmTable = &progTable{
	risky: []string{"--script-shell", "--node-options", "--userconfig", "--globalconfig", "-c", "--call", "--shell-emulator"},
	why:   "runs a program or reads configuration that names one",
	subs: map[string]*progTable{
		"exec":   {operands: func(ws []word) []int { return []int{0} }, why: "runs a package's program"},
		"x":      {operands: func(ws []word) []int { return []int{0} }, why: "runs a package's program"},
		"dlx":    {operands: func(ws []word) []int { return []int{0} }, why: "downloads and runs a package"},
		"config": {operands: func(ws []word) []int { return []int{0} }, why: "writes configuration that names programs"},
		"set":    {operands: func(ws []word) []int { return []int{0} }, why: "writes configuration that names programs"},
	},
}

// risky lists the words of a part (ws[0] its program) that write files
// or run programs by the program's own options, and every word known
// only when it runs where the program has such options.
func risky(ws []word) []riskSpan {
	if len(ws) == 0 {
		return nil
	}
	t, ok := programTables[path.Base(ws[0].lit)]
	if !ok || ws[0].expands {
		return nil
	}
	return t.scan(ws, 1)
}

// scan reads ws[from:] by t.
func (t *progTable) scan(ws []word, from int) []riskSpan {
	var out []riskSpan
	var operands []int
	hasRisk := len(t.risky) > 0 || t.operands != nil || t.subs != nil
	i := from
	for ; i < len(ws); i++ {
		w := ws[i]
		if w.expands || w.glob && globMayStartWithDash(w) {
			if hasRisk {
				out = append(out, riskSpan{word: i, why: "known only when it runs: it may be an option that " + t.whyOr()})
			}
			operands = append(operands, i)
			continue
		}
		l := w.lit
		if l == "--" && t.style != styleFind {
			operands = append(operands, indices(i+1, len(ws))...)
			break
		}
		if len(l) < 2 || l[0] != '-' {
			if t.subs != nil && len(operands) == 0 {
				if sub, ok := t.subs[l]; ok {
					return append(out, sub.scan(ws, i+1)...)
				}
				if t.ownSubs {
					return out // a subcommand the table does not know: its own options
				}
			}
			operands = append(operands, i)
			continue
		}
		hit, takesNext := t.option(l)
		if hit {
			name := 0
			if eq := strings.IndexByte(w.raw, '='); eq > 0 && w.raw[:eq] == l[:min(eq, len(l))] {
				name = eq
			}
			out = append(out, riskSpan{word: i, why: t.why, name: name})
		}
		if takesNext && i+1 < len(ws) {
			i++
		}
	}
	if t.operands != nil && len(operands) > 0 {
		ops := make([]word, len(operands))
		for k, at := range operands {
			ops[k] = ws[at]
		}
		for _, k := range t.operands(ops) {
			out = append(out, riskSpan{word: operands[k], why: t.why})
		}
	}
	if t.custom != nil {
		out = append(out, t.custom(ws, from)...)
	}
	return out
}

func (t *progTable) whyOr() string {
	if t.why == "" {
		return "writes files or runs programs"
	}
	return t.why
}

func indices(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// globMayStartWithDash: a glob whose expansion may be a file named like
// an option (*, ?x, [-]x, {-o,x}).
func globMayStartWithDash(w word) bool {
	return w.lit == "" || strings.ContainsRune("*?[{", rune(w.lit[0]))
}

// option reads one option word: whether it is risky, and whether the
// option takes the next word as its value.
func (t *progTable) option(l string) (hit, takesNext bool) {
	switch t.style {
	case styleFind:
		return slices.Contains(t.risky, l), false
	case styleGo:
		name, _, hasVal := strings.Cut(strings.TrimPrefix(l, "-"), "=")
		name = strings.TrimPrefix(name, "-")
		hit = slices.Contains(t.risky, "-"+name)
		return hit, hit && !hasVal
	case styleGNU:
	}
	if long, ok := strings.CutPrefix(l, "--"); ok {
		name, _, hasVal := strings.Cut(long, "=")
		if name == "" {
			return false, false
		}
		for _, r := range t.risky {
			if rn, ok := strings.CutPrefix(r, "--"); ok && strings.HasPrefix(rn, name) {
				hit = true
			}
		}
		if !hasVal {
			for _, a := range t.argLong {
				if a == name {
					takesNext = true
				}
			}
		}
		return hit, takesNext
	}
	bundle := l[1:]
	for j := 0; j < len(bundle); j++ {
		c := bundle[j : j+1]
		if slices.Contains(t.risky, "-"+c) || slices.Contains(t.risky, l) {
			hit = true
		}
		if strings.Contains(t.argShort, c) {
			return hit, j == len(bundle)-1
		}
	}
	return hit, false
}

// operandNamed: the subcommand's first operand is name (bisect run).
func operandNamed(name string) func([]word) []int {
	return func(ws []word) []int {
		if len(ws) > 0 && ws[0].lit == name {
			return []int{0}
		}
		return nil
	}
}

// nthOperand: the operand at n (uniq IN OUT) is written.
func nthOperand(n int) func([]word) []int {
	return func(ws []word) []int {
		if len(ws) > n {
			return []int{n}
		}
		return nil
	}
}

// gitConfigWrites: git config writes unless it only reads (one operand,
// or --get…, --list, -l).
func gitConfigWrites(ws []word) []int {
	if len(ws) <= 1 {
		return nil
	}
	return []int{0}
}

// makeAssignments: VAR=value operands override the makefile's variables
// (SHELL, CC, MAKEFLAGS), naming what make runs.
func makeAssignments(ws []word) []int {
	var out []int
	for i, w := range ws {
		if w.expands || strings.Contains(w.lit, "=") {
			out = append(out, i)
		}
	}
	return out
}

// tarOldStyle: tar's first word without a dash is a bundle of options
// (tar xvf); I and F in it run programs.
func tarOldStyle(ws []word, from int) []riskSpan {
	if from < len(ws) && !strings.HasPrefix(ws[from].lit, "-") && strings.ContainsAny(ws[from].lit, "IF") && !strings.ContainsAny(ws[from].lit, "/.") {
		return []riskSpan{{word: from, why: "runs a program"}}
	}
	return nil
}

// gitWithoutGlobals is git's command with its global options dropped
// (git -C . push → git push), for deny and ask rules.
func gitWithoutGlobals(ws []word) []string {
	if len(ws) < 2 || path.Base(ws[0].lit) != "git" {
		return nil
	}
	g := programTables["git"]
	i := 1
	for i < len(ws) {
		l := ws[i].lit
		if ws[i].expands || len(l) < 2 || l[0] != '-' {
			break
		}
		_, next := g.option(l)
		i++
		if next {
			i++
		}
	}
	if i == 1 || i >= len(ws) {
		return nil
	}
	lits := []string{"git"}
	for _, w := range ws[i:] {
		lits = append(lits, w.lit)
	}
	return []string{strings.Join(lits, " ")}
}
