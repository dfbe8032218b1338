package policy

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// FuzzShell reads arbitrary commands: the reader never panics and stays
// within its bounds; a piece it could not read is never allowable; a deny
// rule tries at least the text an allow rule sees; an allow verdict
// means every part was allowable and matched; and a deny rule with the
// same pattern matches whatever an allow rule does.
func FuzzShell(f *testing.F) {
	for _, c := range evalCases {
		if c.tool == "Bash" {
			f.Add(c.input, "git status")
		}
	}
	f.Add("a; b && $(c) `d` <(e) \"$(f)\" ${g:-$(h)} <<EOF\n$(i)\nEOF", "a:*")
	f.Add("sudo -u x env A=1 timeout 5 xargs -I{} sh -c 'find . -exec rm {} +'", "* *")
	f.Add("cat <<'X' | tee >(y) 2>&1 >/dev/null\nbody\nX\n", "cat *")
	pol := mustParse(f, tablePolicy)
	f.Fuzz(func(t *testing.T, cmd, pattern string) {
		// The command arrives as JSON, which holds no invalid UTF-8: what
		// the policy reads (and bash would run) is the decoded string.
		input, _ := json.Marshal(map[string]string{"command": cmd})
		var in struct{ Command string }
		if err := json.Unmarshal(input, &in); err != nil {
			t.Fatal(err)
		}
		cmd = in.Command
		sh := parseShell(cmd)
		if len(sh.parts) > maxShellParts {
			t.Fatalf("%d parts", len(sh.parts))
		}
		for _, p := range sh.parts {
			deny := p.denyTexts()
			if len(deny) > maxDenyTexts || !slices.Contains(deny, p.allowText()) {
				t.Fatalf("part %q: deny texts %q", p.allowText(), deny)
			}
			if p.allowable() && !sh.ok {
				t.Fatalf("piece %q of an unread command is allowable", p.allowText())
			}
		}
		req := Request{Tool: "Bash", Input: input, Cwd: "/srv/app", Channel: "C0OPS"}
		pol.Evaluate(req, time.Time{})
		b, err := parseBashPattern(pattern)
		if err != nil {
			return
		}
		m := Matcher{raw: "Bash(" + pattern + ")", kind: kindBash, tool: "Bash", bash: b}
		allow := &Policy{rules: []*Rule{{Name: "a", Action: Allow, Match: []Matcher{m}}}}
		deny := &Policy{rules: []*Rule{{Name: "d", Action: Deny, Match: []Matcher{m}}}}
		if allow.Evaluate(req, time.Time{}).Action != Allow {
			return
		}
		if !sh.ok || len(sh.parts) == 0 {
			t.Fatalf("allowed, but the command was not read")
		}
		for _, p := range sh.parts {
			if !p.allowable() || !b.match(p.allowText()) {
				t.Fatalf("allowed, but part %q is not matched", p.allowText())
			}
		}
		if deny.Evaluate(req, time.Time{}).Action != Deny {
			t.Fatalf("Bash(%s) allows %q but does not deny it", pattern, cmd)
		}
	})
}

// FuzzParse reads arbitrary policy files: never a panic, and either a
// policy or errors that each name the file and a line.
func FuzzParse(f *testing.F) {
	f.Add([]byte(tablePolicy))
	f.Add([]byte("rules:\n  - {name: a, match: [\"Read(~/x/**)\"], ask: {approvers: [U1], count: 1, remind_after: 1m}}\nmodes: {bypassPermissions: [U1]}\n"))
	f.Add([]byte("a: &x [*x, *x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data, Options{Approvers: []string{"U1", "U2"}})
		if err == nil {
			if p == nil {
				t.Fatal("no policy and no error")
			}
			p.Evaluate(Request{Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}, time.Time{})
			return
		}
		errs, ok := err.(Errors)
		if !ok || len(errs) == 0 || p != nil {
			t.Fatalf("error %T %v", err, err)
		}
		for _, e := range errs {
			if e.File != "f.yaml" || e.Line < 1 {
				t.Fatalf("%+v", e)
			}
		}
	})
}
