package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The reader is held to real bash: each command runs in bash the way
// Claude Code's Bash tool runs it (eval in a bash with expand_aliases on),
// in a scratch directory whose PATH holds a few programs, and whatever bash
// ran or wrote is compared with what the reader said. Hidden actions are
// `touch mN`: a file mN appearing means bash ran that touch.

// oracleEnv are variables bash gets whose values a command may use: a
// value evaluated as arithmetic or as a prompt runs its substitution, and
// no text of the command says so.
var oracleEnv = []string{"A=a[$(touch mA)]", "X=$(touch mX)"}

// diffAllow allows every program the commands use but touch, as a team
// that trusts them would; a command bash made write anything, or run
// touch, must never be allowed by it.
const diffAllow = `rules:
  - name: no-touch
    match: ["Bash(touch:*)"]
    deny: {}
  - name: everything-else
    match: ["Bash(echo:*)", "Bash(cat:*)", "Bash(printf:*)", "Bash(read:*)", "Bash(test:*)", "Bash([:*)", "Bash([[:*)",
      "Bash(true)", "Bash(false)", "Bash(declare:*)", "Bash(typeset:*)", "Bash(export:*)", "Bash(readonly:*)", "Bash(local:*)",
      "Bash(unset:*)", "Bash(let:*)", "Bash(mapfile:*)", "Bash(readarray:*)", "Bash(getopts:*)", "Bash(wait:*)", "Bash(trap:*)",
      "Bash(: *)", "Bash(compgen:*)", "Bash(hash:*)", "Bash(alias:*)", "Bash(eval:*)", "Bash(bash:*)", "Bash(sh:*)",
      "Bash(env:*)", "Bash(xargs:*)", "Bash(command:*)", "Bash(builtin:*)", "Bash(sort:*)", "Bash(sed:*)", "Bash(find:*)",
      "Bash(shift:*)", "Bash(set:*)", "Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(git status:*)",
      "Bash(git -c:*)", "Bash(uniq:*)", "Bash(tar -tf:*)", "Bash(tar -xOf:*)", "Bash(tar tf:*)"]
    allow: {}
`

// bashOracle runs commands in real bash.
type bashOracle struct {
	bash, bin, home, tmp string
}

func newBashOracle(tb testing.TB) *bashOracle {
	tb.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		tb.Fatalf("the reader is tested against real bash, and there is none on PATH: %v", err)
	}
	o := &bashOracle{bash: bash, bin: tb.TempDir(), home: tb.TempDir(), tmp: tb.TempDir()}
	for _, prog := range []string{"touch", "cat", "sort", "sed", "find", "env", "xargs", "uniq", "tar", "git", "sh", "bash"} {
		p, err := exec.LookPath(prog)
		if err != nil {
			tb.Fatalf("the oracle needs %s: %v", prog, err)
		}
		if err := os.Symlink(p, filepath.Join(o.bin, prog)); err != nil {
			tb.Fatal(err)
		}
	}
	return o
}

