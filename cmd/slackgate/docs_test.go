package main

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The documentation tests hold README.md, the deployment READMEs and the
// package docs to the code, so what they say stays true: every setting is
// documented as it is, every link leads somewhere in the repository, every
// test a trust claim names exists, and the package docs' file indexes and
// command lists are whole.

// readmeMaxLines keeps README.md a user's page: detail belongs where its
// reader looks (deploy/, the package docs, the benchmarks' doc comments).
const readmeMaxLines = 400

// notSettings are environment variables Config or HookConfig read that an
// operator does not set for slackgate: the system's or Claude Code's.
var notSettings = map[string]string{
	"HOME":                   "the system's: where the default token file lives",
	"XDG_CONFIG_HOME":        "the system's: where the default token file lives",
	"USER":                   "the system's: names who runs a hook's session",
	"CLAUDE_CODE_SESSION_ID": "Claude Code's: set for the MCP servers it starts",
}

// docsRoot is the module's root directory.
func docsRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func docText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// userDocs are README.md and every README under deploy/, relative to root.
func userDocs(t *testing.T, root string) []string {
	t.Helper()
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "README.md" {
			rel, err := filepath.Rel(root, path)
			docs = append(docs, rel)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// envTags are the variables a config struct reads, with their defaults
// ("" when none).
func envTags(v any) map[string]string {
	tags := map[string]string{}
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if name == "" || name == "-" {
			continue
		}
		tags[name] = f.Tag.Get("envDefault")
	}
	return tags
}

// configRows reads the table under README.md's "## Configuration": each
// row whose first cell is a `VARIABLE`, with its default cell.
func configRows(t *testing.T, readme string) map[string]string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Configuration\n")
	if !ok {
		t.Fatal(`README.md has no "## Configuration" section`)
	}
	if next := strings.Index(section, "\n## "); next >= 0 {
		section = section[:next]
	}
	row := regexp.MustCompile("^\\| `([A-Z][A-Z0-9_]*)` \\| ([^|]*) \\|")
	rows := map[string]string{}
	for line := range strings.Lines(section) {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("README.md documents %s twice", m[1])
		}
		rows[m[1]] = m[2]
	}
	if len(rows) == 0 {
		t.Fatal("README.md's configuration table has no rows")
	}
	return rows
}

// TestREADMEConfigurationMatchesConfig: every variable Config and
// HookConfig read is in README.md's configuration table with its default,
// and the table names no variable slackgate does not read.
func TestREADMEConfigurationMatchesConfig(t *testing.T) {
	rows := configRows(t, docText(t, filepath.Join(docsRoot(t), "README.md")))
	tags := envTags(Config{})
	for name, def := range envTags(HookConfig{}) {
		tags[name] = def
	}
	for name := range notSettings {
		if _, ok := tags[name]; !ok {
			t.Errorf("notSettings names %s, which no config struct reads: drop it", name)
		}
		if _, ok := rows[name]; ok {
			t.Errorf("README.md documents %s, which is %s, not a setting", name, notSettings[name])
		}
		delete(tags, name)
	}
	for name, def := range tags {
		cell, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("README.md's configuration table does not document %s", name)
		case def != "" && !strings.Contains(cell, "`"+def+"`"):
			t.Errorf("README.md gives %s the default %q; Config's is `%s`", name, strings.TrimSpace(cell), def)
		}
	}
	for name := range rows {
		if _, ok := tags[name]; !ok {
			t.Errorf("README.md documents %s, which slackgate does not read", name)
		}
	}
}

