package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// TestReaderModelsOnlyWhatItKnows pins each construct the reader does
// not model: the command is read (its parts reach deny rules) but never
// allowed, and why says what.
func TestReaderModelsOnlyWhatItKnows(t *testing.T) {
	for _, c := range []struct{ cmd, why string }{
		{`echo "${x:-'$(ls)'}"`, "whose word is read by rules of its own"},
		{`echo ${x:-$'a'}`, "whose word is read by rules of its own"},
		{`echo ${x#a}`, "whose word is read by rules of its own"},
		{`echo ${!x}`, "can run what a variable holds"},
		{`echo ${x[1]}`, "can run what a variable holds"},
		{`echo ${x:1}`, "can run what a variable holds"},
		{`echo ${x/a/b}`, "can run what a variable holds"},
		{`echo ${!x*}`, "can run what a variable holds"},
		{`echo $((x))`, "arithmetic on a variable"},
		{`echo $[x+1]`, "arithmetic on a variable"},
		{`echo $((i++))`, "arithmetic on a variable"},
		{`[[ $x -eq 1 ]]`, "an arithmetic comparison in [[ ]]"},
		{`[[ -v a[1] ]]`, "[[ -v ]] of something other than a name"},
		{`((x = 1))`, "(( )) is arithmetic"},
		{`for ((i = 0; i < 3; i++)); do echo; done`, "for (( )) is arithmetic"},
		{`let x=1`, "let is arithmetic"},
		{`f() { ls; }`, "a function definition"},
		{`coproc ls`, "coproc runs a command"},
		{`a[1]=x`, "an array subscript"},
		{`a=(x y)`, "an array assignment"},
		{`exec {fd}> /dev/null`, "assigns a file descriptor variable"},
		{"cat <<$'E'\nx\nE", "a here-document delimiter"},
		{"cat <<E'x'\nx\nEx", "a here-document delimiter"},
		{`echo @(a|b)`, "an extended glob"},
		{`sh -c 'echo "unclosed'`, "a command line inside it does not parse"},
		{`printf -v 'a[1]' x`, "printf -v of something other than a name"},
		{`printf -v "$v" x`, "printf -v of something other than a name"},
		{`read "$v"`, "read with an argument known only when it runs"},
		{`read 'a[1]'`, "read of something other than a name"},
		{`read -q x`, "an option the reader does not know"},
		{`mapfile -C f a`, "mapfile -C is not modeled"},
		{`declare -i n`, "declare -i is not modeled"},
		{`declare 'a[1]=x'`, "declare of something other than NAME or NAME=value"},
		{`export "$v"`, "export with an argument known only when it runs"},
		{`unset 'a[1]'`, "unset of something other than a name"},
		{`getopts a 'a[1]'`, "getopts of something other than a name"},
		{`wait -p 'a[1]'`, "wait -p of something other than a name"},
		{`test -v 'a[1]'`, "test -v of something other than a name"},
		{`[ -v "$v" ]`, "[ -v of something other than a name"},
		{`compgen -W x`, "compgen expands and runs"},
		{`complete -C x y`, "complete runs commands"},
		{`bind -x x`, "bind can run commands"},
		{`fc -s`, "fc runs commands from history"},
		{`enable -n echo`, "enable loads builtins"},
		{`alias ls=x`, "alias changes what later commands run"},
		{`hash -p /x ls`, "hash -p changes which program"},
		{`trap -x y EXIT`, "trap -x: an option the reader does not know"},
	} {
		sh := parseShell(c.cmd)
		if sh.ok || !strings.Contains(sh.why, c.why) {
			t.Errorf("%q: ok %v, why %q; want not modeled: %q", c.cmd, sh.ok, sh.why, c.why)
		}
		for _, p := range sh.parts {
			if p.allowable() {
				t.Errorf("%q: part %q allowable", c.cmd, p.allowText())
			}
		}
	}
}

