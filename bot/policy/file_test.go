package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/broken/*.err from what Parse reports")

// TestBrokenFilesAreRefusedWithTheirLines parses each file in
// testdata/broken, one kind of mistake each, and compares every error
// ("file:line: what is wrong") with its .err file.
func TestBrokenFilesAreRefusedWithTheirLines(t *testing.T) {
	files, err := filepath.Glob("testdata/broken/*.yaml")
	if err != nil || len(files) < 10 {
		t.Fatalf("testdata/broken: %v, %d files", err, len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(filepath.Base(file), data, Options{})
			var errs Errors
			if !errors.As(err, &errs) || p != nil {
				t.Fatalf("Parse = %v, %v; want Errors and no policy", p, err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
			for _, e := range errs {
				if e.Line < 1 || e.File != filepath.Base(file) {
					t.Errorf("%+v: every error names the file and a line", e)
				}
			}
		})
	}
}

func TestTheIssuesExampleIsValid(t *testing.T) {
	data, err := os.ReadFile("testdata/issue.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse("issue.yaml", data, Options{Approvers: []string{"U0A"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules()) != 3 || len(p.Warnings()) != 0 || len(p.BypassPermissions()) != 0 {
		t.Errorf("rules %d, warnings %v, bypass %v", len(p.Rules()), p.Warnings(), p.BypassPermissions())
	}
	prod := p.Rules()[2]
	want := AskSpec{Approvers: []string{"S0SRE", "U0LEE"}, Count: 2, NotSelf: true, Notify: []string{"C0SRE"},
		RemindAfter: 10 * time.Minute, EscalateAfter: 30 * time.Minute, EscalateTo: []string{"S0ONCALL"}}
	if prod.Name != "prod" || prod.Line != 8 || prod.Ask.String() != want.String() ||
		!slices.Equal(prod.Channels, []string{"C0OPS"}) || !slices.Equal(prod.Repos, []string{"/srv/payments/**"}) || !slices.Equal(prod.Tokens, []string{"ci"}) {
		t.Errorf("prod: %+v", prod)
	}
	if len(p.Digest()) != 64 || p.Digest() == mustParse(t, strings.Replace(string(data), "10m", "11m", 1)).Digest() {
		t.Errorf("digest %q: want the file's SHA-256, different for a different file", p.Digest())
	}
}

// TestCountIsCheckedAgainstAPPROVERS: an ask rule without approvers asks
// APPROVERS, so its count is checked against them when they are known.
func TestCountIsCheckedAgainstAPPROVERS(t *testing.T) {
	text := "rules:\n  - {name: two, match: [Bash], ask: {count: 2, not_self: true}}\n"
	for _, c := range []struct {
		approvers []string
		want      string
	}{
		{nil, ""},
		{[]string{"U01", "U02", "U03"}, ""},
		{[]string{"S0SRE"}, ""},
		{[]string{"*"}, ""},
		{[]string{"U01", "U02"}, `policy.yaml:2: rule "two": count 2 with not_self: APPROVERS names 2 people and the session's starter may be one of them, which leaves 1 person`},
	} {
		_, err := Parse("policy.yaml", []byte(text), Options{Approvers: c.approvers})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("APPROVERS %v: got %q, want %q", c.approvers, got, c.want)
		}
	}
}

func TestModesNameWhoMayBypass(t *testing.T) {
	p := mustParse(t, "rules: []\nmodes:\n  bypassPermissions: [U0ADMIN, S0ADMINS]\n")
	if !slices.Equal(p.BypassPermissions(), []string{"U0ADMIN", "S0ADMINS"}) {
		t.Errorf("got %v", p.BypassPermissions())
	}
	if p := mustParse(t, "rules: []\n"); p.BypassPermissions() != nil {
		t.Errorf("default: got %v, want nobody", p.BypassPermissions())
	}
}

func TestUnknownToolNamesWarn(t *testing.T) {
	p := mustParse(t, "rules:\n  - name: typo\n    match:\n      - Raed\n      - Read\n    allow: {}\n")
	w := p.Warnings()
	if len(w) != 1 || w[0].String() != `policy.yaml:4: rule "typo": no Claude Code tool is called Raed; the entry matches only a tool of exactly that name` {
		t.Errorf("got %v", w)
	}
}

func TestOversizedFileIsRefused(t *testing.T) {
	_, err := Parse("big.yaml", make([]byte, MaxFileBytes+1), Options{})
	if err == nil || err.Error() != "big.yaml:1: larger than 1048576 bytes" {
		t.Errorf("got %v", err)
	}
}