func TestREADMEStaysShort(t *testing.T) {
	readme := docText(t, filepath.Join(docsRoot(t), "README.md"))
	if n := strings.Count(readme, "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move detail to where its reader looks (deploy/, a package's doc.go, a benchmark's doc comment)", n, readmeMaxLines)
	}
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)|<img src="([^"]+)"|<a href="([^"]+)"`)
	mdFence = regexp.MustCompile("^\\s*```")
)

// headingAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, every other character but letters, digits, '-' and '_' dropped.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors are the anchors of a Markdown file's headings (outside code
// fences), a repeated one numbered as GitHub numbers it.
func headingAnchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for line := range strings.Lines(text) {
		if mdFence.MatchString(line) {
			inFence = !inFence
			continue
		}
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if inFence || hashes == 0 || hashes > 6 || !strings.HasPrefix(line[hashes:], " ") {
			continue
		}
		s := headingAnchor(line[hashes:])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// insideRepo reports whether path, absolute, lies in root.
func insideRepo(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// TestMarkdownLinksResolve: every relative link and image in README.md and
// deploy/'s READMEs names a file or directory inside the repository, and
// every #anchor a heading of the Markdown file it points into.
func TestMarkdownLinksResolve(t *testing.T) {
	root := docsRoot(t)
	for _, doc := range userDocs(t, root) {
		text := docText(t, filepath.Join(root, doc))
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1] + m[2] + m[3]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checkLink(t, root, doc, target)
		}
	}
}

func checkLink(t *testing.T, root, doc, target string) {
	t.Helper()
	file, anchor, _ := strings.Cut(target, "#")
	path := filepath.Join(root, doc)
	if file != "" {
		path = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
	}
	if !insideRepo(root, path) {
		t.Errorf("%s links to %s, outside the repository", doc, target)
		return
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("%s links to %s, which does not exist", doc, target)
		return
	}
	if anchor == "" {
		return
	}
	if filepath.Ext(path) != ".md" {
		t.Errorf("%s links to %s: an anchor into a file that is not Markdown", doc, target)
		return
	}
	if !headingAnchors(docText(t, path))[anchor] {
		t.Errorf("%s links to %s: no heading there has the anchor #%s", doc, target, anchor)
	}
}

// TestNoPathOutsideTheRepository: the user docs and the Makefile name no
// relative path that leaves the repository; a clone has nothing there.
func TestNoPathOutsideTheRepository(t *testing.T) {
	root := docsRoot(t)
	up := regexp.MustCompile(`(?:\.\./)+[\w.-]*`)
	for _, doc := range append(userDocs(t, root), "Makefile") {
		for _, p := range up.FindAllString(docText(t, filepath.Join(root, doc)), -1) {
			if !insideRepo(root, filepath.Join(root, filepath.Dir(doc), p)) {
				t.Errorf("%s names %s, outside the repository", doc, p)
			}
		}
	}
}

// goFuncs are the names of every function declared in the module's Go
// files.
func goFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func (\w+)\(`)
	funcs := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			funcs[m[1]] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// TestDocsNameOnlyTestsThatExist: a trust claim is only as good as the
// test it names, so every test, fuzz target and benchmark the user docs
// name is declared, every golden file exists, and every conformance case
// is in store/storetest.
func TestDocsNameOnlyTestsThatExist(t *testing.T) {
	root := docsRoot(t)
	funcs := goFuncs(t, root)
	named := regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z]\\w*)")
	golden := regexp.MustCompile("`((?:card|final|event|ephemeral|modal|home|status)_[a-z0-9_]+)`")
	conformance := regexp.MustCompile("conformance `\\w+/(\\w+)`")
	storetest := ""
	matches, err := filepath.Glob(filepath.Join(root, "store", "storetest", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range matches {
		storetest += docText(t, f)
	}
	for _, doc := range userDocs(t, root) {
		text := docText(t, filepath.Join(root, doc))
		for _, m := range named.FindAllStringSubmatch(text, -1) {
			if !funcs[m[1]] {
				t.Errorf("%s names %s, which no Go file declares", doc, m[1])
			}
		}
		for _, m := range golden.FindAllStringSubmatch(text, -1) {
			if _, err := os.Stat(filepath.Join(root, "blocks", "testdata", m[1]+".golden.json")); err != nil {
				t.Errorf("%s names the golden file %s: %v", doc, m[1], err)
			}
		}
		for _, m := range conformance.FindAllStringSubmatch(text, -1) {
			if !strings.Contains(storetest, `"`+m[1]+`"`) {
				t.Errorf("%s names the conformance case %s, which store/storetest does not run", doc, m[1])
			}
		}
	}
}

// usageCommands are the subcommands main's usage text lists.
func usageCommands() []string {
	line := regexp.MustCompile(`(?m)^  ([a-z]+)  `)
	var out []string
	for _, m := range line.FindAllStringSubmatch(usage, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestDocsNameEveryCommandAndNoOther: this package's doc lists every
// subcommand, and no doc names a command (in code: `slackgate X`, or a
// line of a code block) that does not exist.
func TestDocsNameEveryCommandAndNoOther(t *testing.T) {
	root := docsRoot(t)
	cmds := usageCommands()
	if len(cmds) < 10 {
		t.Fatalf("usage lists %d commands (%v): the test no longer reads it right", len(cmds), cmds)
	}
	doc := docText(t, filepath.Join(root, "cmd", "slackgate", "doc.go"))
	for _, c := range cmds {
		if c != "help" && !strings.Contains(doc, "//\tslackgate "+c+" ") {
			t.Errorf("cmd/slackgate/doc.go does not list `slackgate %s`", c)
		}
	}
	for _, f := range append(userDocs(t, root), filepath.Join("cmd", "slackgate", "doc.go")) {
		for _, c := range namedCommands(docText(t, filepath.Join(root, f))) {
			if !slices.Contains(cmds, c) {
				t.Errorf("%s names `slackgate %s`, which is no command", f, c)
			}
		}
	}
}

// namedCommands are the commands a document names as code: `slackgate X`
// in a code span, or a code block's line (fenced, or a doc comment's
// indented one) starting with slackgate X.
func namedCommands(text string) []string {
	span := regexp.MustCompile("`slackgate ([a-z]+)")
	line := regexp.MustCompile(`^(?:\s*|//\t)slackgate ([a-z]+)`)
	var out []string
	inFence := false
	for l := range strings.Lines(text) {
		if mdFence.MatchString(l) {
			inFence = !inFence
			continue
		}
		for _, m := range span.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
		if m := line.FindStringSubmatch(l); m != nil && (inFence || strings.HasPrefix(l, "//\t")) {
			out = append(out, m[1])
		}
	}
	return out
}

// TestPackageDocsListEveryFile: a doc.go with a file index (lines of a
// code block starting with a file name) names every non-test Go file of
// its package, and only files that exist.
func TestPackageDocsListEveryFile(t *testing.T) {
	root := docsRoot(t)
	entry := regexp.MustCompile(`^//\t([a-z0-9_*]+\.go)\s`)
	indexed := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Name() != "doc.go" {
			return nil
		}
		listed, err := docIndex(path, entry)
		if err != nil || len(listed) == 0 {
			return err
		}
		indexed++
		rel, _ := filepath.Rel(root, path)
		checkIndex(t, rel, filepath.Dir(path), listed)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if indexed == 0 {
		t.Fatal("no doc.go has a file index: bot/doc.go should")
	}
}

func docIndex(path string, entry *regexp.Regexp) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := entry.FindStringSubmatch(sc.Text()); m != nil {
			listed = append(listed, m[1])
		}
	}
	return listed, sc.Err()
}

