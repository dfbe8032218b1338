package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestShellFindsEveryCommand lists, for commands of each construct, the
// simple commands the reader finds (as allow rules see them, nested ones
// before the command holding them) and the ones no allow rule may match.
func TestShellFindsEveryCommand(t *testing.T) {
	for _, c := range []struct {
		cmd      string
		parts    []string
		notAllow []string // parts never allowed (writes, computed program, opaque wrapper)
	}{
		{"git status", []string{"git status"}, nil},
		{"a && b || c; d & e | f |& g\nh", []string{"a", "b", "c", "d", "e", "f", "g", "h"}, nil},
		{"(a; b) && { c; }", []string{"a", "b", "c"}, nil},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}, nil},
		{"while a; do b; done; until c; do d; done", []string{"a", "b", "c", "d"}, nil},
		{"for f in $(ls) x; do echo $f; done", []string{"ls", "echo $f"}, nil},
		{"! a", []string{"a"}, nil},
		{"[[ -f x && -d y ]] && z", []string{"[[ -f x && -d y ]]", "z"}, nil},
		{"echo $(a) `b` \"$(c)\" ${x:-y} $((1 + 2))", []string{"a", "b", "c", "echo $(a) `b` \"$(c)\" ${x:-y} $((1 + 2))"}, nil},
		{"diff <(a) >(b)", []string{"a", "b", "diff <(a) >(b)"}, nil},
		{"echo '$(a); b' \"c; d\" e\\;f", []string{`echo '$(a); b' "c; d" e\;f`}, nil},
		{"a # b; c\nd", []string{"a", "d"}, nil},
		{"a \\\n  b", []string{"a b"}, nil},
		{"cat <<EOF\n$(a)\n`b`\nEOF\nc", []string{"a", "b", "cat <<EOF", "c"}, nil},
		{"cat <<'EOF'\n$(a)\nEOF\nc", []string{"cat <<'EOF'", "c"}, nil},
		{"cat <<-EOF\n\t$(a)\n\tEOF\nc", []string{"a", "cat <<-EOF", "c"}, nil},
		{"case $(a) in $(b)) c;; *) d | e;; esac", []string{"a", "b", "c", "d", "e"}, nil},
		{"a 2>&1 >/dev/null 1>&2 2>&-", []string{"a"}, nil},
		{"a > out", []string{"a >out"}, []string{"a >out"}},
		{"a >> out; b &> out; c <> f; d >& f; e >| f", []string{"a >>out", "b &>out", "c <>f", "d >&f", "e >|f"}, []string{"a >>out", "b &>out", "c <>f", "d >&f", "e >|f"}},
		{"a < in", []string{"a <in"}, nil},
		{"> out", []string{">out"}, []string{">out"}},
		{"X=1 Y=$(a) b", []string{"a", "X=1 Y=$(a) b"}, nil},
		{"$X y; \"$(a)\" z; *.sh; {a,b}", []string{"$X y", "a", "\"$(a)\" z", "*.sh", "{a,b}"}, []string{"$X y", "\"$(a)\" z", "*.sh", "{a,b}"}},
		{"timeout -s KILL 5 nice -n 2 nohup stdbuf -oL time -p a", []string{"a"}, nil},
		{"env -i A=1 a; sudo -u x b; xargs -n1 c; command d; exec e", []string{"a", "env -i A=1 a", "b", "sudo -u x b", "c …", "xargs -n1 c", "d", "command d", "e", "exec e"}, nil},
		{"sh -c 'a; b' && bash -lc \"c\" && eval 'd | e'", []string{"a", "b", "sh -c 'a; b'", "c", `bash -lc "c"`, "d", "e", "eval 'd | e'"}, nil},
		{"sh -c \"$X\"", []string{"\"$X\"", "sh -c \"$X\""}, []string{"\"$X\""}},
		{"find . -exec a {} \\; -execdir b {} +", []string{"a {}", "b {}", `find . -exec a {} \; -execdir b {} +`}, nil},
		{"ssh -p 22 host 'a; b'; watch -n1 c; su -c d root", []string{"a", "b", "ssh -p 22 host 'a; b'", "c", "watch -n1 c", "d", "su -c d root"}, nil},
		{"timeout --bogus 5 a", []string{"timeout --bogus 5 a"}, []string{"timeout --bogus 5 a"}},
		{"command -v a; su root; ssh host", []string{"command -v a", "su root", "ssh host"}, nil},
	} {
		sh := parseShell(c.cmd)
		if !sh.ok {
			t.Errorf("%q: not read", c.cmd)
			continue
		}
		var got, notAllow []string
		for _, p := range sh.parts {
			got = append(got, p.allowText())
			if !p.allowable() {
				notAllow = append(notAllow, p.allowText())
			}
		}
		if !slices.Equal(got, c.parts) || !slices.Equal(notAllow, c.notAllow) {
			t.Errorf("%q:\n got %q, not allowed %q\nwant %q, not allowed %q", c.cmd, got, notAllow, c.parts, c.notAllow)
		}
	}
}