// run runs cmd in dir and returns the paths below dir that appeared,
// changed or went.
func (o *bashOracle) run(tb testing.TB, dir, cmd string) []string {
	tb.Helper()
	before := listTree(tb, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, o.bash, "-c", `shopt -s expand_aliases; eval "$1"`, "bash", cmd)
	c.Dir = dir
	c.Env = append([]string{"PATH=" + o.bin, "HOME=" + o.home, "TMPDIR=" + o.tmp, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}, oracleEnv...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 2 * time.Second
	err := c.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		tb.Fatalf("bash %q: %v", cmd, err)
	}
	if ctx.Err() != nil {
		tb.Fatalf("bash %q did not finish", cmd)
	}
	after := listTree(tb, dir)
	var changed []string
	for p, sum := range after {
		if before[p] != sum {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed
}

// listTree maps each path below dir (but inside .git, only config and
// hooks: the rest is git's own) to its size and mode.
func listTree(tb testing.TB, dir string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(rel, ".git/") && rel != ".git/config" && !strings.HasPrefix(rel, ".git/hooks") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "dir" // its times change with what is in it
			return nil
		}
		out[rel] = fmt.Sprint(info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// marker reports whether p is a touch marker, and whether bash ran that
// touch from the command's own text: mN is, while pN (a touch a program
// ran, as sed's s///e does with its pattern space) and mA, mX (from
// oracleEnv) are markers no text of the command spells as a command.
func marker(p string) (isMarker, fromText bool) {
	switch {
	case p == "mA" || p == "mX":
		return true, false
	case len(p) > 1 && p[0] == 'p' && isDigits(p[1:]):
		return true, false
	}
	return len(p) > 1 && p[0] == 'm' && isDigits(p[1:]), true
}

// agreesWithBash runs cmd in a fresh scratch directory (holding in.txt)
// and checks the policy against what bash did: if bash wrote anything or
// ran touch, no allow; if it ran a touch the command spells, the deny
// rule for touch sees it.
func agreesWithBash(tb testing.TB, o *bashOracle, pol *Policy, cmd string) {
	tb.Helper()
	dir, err := os.MkdirTemp(o.tmp, "scratch")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("b\na\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	changed := o.run(tb, dir, cmd)
	if len(changed) == 0 {
		return
	}
	input, _ := json.Marshal(map[string]string{"command": cmd})
	v := pol.Evaluate(Request{Tool: "Bash", Input: input, Cwd: dir, Resolved: map[string]string{dir: dir}}, time.Time{})
	if v.Action == Allow {
		tb.Errorf("bash ran or wrote %q for %q, yet the policy allows it (%s)", changed, cmd, v.Matcher)
		return
	}
	for _, p := range changed {
		if m, fromText := marker(p); m && fromText && v.Action != Deny {
			tb.Errorf("bash ran the touch making %s for %q, yet the deny rule for touch does not see it (%v)", p, cmd, v.Action)
			return
		}
	}
}

// readerCases are commands whose hidden part the reader once missed, or
// might: each family of issue 25 in several spellings, the builtins that
// evaluate what they name, and programs' own options that write or run.
var readerCases = []string{
	// Quote characters inside ${…} inside double quotes or a here-document.
	`echo "${x:-'$(touch m1)'}"`,
	`echo "${x:-'}$(touch m2)'}"`,
	`echo "${x-'"'$(touch m3)'"'}"`,
	`echo "${x:+'}'}$(touch m4)"`,
	"cat <<E\n${x:-'$(touch m5)'}\nE",
	"cat <<E\n${x:-'}$(touch m6)'}\nE",
	`echo "${x//'/'$(touch m7)}"`,
	// ANSI-C quoting inside ${…}.
	`echo ${x:-$'\''}$(touch m8)'}`,
	`echo "${x:-$'\''}$(touch m9)"`,
	`echo ${x:-$'a\'b'}$(touch m10)`,
	// Here-document delimiters written with quoting.
	"cat <<$'E'\nx\nE\ntouch m11",
	"cat <<\\E\nx\nE\ntouch m12",
	"cat <<\"E\"x\n$(touch m13)\nEx\ntouch m14",
	"cat <<E'x'\nx\nEx\ntouch m15",
	"cat <<$'\\x45'\nx\nE\ntouch m16",
	"cat <<-'E'\n\tx\n\tE\ntouch m17",
	"cat <<E\\\nx\nE\ntouch m18",
	// Builtins that evaluate what they name.
	`printf -v 'a[$(touch m19)]' x`,
	`printf -v"a[$(touch m20)]" x`,
	`test -v 'a[$(touch m21)]'`,
	`[ -v 'a[$(touch m22)]' ]`,
	`read 'a[$(touch m23)]' <<< x`,
	`read -a 'b[$(touch m24)]' <<< x`,
	`declare 'a[$(touch m25)]=1'`,
	`typeset 'a[$(touch m26)]=1'`,
	`export 'a[$(touch m27)]=1'`,
	`declare -i n; n='a[$(touch m28)]'`,
	`let 'a[$(touch m29)]=1'`,
	`[[ 'a[$(touch m30)]' -eq 1 ]]`,
	`[[ -v 'a[$(touch m31)]' ]]`,
	`unset 'a[$(touch m32)]'`,
	`mapfile -C 'touch m33' -c 1 a <<< x`,
	`compgen -W '$(touch m34)' x`,
	`trap 'touch m35' EXIT`,
	`getopts a 'a[$(touch m36)]'`,
	`wait -p 'a[$(touch m37)]'`,
	`command printf -v 'a[$(touch m38)]' x`,
	`builtin read 'a[$(touch m39)]' <<< x`,
	`declare -a 'c=([$(touch m40)]=1)'`,
	// Values that run when evaluated, from the environment.
	`echo $((A))`,
	`echo $[A]`,
	`echo ${!A}`,
	`echo "${X@P}"`,
	`[[ $A -eq 1 ]]`,
	`[[ -v $A ]]`,
	`printf -v "$A" x`,
	`a=(); echo ${a[A]}`,
	`echo ${A:A}`,
	// Shells reading their input.
	`echo touch m41 | bash`,
	`bash <<< 'touch m42'`,
	"bash <<E\ntouch m43\nE",
	`sh -s <<< 'touch m44'`,
	`env -S 'touch m45'`,
	`env --split-string='touch m46'`,
	`echo 'touch m47' | sh -`,
	// Programs' own options that write or run.
	`sort -o out in.txt`,
	`sort -uo out in.txt`,
	`sort --out=out in.txt`,
	`sort --compress-program=touch -S 1 in.txt`,
	`sed -n 'w out' in.txt`,
	`sed 's/a/b/w out' in.txt`,
	`sed -e '1e touch m48' in.txt`,
	`sed -i s/a/b/ in.txt`,
	`sed --in-pl s/a/b/ in.txt`,
	`find . -name in.txt -delete`,
	`find . -fprint out`,
	`find . -name in.txt -exec touch m49 \;`,
	`uniq in.txt out`,
	`xargs touch < in.txt`,
	`alias e='touch m50'` + "\ne",
	`hash -p /dev/null/x ls; hash -p "$(touch m51)" ls`,
	// Where two readings of the same text are close.
	"echo $((touch m52) )",
	"echo $( (touch m53) )",
	"echo \"`echo \\\"$(touch m54)\\\"`\"",
	"echo x#$(touch m55)",
	"echo x #$(touch m56)",
	"echo \"a\\\n$(touch m57)\"",
	"echo \\\n$(touch m58)",
	"echo $'\\c$(touch m59)'",
	"echo ${x:-a\\}$(touch m60)}",
	"case x in (x) touch m61;; esac",
	"case x in x) echo;;& *) touch m62;; esac",
	"echo `echo \\`touch m63\\``",
	"echo \"`echo \\`touch m64\\``\"",
	"echo $(echo ')' ; touch m65)",
	"echo $(cat <<E\n)\nE\ntouch m66)",
	"echo \"$(cat <<'E'\n\"\nE\n)\"; touch m67",
	"echo\rx; touch m68",
	"echo {a,$(touch m69)}",
	"time -p touch m70",
	"coproc touch m71",
	"echo $(( $(touch m72) ))",
	"cat <<E; touch m73\nx\nE",
	"cat <<E | cat <<F\nE\ntouch m74\nF",
	"cat <<E\nx\n E\nE\ntouch m75",
	"cat <<E\nx\nE \ntouch m76\nE",
	"echo \"${x:-\"$(touch m77)\"}\"",
	"echo $\"$(touch m78)\"",
	"f() { touch m79; }; f",
}

// TestReaderAgreesWithBash holds the reader to real bash on readerCases
// and on commands drawn, with a fixed seed, from the fuzzer's grammar.
func TestReaderAgreesWithBash(t *testing.T) {
	o := newBashOracle(t)
	pol := mustParse(t, diffAllow)
	for _, c := range readerCases {
		agreesWithBash(t, o, pol, c)
	}
	rng := rand.New(rand.NewPCG(25, 1))
	for range 600 {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		agreesWithBash(t, o, pol, generate(b))
	}
}

// FuzzReaderAgainstBash builds commands from a grammar of quoting
// contexts × expansions × substitutions × here-documents × builtins ×
// programs' options, nested in each other, and holds the reader to what
// real bash does with each.
func FuzzReaderAgainstBash(f *testing.F) {
	for _, c := range readerCases {
		f.Add([]byte(c))
	}
	o := newBashOracle(f)
	pol := mustParse(f, diffAllow)
	f.Fuzz(func(t *testing.T, b []byte) {
		agreesWithBash(t, o, pol, generate(b))
	})
}

// generator turns bytes into a command, each byte a choice; past the end
// every choice is the first, which ends each production soon.
type generator struct {
	b     []byte
	i     int
	marks int
	sb    strings.Builder
}

func generate(b []byte) string {
	g := &generator{b: b}
	g.command(0)
	return g.sb.String()
}

func (g *generator) pick(n int) int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1]) % n
}

func (g *generator) w(s string) { g.sb.WriteString(s) }

// touch writes a hidden action with a marker of its own.
func (g *generator) touch() {
	g.marks++
	g.w(fmt.Sprintf("touch m%d", g.marks))
}

var genPrograms = []string{"echo", "cat", "printf", "printf -v", "read", "test -v", "[ -v", "declare", "export", "let", "unset",
	"mapfile -C", "trap", "eval", "bash -c", "sh -c", "env -S", ":", "true", "sort", "sort -o", "sed", "find .", "uniq in.txt",
	"xargs", "local", "getopts a", "command printf -v", "builtin read", "declare -i n; n=", "readarray -t", "wait -p", "compgen -W"}

func (g *generator) command(depth int) {
	if depth > 3 {
		g.simple(depth)
		return
	}
	switch g.pick(12) {
	case 0, 1, 2, 3:
		g.simple(depth)
	case 4:
		g.command(depth + 1)
		g.w([]string{"; ", " && ", " || ", " | ", "\n", " & "}[g.pick(6)])
		g.command(depth + 1)
	case 5:
		g.w("(")
		g.command(depth + 1)
		g.w(")")
	case 6:
		g.w("{ ")
		g.command(depth + 1)
		g.w("; }")
	case 7:
		g.w("if true; then ")
		g.command(depth + 1)
		g.w("; fi")
	case 8:
		g.w("for i in ")
		g.word(depth+1, 0)
		g.w("; do ")
		g.command(depth + 1)
		g.w("; done")
	case 9:
		g.w("case ")
		g.word(depth+1, 0)
		g.w(" in ")
		g.word(depth+1, 0)
		g.w(") ")
		g.command(depth + 1)
		g.w(";; esac")
	case 10:
		g.heredoc(depth)
	case 11:
		g.simple(depth)
		g.w(" ")
		g.w([]string{"<<< ", "> ", "2>&1 ", "< "}[g.pick(4)])
		g.word(depth+1, 0)
	}
}

func (g *generator) simple(depth int) {
	if g.pick(6) == 0 {
		g.w([]string{"sed -n '", "sed '", "sed -e '", "sed --sandbox -n '"}[g.pick(4)])
		g.sedScript()
		g.w("' in.txt")
		return
	}
	g.w(genPrograms[g.pick(len(genPrograms))])
	for n := g.pick(4); n > 0; n-- {
		g.w(" ")
		g.word(depth+1, 0)
	}
	if g.pick(3) == 0 {
		g.w(" EXIT")
	}
}

// heredoc writes a here-document whose delimiter is written one of many
// ways, a body, its end, and a command after it.
func (g *generator) heredoc(depth int) {
	delims := [][2]string{{"E", "E"}, {"'E'", "E"}, {`"E"`, "E"}, {`\E`, "E"}, {"$'E'", "E"}, {"E'x'", "Ex"}, {`"E"x`, "Ex"},
		{`$'\x45'`, "E"}, {"-E", "\tE"}, {"-'E'", "\tE"}, {`E\`, "E"}, {"$'E'", "$'E'"}, {`\E`, `\E`}, {"'E'x", "E'x'"}}
	d := delims[g.pick(len(delims))]
	g.w("cat <<" + d[0] + "\n")
	for n := g.pick(3); n > 0; n-- {
		g.dquoted(depth+1, false)
		g.w("\n")
	}
	g.w(strings.ReplaceAll(d[1], `\t`, "\t") + "\n")
	g.command(depth + 1)
}

// word writes one shell word; ctx 1 is inside ${…}, where some parts
// mean something else.
func (g *generator) word(depth, ctx int) {
	for n := 1 + g.pick(3); n > 0; n-- {
		g.wordPart(depth, ctx)
	}
}

func (g *generator) wordPart(depth, ctx int) {
	if depth > 4 {
		g.w("x")
		return
	}
	switch g.pick(14) {
	case 0:
		g.w([]string{"x", "a[", "]", "-v", "in.txt", "-o", "f", "-e", "1e ", "w f", "}", "{", "=1", "'", "-delete", "@(x|y)", "a[$(", ")]"}[g.pick(18)])
	case 1:
		g.w("'")
		g.squoted(depth)
		g.w("'")
	case 2:
		g.w(`"`)
		g.dquoted(depth+1, true)
		g.w(`"`)
	case 3:
		g.w("$'")
		g.w([]string{`\'`, `\x27`, "x", `\\`, "}", `$(`, `\"`}[g.pick(7)])
		if g.pick(2) == 0 {
			g.w("$(")
			g.touch()
			g.w(")")
		}
		g.w("'")
	case 4, 5:
		g.subst(depth)
	case 6, 7:
		g.param(depth)
	case 8:
		g.w([]string{"$A", `"$A"`, "${!A}", "$X", `"${X@P}"`, "${A:A}", "$((A))", "$[A]", "$((1+2))", "${#A}", "${A}"}[g.pick(11)])
	case 9:
		g.w("a[")
		g.subst(depth)
		g.w("]")
	case 10:
		g.w(`\`)
		g.w([]string{"'", `"`, "$", "`", "}", " "}[g.pick(6)])
	default:
		g.w([]string{"x", "y", "1", "--", "-n"}[g.pick(5)])
	}
	_ = ctx
}

func (g *generator) squoted(depth int) {
	switch g.pick(4) {
	case 0:
		g.w("$(")
		g.touch()
		g.w(")")
	case 1:
		g.w("a[$(")
		g.touch()
		g.w(")]")
	case 2:
		g.touch()
	default:
		g.w([]string{"}", `"`, "x", "${x", "`"}[g.pick(5)])
	}
}

// dquoted writes text as it stands inside double quotes (or a
// here-document body, when quotes is false).
func (g *generator) dquoted(depth int, quotes bool) {
	for n := 1 + g.pick(3); n > 0; n-- {
		switch g.pick(8) {
		case 0:
			g.w([]string{"'", "}", "{", "x", `\"`, `\\`, "$'", "` `"}[g.pick(8)])
		case 1, 2:
			g.param(depth)
		case 3, 4:
			g.subst(depth)
		case 5:
			g.w("'")
			g.squoted(depth)
			g.w("'")
		case 6:
			g.w([]string{"$A", "${!A}", "$((A))", "${X@P}"}[g.pick(4)])
		default:
			g.w(" ")
		}
	}
	_ = quotes
}

func (g *generator) subst(depth int) {
	switch g.pick(4) {
	case 0:
		g.w("`")
		g.touch()
		g.w("`")
	case 1:
		g.w("<(")
		g.touch()
		g.w(")")
	case 2:
		g.w("$(")
		g.command(depth + 1)
		g.w(")")
	default:
		g.w("$(")
		g.touch()
		g.w(")")
	}
}

// param writes ${x OP WORD}, whose word is read by rules of its own.
func (g *generator) param(depth int) {
	ops := []string{":-", "-", ":+", "+", "=", ":=", "//", "/", "#", "%", "^^", ",", "@P", "@Q", ":0:", "?"}
	g.w("${x" + ops[g.pick(len(ops))])
	g.word(depth+1, 1)
	g.w("}")
}

// sedScript writes a sed script (inside single quotes) of commands that
// print, edit text, read, write files and run commands, with addresses
// and delimiters chosen to mislead a reader.
func (g *generator) sedScript() {
	for n := 1 + g.pick(3); n > 0; n-- {
		g.w([]string{"", "1", "$", "/a/", `\|a|`, "1,2", "/[/]/", "0~2", "1!"}[g.pick(9)])
		d := []string{"/", "|", "#", ",", "x", ";", "w", "e"}[g.pick(8)]
		switch g.pick(10) {
		case 0:
			g.w([]string{"p", "d", "=", "l", "q", "h;G", "{p}", "n"}[g.pick(8)])
		case 1, 2:
			g.w("s" + d + []string{"a", "[" + d + "]", `\` + d, "b"}[g.pick(4)] + d + []string{"x", "touch p0", `\` + d}[g.pick(3)] + d)
			g.w([]string{"", "g", "p", "w f", "e", "gw f", "I", "2", "pw f"}[g.pick(9)])
		case 3:
			g.w("y" + d + "ab" + d + "xy" + d)
		case 4:
			g.w([]string{"a ", "i ", "c ", "a\\\n"}[g.pick(4)] + []string{"w f", "e x", "text"}[g.pick(3)])
		case 5:
			g.w([]string{"w f", "W f", "r in.txt", "R in.txt"}[g.pick(4)])
		case 6:
			g.marks++
			g.w(fmt.Sprintf("e touch m%d", g.marks))
		case 7:
			g.marks++
			g.w(fmt.Sprintf("s/.*/touch p%d/e", g.marks))
		case 8:
			g.w([]string{"#", ":a", "b a", "t", "T"}[g.pick(5)])
		default:
			g.w("p")
		}
		g.w([]string{";", "\n", " ; ", "}"}[g.pick(4)])
	}
}

// gitAllow allows git's reading subcommands, as a team would.
const gitAllow = `rules:
  - name: git-reads
    match: ["Bash(git diff:*)", "Bash(git log:*)", "Bash(git show:*)", "Bash(git status:*)", "Bash(git grep:*)",
      "Bash(git blame:*)", "Bash(git cat-file:*)", "Bash(git archive:*)", "Bash(git bundle:*)", "Bash(git -C:*)",
      "Bash(git --no-pager:*)", "Bash(git -P:*)"]
    allow: {}
`

// TestGitOptionsAgreeWithGit runs git's reading subcommands with options
// spelt every way git takes them, in a scratch repository with a change:
// whatever wrote a file (the working tree, .git/config, .git/hooks) or ran
// a program (touch pN) must not be allowed by rules for those subcommands.
func TestGitOptionsAgreeWithGit(t *testing.T) {
	o := newBashOracle(t)
	pol := mustParse(t, gitAllow)
	for _, cmd := range []string{
		"git diff", "git diff --stat", "git log -1 -p", "git show --stat HEAD", "git status --short", "git grep a",
		"git diff --output=o1", "git diff --output o2", "git diff --outp=o3", "git diff --out=o4",
		"git log -p -1 --output=o5", "git show --output=o6 HEAD", "git diff HEAD --output=o7",
		"git -C . diff --output=o8", "git --no-pager diff --output=o9", "git -P log -1 --output=o10",
		"git -c core.pager='touch p1' -p log -1", "git --paginate -c core.pager='touch p2' log -1",
		"git -c alias.l='!touch p3' l", "git --config-env=core.pager=PAGER -p log",
		"git grep -O'touch p4' a", "git grep --open-files-in-pager='touch p5' a", "git grep --open='touch p6' a",
		"git archive -o a1.tar HEAD", "git archive --output=a2.tar HEAD", "git archive --out a3.tar HEAD",
		"git bundle create b1.bundle HEAD", "git cat-file --textconv HEAD:f",
		"git diff --no-index --output=o11 f f", "git -c diff.external='touch p7' diff --ext-diff",
		"git log --format=%H -1 --output=o12", "git diff -po13", "git show -s --output=o14",
	} {
		agreesWithGit(t, o, pol, cmd)
	}
}

// agreesWithGit runs cmd in a fresh repository holding a committed f and
// a change to it.
func agreesWithGit(tb testing.TB, o *bashOracle, pol *Policy, cmd string) {
	tb.Helper()
	dir, err := os.MkdirTemp(o.tmp, "repo")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	setup := "git init -q . && echo a > f && git add f && git commit -qm f && echo b >> f"
	if changed := o.run(tb, dir, setup); len(changed) == 0 {
		tb.Fatal("the repository was not set up")
	}
	changed := o.run(tb, dir, cmd)
	if len(changed) == 0 {
		return
	}
	input, _ := json.Marshal(map[string]string{"command": cmd})
	if v := pol.Evaluate(Request{Tool: "Bash", Input: input}, time.Time{}); v.Action == Allow {
		tb.Errorf("git wrote or ran %q for %q, yet the policy allows it (%s)", changed, cmd, v.Matcher)
	}
}