// TestReaderModelsWhatItKnows is the other side: forms read exactly stay
// allowable.
func TestReaderModelsWhatItKnows(t *testing.T) {
	for _, cmd := range []string{
		`echo "$x" ${x} ${#x} ${x:-/tmp} ${x+set} $((1 + 2)) $'a\tb' "a\"b" 'c'`,
		`printf -v out '%s' x; read -r a b; declare -rx name=value; unset -v name; test -v name`,
		`[[ -f x && $y == z* ]]; [[ 1 -eq 1 ]]`,
		"cat <<'E'\n$(x)\nE\ncat <<\"E\"\n${x@P}\nE\ncat <<\\E\nx\nE",
		`trap 'echo bye' EXIT; trap - INT; trap -p`,
		`case $x in a|b) echo;; esac`,
	} {
		if sh := parseShell(cmd); !sh.ok {
			t.Errorf("%q: not modeled: %s", cmd, sh.why)
		}
	}
}

// TestReaderDoesNotModelNodesItDoesNotKnow: a node the parser may grow
// (zsh's, or a later version's) is not modeled, whatever it holds.
func TestReaderDoesNotModelNodesItDoesNotKnow(t *testing.T) {
	for name, visit := range map[string]func(*shReader){
		"command": func(p *shReader) { p.compound(&syntax.CallExpr{}) },
		"word part": func(p *shReader) {
			var w word
			var b strings.Builder
			lit := &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: "a"}}}
			p.wordPart(&syntax.BraceExp{Elems: []*syntax.Word{lit}}, &b, &w)
		},
		"arithmetic": func(p *shReader) { p.arith(&syntax.FlagsArithm{}) },
		"test": func(p *shReader) {
			p.testClause(&syntax.TestClause{X: nil})
		},
	} {
		var parts []part
		why := ""
		p := &shReader{src: "", out: &parts, why: &why}
		visit(p)
		if why == "" {
			t.Errorf("%s: an unknown node is modeled", name)
		}
	}
}

