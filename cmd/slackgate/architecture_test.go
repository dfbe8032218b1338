package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/slackgate/slackgate"

// layers says, for each package, which of our packages and which outside
// modules it may depend on, directly or through others (architecture.md:
// dependencies point toward store; bot and relay meet only there; store and
// blocks do no I/O and never log).
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
	"blocks":           {ours: []string{"store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket"}},
	"bot/fakeslack":    {ours: []string{"blocks", "store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket"}},
	"bot":              {ours: []string{"blocks", "store"}, outside: []string{"github.com/slack-go/slack", "github.com/gorilla/websocket", "github.com/rs/zerolog", "github.com/mattn/", "golang.org/x/sys", "github.com/google/uuid", "golang.org/x/sync"}},
	"cmd/slackgate":    {ours: []string{"*"}, outside: []string{"*"}},
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
