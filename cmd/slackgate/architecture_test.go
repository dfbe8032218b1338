package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/slackgate/slackgate"

// layers says, for each package, which of our packages and which outside
// modules it may depend on, directly or through others (doc.go, "How the
// parts fit": dependencies point toward store; bot and relay meet only there;
// store and blocks do no I/O and never log, so neither may reach zerolog).
var layers = map[string]struct {
	ours    []string // packages of this module, besides itself
	outside []string // module path prefixes
}{
	"store":            {},
	"store/storetest":  {ours: []string{"store"}},
	"store/boltstore":  {ours: []string{"store"}, outside: []string{"go.etcd.io/bbolt", "golang.org/x/sys"}},
	"store/redisstore": {ours: []string{"store"}, outside: []string{"github.com/redis/go-redis", "github.com/cespare/xxhash", "github.com/dgryski/go-rendezvous", "go.uber.org/atomic", "golang.org/x/sys"}},
	"relay":            {ours: []string{"store"}, outside: []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "golang.org/x/sync"}},
	"relay/relaytest":  {ours: []string{"relay", "store"}, outside: []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "golang.org/x/sync"}},
	// The stand-in CLI for load runs is a program of its own; it borrows
	// relay's wire types so it speaks exactly what the worker decodes.
	"relay/relaytest/standin": {ours: []string{"relay", "store"}, outside: []string{"github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "golang.org/x/sync"}},
	"blocks":                  {ours: []string{"store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket"}},
	"bot/fakeslack":           {ours: []string{"blocks", "store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket"}},
	// The approval API, both ends: the server borrows blocks' words and
	// the outbox's token bucket, and logs; it never reaches bot.
	"bot/approvalapi": {ours: []string{"blocks", "bot/outbox", "store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid"}},
	// The one writer to Slack: the store's vocabulary (clock, message
	// refs), Slack's client and a logger; it renders nothing (no blocks).
	"bot/outbox": {ours: []string{"store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys"}},
	// The audit log's delivery beyond the store: the webhook needs the
	// store and a logger; the audit channel renders its lines (blocks),
	// names only the approvals that count (bot/decide, which brings the
	// policy) and posts through the outbox with Slack's client.
	"bot/auditsink": {ours: []string{"blocks", "bot/decide", "bot/outbox", "bot/policy", "store"}, outside: []string{"go.yaml.in/yaml/v3", "mvdan.cc/sh/v3", "github.com/slack-go/slack", "github.com/gorilla/websocket", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys"}},
	// The one path that settles a request: the store, the policy and a
	// logger; nothing of Slack.
	"bot/decide": {ours: []string{"bot/policy", "store"}, outside: []string{"go.yaml.in/yaml/v3", "mvdan.cc/sh/v3", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys"}},
	// The policy file: pure, like blocks; YAML for line numbers, and
	// mvdan.cc/sh's parser to read commands as bash.
	"bot/policy":    {ours: []string{"store"}, outside: []string{"go.yaml.in/yaml/v3", "mvdan.cc/sh/v3"}},
	"bot":           {ours: []string{"blocks", "bot/auditsink", "bot/approvalapi", "bot/decide", "bot/outbox", "bot/policy", "store"}, outside: []string{"go.yaml.in/yaml/v3", "mvdan.cc/sh/v3", "github.com/slack-go/slack", "github.com/gorilla/websocket", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "golang.org/x/sync"}},
	"cmd/slackgate": {ours: []string{"*"}, outside: []string{"*"}},

	// Test helpers that start real servers; tests only.
	"store/redisstore/redistest": {},
}

// TestPackagesKeepTheirLayers fails when a package grows a dependency the
// architecture forbids, or when a new package appears without a rule.
func TestPackagesKeepTheirLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}: {{join .Deps " "}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := 0
	for line := range strings.Lines(string(out)) {
		pkg, deps, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok || !strings.HasPrefix(pkg, module+"/") {
			continue // an outside module's own line
		}
		rel := strings.TrimPrefix(pkg, module+"/")
		rule, known := layers[rel]
		if !known {
			t.Errorf("package %s has no rule in architecture_test.go: decide what it may import", rel)
			continue
		}
		seen++
		for _, dep := range strings.Fields(deps) {
			if !strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") {
				continue // standard library
			}
			if dep == module+"/cmd/slackgate" || strings.HasPrefix(dep, module+"/cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd", rel, dep)
				continue
			}
			if ourDep, ours := strings.CutPrefix(dep, module+"/"); ours {
				if !slices.Contains(rule.ours, "*") && !slices.Contains(rule.ours, ourDep) {
					t.Errorf("%s depends on %s", rel, ourDep)
				}
				continue
			}
			if !slices.Contains(rule.outside, "*") && !slices.ContainsFunc(rule.outside, func(p string) bool { return strings.HasPrefix(dep, p) }) {
				t.Errorf("%s depends on %s", rel, dep)
			}
		}
	}
	if seen < 9 {
		t.Errorf("checked %d packages; go list found fewer than the architecture has", seen)
	}
}

// maxFuncLines bounds a function outside tests, from its func line to its
// closing brace: past it, a function does several jobs and is hard to change.
const maxFuncLines = 80

// TestNoLongFunctions fails listing every function or method of the module,
// tests aside, longer than maxFuncLines. A test is a function in a _test.go
// file or one that takes a *testing.T, *testing.B or testing.TB: the
// conformance suite in store/storetest is a test that lives outside one.
func TestNoLongFunctions(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .CgoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}`, module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	fset := token.NewFileSet()
	files := 0
	for path := range strings.Lines(string(out)) {
		path = strings.TrimSpace(path)
		if path == "" {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		files++
		rel, _ := filepath.Rel(strings.TrimSpace(string(root)), path)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || isTest(fd) {
				continue
			}
			start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
			if n := end - start + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines (at most %d)", rel, start, funcName(fd), n, maxFuncLines)
			}
		}
	}
	if files < 50 {
		t.Errorf("parsed %d files; go list found fewer than the module has", files)
	}
}

// funcName names a function as Go does in stack traces: (*T).m, T.m or f.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		star, typ = "*", s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	name := "?"
	if id, ok := typ.(*ast.Ident); ok {
		name = id.Name
	}
	if star != "" {
		return "(" + star + name + ")." + fd.Name.Name
	}
	return name + "." + fd.Name.Name
}

// isTest reports whether fd takes a *testing.T, *testing.B or testing.TB.
func isTest(fd *ast.FuncDecl) bool {
	for _, p := range fd.Type.Params.List {
		typ := p.Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		sel, ok := typ.(*ast.SelectorExpr)
		if !ok {
			continue
		}
		if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "testing" && slices.Contains([]string{"T", "B", "TB"}, sel.Sel.Name) {
			return true
		}
	}
	return false
}
