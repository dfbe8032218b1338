package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// worstPolicy is a large policy slow to match: 100 rules of five Bash
// entries (prefixes, an exact command and a wildcard that scans its whole
// text and fails at the end) and two paths four ** deep.
func worstPolicy(tb testing.TB) *Policy {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 100 {
		fmt.Fprintf(&b, "  - name: r%d\n    match:\n", i)
		fmt.Fprintf(&b, "      - \"Bash(a a a a %d:*)\"\n      - \"Bash(sudo a%d:*)\"\n      - \"Bash(a b c %d *)\"\n", i, i, i)
		fmt.Fprintf(&b, "      - \"Bash(a a a a a a a a %d)\"\n      - \"Bash(*a*a*a*z%d)\"\n", i, i)
		fmt.Fprintf(&b, "      - \"Read(/**/a/**/a/**/a/**/z%d)\"\n      - \"Edit(~/**/a/**/z%d/**)\"\n", i, i)
		if i%2 == 0 {
			b.WriteString("    deny: {}\n")
		} else {
			b.WriteString("    allow: {}\n")
		}
	}
	p, err := Parse("worst.yaml", []byte(b.String()), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// worstCommand is a command at MaxCommandBytes of the most parts, each a
// wrapper whose options are not understood (the most deny texts).
func worstCommand() string {
	part := "sudo --bogus " + strings.Repeat("a ", 100)
	var b strings.Builder
	for b.Len()+len(part)+3 < MaxCommandBytes && strings.Count(b.String(), ";") < maxShellParts-1 {
		b.WriteString(part + "; ")
	}
	return b.String()
}

func BenchmarkEvaluateWorstBash(b *testing.B) {
	p := worstPolicy(b)
	input, _ := json.Marshal(map[string]string{"command": worstCommand()})
	req := Request{Tool: "Bash", Input: input, Cwd: "/srv/app"}
	b.SetBytes(int64(len(input)))
	for b.Loop() {
		if v := p.Evaluate(req, time.Time{}); v.Rule != nil {
			b.Fatalf("matched %v", v.Rule)
		}
	}
}

func BenchmarkEvaluateWorstPath(b *testing.B) {
	p := worstPolicy(b)
	file := "/" + strings.Repeat("a/", maxPathSegs-1) + "x"
	input, _ := json.Marshal(map[string]string{"file_path": file})
	req := Request{Tool: "Read", Input: input, Cwd: "/srv/app", Resolved: map[string]string{file: file, "/srv/app": "/srv/app"}}
	for b.Loop() {
		if v := p.Evaluate(req, time.Time{}); v.Rule != nil {
			b.Fatalf("matched %v", v.Rule)
		}
	}
}

func BenchmarkParseShellWorst(b *testing.B) {
	for _, c := range []struct{ name, cmd string }{
		{"parts", worstCommand()},
		{"nesting", strings.Repeat("$(a `b \"$(c ${d:-", 2) + strings.Repeat("x", MaxCommandBytes-100)},
		{"heredoc", "cat <<EOF\n" + strings.Repeat("$(a) $(b) `c`\n", MaxCommandBytes/16) + "EOF"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.cmd)))
			for b.Loop() {
				parseShell(c.cmd)
			}
		})
	}
}

func BenchmarkEvaluateTypical(b *testing.B) {
	p := mustParse(b, tablePolicy)
	req := evalCase{tool: "Bash", input: "git status && git diff HEAD~1 | cat"}.request()
	for b.Loop() {
		p.Evaluate(req, time.Time{})
	}
}