func checkIndex(t *testing.T, doc, dir string, listed []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasSuffix(name, "_test.go") || name == "doc.go" {
			continue
		}
		if !slices.ContainsFunc(listed, func(pattern string) bool { ok, _ := filepath.Match(pattern, name); return ok }) {
			t.Errorf("%s's file index does not list %s", doc, name)
		}
	}
	for _, pattern := range listed {
		if m, _ := filepath.Glob(filepath.Join(dir, pattern)); len(m) == 0 {
			t.Errorf("%s's file index lists %s, which does not exist", doc, pattern)
		}
	}
}

// TestPackageCommentsOpenWithOneLine: `go doc` and pkg.go.dev show a
// package comment's first sentence as its synopsis, so it is one line.
func TestPackageCommentsOpenWithOneLine(t *testing.T) {
	root := docsRoot(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.Name() != "doc.go" {
			return nil
		}
		first, _, _ := strings.Cut(docText(t, path), "\n")
		rel, _ := filepath.Rel(root, path)
		switch {
		case len([]rune(first)) > 100:
			t.Errorf("%s opens with a line of %d characters, over 100", rel, len([]rune(first)))
		case !strings.HasSuffix(first, "."):
			t.Errorf("%s's first sentence does not end on its first line: %q", rel, first)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.SkipDir) {
		t.Fatal(err)
	}
}

// TestREADMENamesEveryMetric: every metric this package registers is in
// README.md's table of metrics.
func TestREADMENamesEveryMetric(t *testing.T) {
	root := docsRoot(t)
	readme := docText(t, filepath.Join(root, "README.md"))
	src := docText(t, filepath.Join(root, "cmd", "slackgate", "metrics.go"))
	registered := regexp.MustCompile(`(?:counter|histogram|gauge)\("([a-z_]+)"|Name: "([a-z_]+)"`).FindAllStringSubmatch(src, -1)
	if len(registered) < 10 {
		t.Fatalf("found %d metrics in metrics.go: the test no longer reads it right", len(registered))
	}
	for _, m := range registered {
		if name := "slackgate_" + m[1] + m[2]; !strings.Contains(readme, "| `"+name+"`") && !strings.Contains(readme, ", `"+name+"`") {
			t.Errorf("README.md's metrics table does not list %s", name)
		}
	}
}