// TestProgramOptionsAskUnlessTheRuleSpellsThem: an allow rule for a
// program allows its safe use; an option that writes a file or runs a
// program asks, unless the rule itself spells it.
func TestProgramOptionsAskUnlessTheRuleSpellsThem(t *testing.T) {
	for _, c := range []struct {
		rule, cmd string
		allow     bool
	}{
		{"git diff:*", "git diff --stat HEAD", true},
		{"git diff:*", "git diff --output=.git/config --line-prefix=x", false},
		{"git diff:*", "git diff --output .git/config", false},
		{"git diff:*", "git diff --outp=x", false},
		{"git diff:*", "git diff --ext-diff", false},
		{"git diff:*", "git diff --no-ext-diff", true},
		{"git diff:*", "git diff --textconv", false},
		{"git diff:*", `git diff "$opt"`, false},
		{"git diff:*", "git diff -- --output=x", true},
		{"git diff --output=*", "git diff --output=out.patch", true},
		{"git diff --output=out.patch", "git diff --output=out.patch", true},
		{"git diff --output=out.patch:*", "git diff --output=out.patch --output=.git/config", false},
		{"git log:*", "git log -p --output=x", false},
		{"git show:*", "git show --ext-diff HEAD", false},
		{"git:*", "git -c core.pager=sh log", false},
		{"git:*", "git --exec-path=/tmp status", false},
		{"git:*", "git -C . status", true},
		{"git:*", "git -C . diff --output=x", false},
		{"git:*", "git config user.name", true},
		{"git:*", "git config core.pager sh", false},
		{"git:*", "git rebase -x 'make' main", false},
		{"git:*", "git grep -O x", false},
		{"git:*", "git clone -u evil a b", false},
		{"find:*", "find . -name '*.go'", true},
		{"find:*", "find . -delete", false},
		{"find:*", "find . -fprint out", false},
		{"find:*", `find . -exec rm {} \;`, false},
		{"sort:*", "sort in.txt", true},
		{"sort:*", "sort -o out in.txt", false},
		{"sort:*", "sort -ruo out in.txt", false},
		{"sort:*", "sort --out=x in.txt", false},
		{"sort:*", "sort --compress-program=gzip in.txt", false},
		{"sort:*", "sort -k -o in.txt", true},
		{"sort:*", "sort * ", false},
		{"sort:*", "sort src/*.txt", true},
		{"sort -o sorted.txt:*", "sort -o sorted.txt in.txt", true},
		{"sed:*", "sed -n 's/a/b/p' in.txt", true},
		{"sed:*", "sed -n 'w out' in.txt", false},
		{"sed:*", "sed 's/a/b/w out' in.txt", false},
		{"sed:*", "sed 's|a|b|e' in.txt", false},
		{"sed:*", "sed '1e date' in.txt", false},
		{"sed:*", "sed -i s/a/b/ in.txt", false},
		{"sed:*", "sed -f script.sed in.txt", false},
		{"sed:*", "sed --sandbox 'w out' in.txt", true},
		{"sed:*", "sed -e p -e 'w x' in.txt", false},
		{"sed:*", `sed 's/[/]/w/' in.txt`, true},
		{"sed -i:*", "sed -i s/a/b/ in.txt", true},
		{"tar:*", "tar -tf a.tar", true},
		{"tar:*", "tar -xf a.tar --to-command=sh", false},
		{"tar:*", "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=sh x", false},
		{"tar:*", "tar -I zstd -xf a.tar", false},
		{"tar:*", "tar xIf zstd a.tar", false},
		{"go test:*", "go test ./...", true},
		{"go test:*", "go test -exec sudo ./...", false},
		{"go test:*", "go test -toolexec=x ./...", false},
		{"go test:*", "go test --coverprofile=/etc/x ./...", false},
		{"go:*", "go env -w GOFLAGS=-toolexec=x", false},
		{"go:*", "go env GOPATH", true},
		{"make:*", "make test", true},
		{"make:*", "make SHELL=/tmp/x test", false},
		{"make:*", "make -f /tmp/x.mk", false},
		{"make:*", "make --eval='x:;touch y' x", false},
		{"npm run:*", "npm run test", true},
		{"npm run:*", "npm run test --script-shell=/tmp/x", false},
		{"npm:*", "npm exec evil", false},
		{"npm:*", "npm config set script-shell /tmp/x", false},
		{"uniq:*", "uniq in.txt", true},
		{"uniq:*", "uniq in.txt out.txt", false},
		{"rg:*", "rg --pre /tmp/x pattern", false},
		{"curl:*", "curl -fsS https://example.com", true},
		{"curl:*", "curl -o /tmp/x https://example.com", false},
		{"curl:*", "curl -K cfg https://example.com", false},
		{"xargs:*", "xargs -n1 < in.txt", true},
	} {
		pol := mustParse(t, fmt.Sprintf("rules:\n  - name: r\n    match: [\"Bash(%s)\"]\n    allow: {}\n", strings.ReplaceAll(c.rule, `"`, `\"`)))
		input, _ := json.Marshal(map[string]string{"command": c.cmd})
		v := pol.Evaluate(Request{Tool: "Bash", Input: input, Cwd: "/w", Resolved: map[string]string{"/w": "/w"}}, time.Time{})
		if (v.Action == Allow) != c.allow {
			t.Errorf("Bash(%s) on %q: %v, want allowed %v", c.rule, c.cmd, v.Action, c.allow)
		}
	}
}

// TestDenyRulesSeeThroughGitsGlobalOptionsAndShellInput: the forms of
// issue 25 that fell past a deny rule to a card.
func TestDenyRulesSeeThroughGitsGlobalOptionsAndShellInput(t *testing.T) {
	pol := mustParse(t, "rules:\n  - name: no-push\n    match: [\"Bash(git push:*)\", \"Bash(rm -rf:*)\"]\n    deny: {}\n")
	for _, cmd := range []string{
		"git -C . push", "git --no-pager push origin main", "git -c x=y --git-dir .git push",
		"env --split-string='rm -rf /'", "env -S 'rm -rf /'", "env -iS'rm -rf /'",
		"echo 'rm -rf /' | bash", "bash <<< 'rm -rf /'", "bash <<'E'\nrm -rf /\nE", "sh -s <<< 'git push'",
		"echo x | sh -", "trap 'rm -rf /' EXIT", "sed '1e rm -rf /' in.txt",
	} {
		input, _ := json.Marshal(map[string]string{"command": cmd})
		if v := pol.Evaluate(Request{Tool: "Bash", Input: input}, time.Time{}); v.Action != Deny {
			t.Errorf("%q: %v, want denied", cmd, v.Action)
		}
	}
}
