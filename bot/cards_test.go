package bot

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyCardsPostsOrEditsACard: a request's card has one owner. Outside
// cards.go (and render.go, which defines the renderers) no product file of
// the bot renders a card, posts one, records one or writes the line that
// stands for one (calls of the functions that do it; the outbox posts only
// what it is given, so a card posted elsewhere is rendered elsewhere).
func TestOnlyCardsPostsOrEditsACard(t *testing.T) {
	owned := map[string]bool{"renderCard": true, "renderCardWith": true, "SetCard": true, "AnsweredFromMemory": true}
	allowed := map[string]bool{"cards.go": true, "render.go": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || allowed[path] {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := ""
			switch fn := call.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if owned[name] {
				t.Errorf("%s: a call of %s, which belongs to cards.go", fset.Position(call.Pos()), name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked %d files; the test must run in the bot package's directory", checked)
	}
}
