package policy

import "testing"

func TestFetchHostReadsTheURLAsABrowserDoes(t *testing.T) {
	for raw, want := range map[string]string{
		"https://example.com/a?b#c":              "example.com",
		"HTTP://Example.COM.:8080/":              "example.com",
		"https://user:pw@example.com/":           "example.com",
		"https://example.com@evil.test/":         "evil.test",
		"https://evil.test?@example.com/":        "evil.test",
		"https://evil.test#@example.com/":        "evil.test",
		"http://2130706433/":                     "127.0.0.1",
		"http://0x7f.1/":                         "127.0.0.1",
		"http://0177.0.0.01/":                    "127.0.0.1",
		"http://[::1]:80/":                       "::1",
		"https://example.com/%2e%2e/a b?q=%20":   "",
		"https://example.com/%41":                "example.com",
		"https://ex%61mple.com/":                 "",
		"https://evil.test\\@example.com/":       "",
		"https://exa\tmple.com/":                 "",
		"https://exämple.com/":                   "",
		"ftp://example.com/":                     "",
		"file:///etc/passwd":                     "",
		"example.com/path":                       "",
		"http://256.0.0.1/":                      "",
		"http://1.2.3.4.5/":                      "",
		"http://a..b/":                           "",
		"javascript:alert(1)//https://example.c": "",
	} {
		got, ok := fetchHost(raw)
		if (want == "") == ok || got != want {
			t.Errorf("fetchHost(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

func TestSegmentGlobs(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"*.go", "main.go", true}, {"*.go", ".go", true}, {"*.go", "main.gox", false},
		{"a?c", "abc", true}, {"a?c", "ac", false}, {"a?c", "aéc", true},
		{"[a-c]x", "bx", true}, {"[!a-c]x", "bx", false}, {"[!a-c]x", "dx", true}, {"[]]", "]", true},
		{`\*`, "*", true}, {`\*`, "x", false}, {"*a*b*c", "xxaxxbxxc", true}, {"*a*b*c", "xxaxxcxxb", false},
	} {
		if got := segMatch(c.pat, c.s); got != c.want {
			t.Errorf("segMatch(%q, %q) = %v", c.pat, c.s, got)
		}
	}
}

func TestPathPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, base, path  string
		file, dirAll, dirAny bool // matchFile in either mode; matchDir for allow and for deny
	}{
		{"/srv/app/**", "/", "/srv/app/a/b.go", true, true, true},
		{"/srv/app/**", "/", "/srv/app", false, true, true},
		{"/srv/app/**", "/", "/srv", false, false, true},
		{"/srv/app/**", "/", "/srvx/app/a", false, false, false},
		{"/srv/app", "/", "/srv/app/a", true, true, true},
		{"src/**", "/w", "/w/src/a.go", true, true, true},
		{"src/**", "/w", "/x/src/a.go", false, false, false},
		{".env", "/w", "/w/a/b/.env", true, true, true},
		{".env", "/w", "/w/a/b", false, false, true},
		{"logs/", "/w", "/w/logs", false, true, true},
		{"logs/", "/w", "/w/logs/x", true, true, true},
		{"**/*.pem", "/w", "/w/a/k.pem", true, true, true},
		{"a/**/b", "/w", "/w/a/b", true, true, true},
		{"a/**/b", "/w", "/w/a/x/y/b", true, true, true},
		{"a/**/b", "/w", "/w/a/x", false, false, true},
	} {
		pp, err := parsePathPattern(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := pp.matchFile(c.path, c.base, false); got != c.file {
			t.Errorf("%s under %s: file %s = %v", c.pattern, c.base, c.path, got)
		}
		if got := pp.matchDir(c.path, c.base, false); got != c.dirAll {
			t.Errorf("%s under %s: allow a search of %s = %v", c.pattern, c.base, c.path, got)
		}
		if got := pp.matchDir(c.path, c.base, true); got != c.dirAny {
			t.Errorf("%s under %s: deny a search of %s = %v", c.pattern, c.base, c.path, got)
		}
	}
}

func TestCanonicalPath(t *testing.T) {
	for _, c := range []struct{ p, cwd, home, want string }{
		{"/srv/app/../../etc/passwd", "/", "", "/etc/passwd"},
		{"a/./b//c/..", "/w", "", "/w/a/b"},
		{"~/.ssh/id", "/w", "/home/u", "/home/u/.ssh/id"},
		{"~", "/w", "/home/u", "/home/u"},
		{"~/x", "/w", "", ""},
		{"~root/x", "/w", "/home/u", ""},
		{"x", "", "/home/u", ""},
		{"x\x00y", "/w", "", ""},
		{"../../../..", "/w/a", "", "/"},
	} {
		got, ok := canonicalPath(c.p, c.cwd, c.home)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("canonicalPath(%q, %q, %q) = %q, %v; want %q", c.p, c.cwd, c.home, got, ok, c.want)
		}
	}
}
