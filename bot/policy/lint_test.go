package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestShadowedRulesAreReportedWithBothLines(t *testing.T) {
	for _, c := range []struct {
		name         string
		first, later string // rule bodies after "match:"
	}{
		{"prefix over exact", `["Bash(git:*)"], allow: {}`, `["Bash(git status)"], allow: {}`},
		{"prefix over longer prefix", `["Bash(curl:*)"], deny: {}`, `["Bash(curl -s *)"], deny: {}`},
		{"prefix over wildcard head", `["Bash(npm:*)"], deny: {}`, `["Bash(npm run * --prod)"], ask: {}`},
		{"bare tool over pattern", `["Read"], allow: {}`, `["Read(/srv/**)"], allow: {}`},
		{"bare tool over its family", `["Read"], allow: {}`, `["Grep"], allow: {}`},
		{"directory over file", `["Edit(/srv/**)"], deny: {}`, `["Edit(/srv/app/x.go)"], deny: {}`},
		{"mcp server over tool", `["mcp__github"], allow: {}`, `["mcp__github__get_issue"], allow: {}`},
		{"subdomains over one", `["WebFetch(domain:*.example.com)"], allow: {}`, `["WebFetch(domain:api.example.com)"], allow: {}`},
		{"wider scope first", `["Bash(rm:*)"], deny: {}`, `["Bash(rm -rf:*)"], channels: [C0OPS], deny: {}`},
		{"wider repos first", `["Bash(make:*)"], repos: ["/srv/**"], ask: {}`, `["Bash(make deploy)"], repos: ["/srv/app"], deny: {}`},
		{"deny over allow", `["Bash"], deny: {}`, `["Bash(ls *)"], allow: {}`},
		{"ask over allow", `["Bash(rm:*)"], ask: {}`, `["Bash(rm -f x)"], allow: {}`},
		{"every entry covered", `["Bash(git:*)", "Read"], allow: {}`, `["Read(~/x)", "Bash(git log)"], allow: {}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := fmt.Sprintf("rules:\n  - name: first\n    match: %s\n  - name: later\n    match: %s\n", c.first, c.later)
			text = strings.ReplaceAll(text, "], ", "]\n    ")
			p := mustParse(t, text)
			line := strings.Count(text[:strings.Index(text, "- name: later")], "\n") + 1
			want := fmt.Sprintf(`policy.yaml:%d: rule "later" is shadowed by rule "first" (line 2): every request it matches, "first" matches first, so it never decides`, line)
			if w := shadowWarnings(p); len(w) != 1 || w[0].String() != want {
				t.Errorf("got %v, want %s", w, want)
			}
		})
	}
}

// shadowWarnings are the warnings about shadowed rules.
func shadowWarnings(p *Policy) []Problem {
	var out []Problem
	for _, w := range p.Warnings() {
		if strings.Contains(w.Msg, "is shadowed by") {
			out = append(out, w)
		}
	}
	return out
}

// TestCheckWarnsOfRunnersAndOfOptionsDenyRulesMiss: allow entries for
// programs that run what they are given, and deny entries that bundle
// short options, get a warning; an entry for a subcommand that only
// reads, or a preset's, does not.
func TestCheckWarnsOfRunnersAndOfOptionsDenyRulesMiss(t *testing.T) {
	p := mustParse(t, `rules:
  - name: risky
    match: ["Bash(make:*)", "Bash(npm run:*)", "Bash(python3 -c:*)", "Bash(printf:*)", "Bash(git:*)"]
    allow: {}
  - name: fine
    match: ["Bash(git status)", "Bash(go vet:*)", "Bash(ls:*)", "Bash(makewhatis)"]
    allow: {}
  - name: reads
    allow: {preset: reads}
  - name: no-rm
    match: ["Bash(rm -rf:*)", "Bash(git push --force:*)"]
    deny: {}
`)
	var got []string
	for _, w := range p.Warnings() {
		got = append(got, w.String())
	}
	for _, want := range []string{
		`policy.yaml:3: rule "risky": Bash(make:*) allows make, which runs the commands its makefile names`,
		`rule "risky": Bash(npm run:*) allows npm, whose scripts are package.json's commands`,
		`rule "risky": Bash(python3 -c:*) allows an interpreter`,
		`rule "risky": Bash(printf:*) allows a builtin that evaluates the names it is given`,
		`rule "risky": Bash(git:*) allows git, which runs aliases, hooks`,
		`policy.yaml:11: rule "no-rm": Bash(rm -rf:*) matches text: it does not match rm -fr`,
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no warning %q among:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) != 6 {
		t.Errorf("%d warnings, want 6:\n%s", len(got), strings.Join(got, "\n"))
	}
}

func TestRulesThatCanStillDecideAreNotReported(t *testing.T) {
	for _, c := range []struct {
		name         string
		first, later string
	}{
		{"allow first, deny later: a compound command may be denied", `["Bash(git status)"], allow: {}`, `["Bash(git status)"], deny: {}`},
		{"narrower scope first", `["Bash(rm:*)"], channels: [C0OPS], deny: {}`, `["Bash(rm:*)"], deny: {}`},
		{"word boundary", `["Bash(git:*)"], allow: {}`, `["Bash(gitk)"], allow: {}`},
		{"wildcard without a boundary", `["Bash(npm:*)"], deny: {}`, `["Bash(npm*)"], deny: {}`},
		{"family member first", `["Grep"], allow: {}`, `["Read"], allow: {}`},
		{"sibling directory", `["Edit(/srv/**)"], deny: {}`, `["Edit(/srvx/a)"], deny: {}`},
		{"one tool first", `["mcp__github__get_issue"], allow: {}`, `["mcp__github"], allow: {}`},
		{"one entry uncovered", `["Bash(rm:*)"], deny: {}`, `["Bash(rm:*)", "Bash(dd:*)"], deny: {}`},
		{"unknown working directory", `["Bash"], repos: ["/srv/**"], allow: {}`, `["Bash(x:*)"], repos: ["/srv/app"], deny: {}`},
		{"apex after subdomains", `["WebFetch(domain:*.example.com)"], deny: {}`, `["WebFetch(domain:example.com)"], deny: {}`},
		{"unclear host", `["WebFetch(domain:example.com)"], allow: {}`, `["WebFetch(domain:example.com)"], deny: {}`},
		{"deny's any-depth directory", `["Read(./src/**)"], deny: {}`, `["Read(src/**)"], deny: {}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := fmt.Sprintf("rules:\n  - name: first\n    match: %s\n  - name: later\n    match: %s\n", c.first, c.later)
			text = strings.ReplaceAll(text, "], ", "]\n    ")
			if w := shadowWarnings(mustParse(t, text)); len(w) != 0 {
				t.Errorf("got %v, want no report", w)
			}
		})
	}
}

// TestShadowReportsAreSound checks the linter against the evaluator: for
// every pair of rules built from a pool of entries, scopes and actions
// that it reports, each request of a pool the later rule matches, the
// earlier one matches too.
func TestShadowReportsAreSound(t *testing.T) {
	entries := []string{"Bash", "Bash(git:*)", "Bash(git status)", "Bash(git status:*)", "Bash(git *)", "Bash(git * main)",
		"Bash(git*)", "Bash(rm:*)", "Bash(rm -rf:*)", "Bash(npm run *)", "Bash(npm run test*)", "Bash(kubectl --context prod*:*)",
		"Read", "Read(/srv/**)", "Read(/srv/app/**)", "Read(/srv/app/.env)", "Read(.env)", "Read(src/**)", "Read(./src/**)",
		"Read(src/a/**)", "Read(~/.ssh/**)", "Edit", "Edit(/srv/**)", "Edit(/srv/app/**)", "Edit(/srv/app)", "Grep", "Write",
		"WebFetch", "WebFetch(domain:example.com)", "WebFetch(domain:*.example.com)", "WebFetch(domain:api.example.com)",
		"mcp__gh", "mcp__gh__get", "mcp__gh__*"}
	scopes := []string{"", "channels: [C1]", `repos: ["/srv/**"]`, `repos: ["/srv/app"]`}
	actions := []string{"allow: {}", "deny: {}", "ask: {}"}
	reqs := lintRequests()
	facts := make([]*facts, len(reqs))
	for i, req := range reqs {
		facts[i] = newFacts(req)
	}
	// Each rule once, with the set of requests it matches.
	type built struct {
		r       *Rule
		what    string
		matched []bool
	}
	var rules []built
	for _, e := range entries {
		for _, sc := range scopes {
			for _, a := range actions {
				text := fmt.Sprintf("rules:\n  - name: r\n    match: [%q]\n    %s\n", e, a)
				if sc != "" {
					text += "    " + sc + "\n"
				}
				b := built{r: mustParse(t, text).rules[0], what: e + " " + sc + " " + a}
				for _, f := range facts {
					b.matched = append(b.matched, ruleTakes(b.r, f))
				}
				rules = append(rules, b)
			}
		}
	}
	reports := 0
	for _, a := range rules {
		for _, b := range rules {
			if !shadowedBy(b.r, a.r) {
				continue
			}
			reports++
			for i := range reqs {
				if b.matched[i] && !a.matched[i] {
					t.Fatalf("%s reported shadowed by %s, yet %s %s (cwd %q, resolved %v) is matched by the later only",
						b.what, a.what, reqs[i].Tool, reqs[i].Input, reqs[i].Cwd, reqs[i].Resolved)
				}
			}
		}
	}
	if reports < 500 {
		t.Errorf("%d reports: the pool no longer exercises the linter", reports)
	}
	t.Logf("%d reports checked against %d requests", reports, len(reqs))
}

func ruleTakes(r *Rule, f *facts) bool {
	if !r.takes(f) {
		return false
	}
	_, _, ok := r.matches(f)
	return ok
}

// lintRequests is a pool of requests of every tool, with and without a
// resolved working directory, channel and path.
func lintRequests() []Request {
	var reqs []Request
	add := func(tool string, input map[string]string) {
		raw, _ := json.Marshal(input)
		for _, cwd := range []string{"/srv/app", "/srv/lib", "/home/u", ""} {
			for _, ch := range []string{"C1", "C2"} {
				for _, resolve := range []int{0, 1, 2} {
					req := Request{Tool: tool, Input: raw, Cwd: cwd, Home: "/home/u", Channel: ch}
					switch resolve {
					case 1:
						req.Resolve(func(p string) (string, error) { return p, nil })
					case 2: // everything is a link into /etc
						req.Resolve(func(p string) (string, error) { return "/etc" + p, nil })
					}
					reqs = append(reqs, req)
				}
			}
		}
	}
	for _, cmd := range []string{"git status", "git status --short", "git push origin main", "gitk", "git status && rm -rf /",
		"rm -rf /", "rm x", "npm run test:unit", "npm run build", "kubectl --context prod-eu get pods", "X=1 git status",
		"git status > out", "$X", "case x in a) git status;; esac", "sudo rm -rf /", "echo $(git status)", "ls | xargs rm", ""} {
		add("Bash", map[string]string{"command": cmd})
	}
	for _, p := range []string{"/srv/app/.env", "/srv/app/src/a/x", "src/a/x", "src/.env", "/srv/x", "/etc/passwd", "~/.ssh/id", "/srv/app", ".env", "/srvx/a"} {
		for _, tool := range []string{"Read", "Edit", "Write"} {
			add(tool, map[string]string{"file_path": p})
		}
		add("Grep", map[string]string{"pattern": "x", "path": p})
	}
	add("Grep", map[string]string{"pattern": "x"})
	add("Glob", map[string]string{"pattern": "**/*.go"})
	add("Glob", map[string]string{"pattern": "../*"})
	for _, u := range []string{"https://example.com/", "https://api.example.com/x", "https://x.api.example.com/", "https://evil.test/", "https://example.com\\@evil.test/"} {
		add("WebFetch", map[string]string{"url": u, "prompt": "p"})
	}
	for _, tool := range []string{"mcp__gh__get", "mcp__gh__put", "mcp__ghx__get"} {
		add(tool, map[string]string{})
	}
	add("Read", map[string]string{})
	return reqs
}
