package policy

import (
	"slices"
	"strings"
	"testing"
)

const overlapPolicy = `rules:
  - name: reads
    match: ["Bash(git status)", "Bash(git log:*)", "Read"]
    allow: {}
  - name: no-push
    match: ["Bash(git push:*)"]
    deny: {}
  - name: env-files
    match: ["Edit(.env)"]
    deny: {}
  - name: prod-web
    match: ["WebFetch(domain:prod.example.com)"]
    ask: {}
  - name: prod-mcp
    match: ["mcp__prod"]
    deny: {}
  - name: ops-only
    match: ["Bash(kubectl:*)"]
    channels: [C0OPS]
    ask: {count: 2, approvers: ["*"]}
  - name: payments
    match: ["Bash(make deploy:*)"]
    repos: ["/srv/payments/**"]
    ask: {count: 2, approvers: ["*"]}
`

// names are the names of rules, joined.
func names(rs []*Rule) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return strings.Join(out, ",")
}

func TestWidensIsConservative(t *testing.T) {
	p := mustParse(t, overlapPolicy)
	web := Scope{Channel: "C1", Cwd: "/srv/web"}
	for _, c := range []struct {
		rule string
		sc   Scope
		want string
	}{
		{"Bash(git:*)", web, "no-push"},
		{"Bash(git push origin main)", web, "no-push"},
		{"Bash(bash -c 'git push origin main')", web, "no-push"},
		{"Bash(git push --force:*)", web, "no-push"},
		{"Bash(git status)", web, ""},
		{"Bash(git log:*)", web, ""},
		{"Bash(git diff *)", web, ""},
		{"Bash(npm test:*)", web, ""},
		{"Bash(/usr/bin/git:*)", web, "no-push"},
		{"Bash(env:*)", web, "no-push"},
		{"Bash(xargs:*)", web, "no-push"},
		{"Bash(sh:*)", web, "no-push"},
		{"Bash(python3:*)", web, ""}, // -c code: no rule reads it, with a card or without
		{"Bash(g*:*)", web, "no-push"},
		{"Bash", web, "no-push"},
		{"Bash(*)", web, "no-push"},
		{"Edit(src/**)", web, "env-files"},
		{"Write", web, "env-files"},
		{"Read(src/**)", web, ""},
		{"WebFetch(domain:docs.example.com)", web, ""},
		{"WebFetch(domain:prod.example.com)", web, "prod-web"},
		{"WebFetch(domain:*.example.com)", web, "prod-web"},
		{"WebFetch", web, "prod-web"},
		{"mcp__prod__deploy", web, "prod-mcp"},
		{"mcp__prod", web, "prod-mcp"},
		{"mcp__docs__search", web, ""},
		{"WebSearch", web, ""},
		{"Bash(kubectl get pods:*)", web, ""},
		{"Bash(kubectl get pods:*)", Scope{Channel: "C0OPS"}, "ops-only"},
		{"Bash(make deploy:*)", web, ""},
		{"Bash(make deploy:*)", Scope{Cwd: "/srv/payments/api"}, "payments"},
		{"Bash(make deploy:*)", Scope{Cwd: "/srv/web", Resolved: map[string]string{"/srv/web": "/srv/payments/api"}}, "payments"},
		{"Bash(make deploy:*)", Scope{}, "payments"},
		{"Bash(", web, "no-push,env-files,prod-web,prod-mcp"},
	} {
		if got := names(p.Widens(c.rule, c.sc)); got != c.want {
			t.Errorf("Widens(%q, %+v) = %q, want %q", c.rule, c.sc, got, c.want)
		}
	}
	var none *Policy
	if got := none.Widens("Bash", web); got != nil {
		t.Errorf("no policy: %v", got)
	}
}

func TestModeWidensNamesWhatTheModeRunsWithoutAsking(t *testing.T) {
	web := Scope{Channel: "C1", Cwd: "/srv/web"}
	for _, c := range []struct {
		policy, mode, want string
	}{
		{overlapPolicy, "acceptEdits", "env-files"},
		{overlapPolicy, "bypassPermissions", "no-push,env-files,prod-web,prod-mcp"},
		{overlapPolicy, "auto", "no-push,env-files,prod-web,prod-mcp"},
		{overlapPolicy, "plan", ""},
		{overlapPolicy, "default", ""},
		{"rules:\n  - {name: no-rm, match: [\"Bash(rm -rf:*)\"], deny: {}}\n  - {name: curl, match: [\"Bash(curl:*)\"], deny: {}}\n", "acceptEdits", "no-rm"},
		{"rules:\n  - {name: sed, match: [\"Bash(sed -i:*)\"], ask: {}}\n", "acceptEdits", "sed"},
		{"rules:\n  - {name: web, match: [\"WebFetch(domain:x.org)\", \"mcp__prod\"], deny: {}}\n", "acceptEdits", ""},
		{"rules:\n  - {name: edits, match: [\"Edit(src/**)\"], allow: {}}\n", "acceptEdits", ""},
	} {
		if got := names(mustParse(t, c.policy).ModeWidens(c.mode, web)); got != c.want {
			t.Errorf("%s under\n%s: %q, want %q", c.mode, c.policy, got, c.want)
		}
	}
}

// TestModeWidensAnywhereSeesEveryScope: the mode sessions start in meets
// every rule, whatever channels, repos or tokens it names.
func TestModeWidensAnywhereSeesEveryScope(t *testing.T) {
	p := mustParse(t, `rules:
  - name: ci-files
    match: ["Edit(.github/**)"]
    channels: [C0OPS]
    repos: ["/srv/**"]
    deny: {}
  - name: pushes
    match: ["Bash(git push:*)"]
    tokens: [ci]
    ask: {}
`)
	names := func(rs []*Rule) (out []string) {
		for _, r := range rs {
			out = append(out, r.Name)
		}
		return out
	}
	for mode, want := range map[string][]string{"default": nil, "plan": nil, "acceptEdits": {"ci-files"}, "bypassPermissions": {"ci-files", "pushes"}} {
		if got := names(p.ModeWidensAnywhere(mode)); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", mode, got, want)
		}
	}
}
