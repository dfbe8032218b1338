package redisstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

func TestSlotMatchesRedis(t *testing.T) {
	// Values from CLUSTER KEYSLOT and the cluster specification.
	for key, want := range map[string]int{
		"123456789":            12739,
		"foo":                  12182,
		"{user1000}.following": 3443,
		"user1000":             3443,
		"{}foo":                9500, // an empty tag: the whole key is hashed
		"foo{}{bar}":           8363,
	} {
		if got := slot(key); got != want {
			t.Errorf("slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// TestScriptKeysShareASlot: the keys each group of keys.go puts in one slot
// do share it, whatever the ids hold (braces, colons), so every script
// given keys of one group may run on a cluster.
func TestScriptKeysShareASlot(t *testing.T) {
	k := newKeys("slackgate")
	for _, id := range []string{"plain", "with:colons", "a}b", "{x}", "}", "über"} {
		groups := map[string][]string{
			"session": {k.session(id), k.inbox(id), k.owner(id), k.sessionPending(id)},
			"request": {k.request(id)},
			"sink":    {k.sinkClaim(id), k.sinkCursor(id)},
			"global": {k.events(), k.audit(), k.ready(), k.owners(), k.owned(id), k.heartbeat(id),
				k.owned("other"), k.heartbeat("other")},
		}
		for name, keys := range groups {
			if err := oneSlot(keys); err != nil {
				t.Errorf("id %q, %s group: %v", id, name, err)
			}
		}
	}
	if slot(k.session("s1")) == slot(k.session("s2")) && slot(k.session("s2")) == slot(k.session("s3")) {
		t.Error("three sessions share one slot: sessions do not spread")
	}
	if err := oneSlot([]string{k.session("s1"), k.events()}); err == nil {
		t.Error("oneSlot accepted a session key with a global key")
	}
}

// TestEveryScriptRunsThroughTheSlotCheck: no script is run but by s.run or
// s.runIn, which refuse keys of several slots before Redis sees them, so
// the conformance suite on a single server catches a script whose keys
// would not run on a cluster. (Loading one is fine: it names no keys.)
func TestEveryScriptRunsThroughTheSlotCheck(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	scripts := map[string]bool{}
	var parsed []*ast.File
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != 1 {
				return true
			}
			if call, ok := vs.Values[0].(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewScript" {
					scripts[vs.Names[0].Name] = true
				}
			}
			return true
		})
	}
	if len(scripts) < 10 {
		t.Fatalf("found only %d scripts", len(scripts))
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && scripts[x.Name] && sel.Sel.Name != "Load" {
				t.Errorf("%s: %s.%s bypasses s.run/s.runIn and their slot check", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
			}
			return true
		})
	}
}