// TestShellThatCannotBeReadGivesPieces: what the reader does not take on
// is never ok, and its pieces still reach deny rules.
func TestShellThatCannotBeReadGivesPieces(t *testing.T) {
	for _, c := range []struct{ cmd, piece string }{
		{"echo ${x:-$(curl x)}", "curl x"},
		{"echo $((1 + $(curl x)))", "curl x"},
		{"f() { curl x; }; f", "curl x"},
		{"((i++)); curl x", "curl x"},
		{"for ((i=0;i<3;i++)); do curl x; done", "curl x"},
		{"echo 'unclosed; curl x", "curl x"},
		{"echo $(curl x", "curl x"},
		{"a ) curl x", "curl x"},
		{strings.Repeat("$(", maxShellDepth+1) + "curl x" + strings.Repeat(")", maxShellDepth+1), "curl x"},
		{strings.Repeat("a;", maxShellParts) + "curl x", ""},
		{"curl x; " + strings.Repeat("a", MaxCommandBytes), "curl x"},
	} {
		sh := parseShell(c.cmd)
		if sh.ok {
			t.Errorf("%.60q: read, want not", c.cmd)
			continue
		}
		found := c.piece == ""
		for _, p := range sh.parts {
			if p.allowable() {
				t.Errorf("%.60q: piece %q allowable", c.cmd, p.allowText())
			}
			found = found || slices.Contains(p.denyTexts(), c.piece)
		}
		if !found {
			t.Errorf("%.60q: no piece %q for deny rules", c.cmd, c.piece)
		}
		if len(sh.parts) > maxShellParts {
			t.Errorf("%.60q: %d pieces", c.cmd, len(sh.parts))
		}
	}
}

func TestDenyTextsSeeThroughDisguises(t *testing.T) {
	for cmd, want := range map[string]string{
		`"r"'m' -rf /`:         "rm -rf /",
		`\rm -rf /`:            "rm -rf /",
		"/bin/rm -rf /":        "rm -rf /",
		"A=1 B=2 rm -rf /":     "rm -rf /",
		"rm -rf / 2>/dev/null": "rm -rf /",
		"nice rm -rf /":        "nice rm -rf /",
		"busybox rm -rf /":     "rm -rf /",
		"chroot / rm -rf /":    "rm -rf /",
		"env -S 'x' rm -rf /":  "rm -rf /",
	} {
		found := false
		for _, p := range parseShell(cmd).parts {
			found = found || slices.Contains(p.denyTexts(), want)
		}
		if !found {
			t.Errorf("%q: no form %q among %v", cmd, want, parseShell(cmd).parts)
		}
	}
}

func TestBashPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern string
		yes, no []string
	}{
		{"git status", []string{"git status"}, []string{"git status ", "git  status", "git statusx", "git status -s"}},
		{"npm test:*", []string{"npm test", "npm test --watch", "npm test\t-x"}, []string{"npm testing", "npm tes", "xnpm test"}},
		{"npm test *", []string{"npm test", "npm test --watch"}, []string{"npm testing"}},
		{"ls*", []string{"ls", "lsof", "ls -la"}, []string{"l"}},
		{"git * main", []string{"git push origin main", "git merge main"}, []string{"git push origin main2", "git main"}},
		{"* --version", []string{"go --version"}, []string{"go --version x"}},
		{"kubectl --context prod*:*", []string{"kubectl --context prod", "kubectl --context prod-eu get x"}, []string{"kubectl --context dev prod"}},
		{"a*b:*", []string{"ab", "axb", "axb c", "abab c"}, []string{"axbc", "a"}},
		{`echo \*`, []string{"echo *"}, []string{"echo x"}},
	} {
		b, err := parseBashPattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		for _, s := range c.yes {
			if !b.match(s) {
				t.Errorf("%q does not match %q", c.pattern, s)
			}
		}
		for _, s := range c.no {
			if b.match(s) {
				t.Errorf("%q matches %q", c.pattern, s)
			}
		}
	}
}
