package policy

import (
	"encoding/json"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestResolveWalksUpOnlyPastNamesThatAreNotThere: with Claude running as
// another user, the side that resolves may not enter Claude's directories;
// a path it cannot see through may hold a link to anywhere, so it is not
// resolved (never allowed), while a file about to be written below a
// directory it can see is.
func TestResolveWalksUpOnlyPastNamesThatAreNotThere(t *testing.T) {
	p := mustParse(t, `rules:
  - {name: etc, match: ["Edit(/etc/**)"], deny: {}}
  - {name: app, match: ["Edit(src/**)"], allow: {}}
`)
	// /srv/open is readable; /srv/closed may not be entered (EACCES), as
	// Claude's own directories are for the worker under CLAUDE_USER; in
	// both, src/new does not exist yet.
	realpath := func(p string) (string, error) {
		switch {
		case strings.HasPrefix(p, "/srv/closed/"):
			return "", &fs.PathError{Op: "lstat", Path: p, Err: syscall.EACCES}
		case strings.Contains(p, "/src/new"):
			return "", &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}
		}
		return path.Clean(p), nil
	}
	edit := func(cwd, file string) (Verdict, map[string]string) {
		req := Request{Tool: "Write", Input: json.RawMessage(`{"file_path":"` + file + `","content":""}`), Cwd: cwd}
		req.Resolve(realpath)
		return p.Evaluate(req, time.Now()), req.Resolved
	}
	if v, resolved := edit("/srv/open", "src/new/file.go"); v.Action != Allow || resolved["src/new/file.go"] != "/srv/open/src/new/file.go" {
		t.Errorf("a new file below a readable directory: %+v, resolved %v", v, resolved)
	}
	if v, resolved := edit("/srv/closed", "src/link/passwd"); v.Action == Allow {
		t.Errorf("a file below a directory that cannot be entered was allowed: %+v, resolved %v", v, resolved)
	} else if _, ok := resolved["src/link/passwd"]; ok {
		t.Errorf("a path that could not be seen through was resolved: %v", resolved)
	}
}
