package policy

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"strings"
)

// maxResolveSteps bounds the realpath calls for one path that does not
// exist yet (each missing directory costs one).
const maxResolveSteps = 64

// Paths are the paths a request of tool with input names, as written:
// the keys Request.Resolved takes. Nil for tools without paths.
func Paths(tool string, input json.RawMessage) []string {
	f := newFacts(Request{Tool: tool, Input: input})
	raws, _, ok := requestPaths(tool, f)
	if !ok {
		return nil
	}
	return raws
}

// Resolve fills r.Resolved with the real path of each of Paths, of Cwd
// and of Home, using realpath: filepath.EvalSymlinks on the machine
// Claude runs on, whose caller does the I/O. A path that does not exist
// yet (a file about to be written) is its deepest existing directory,
// resolved, and the rest: only a name that is not there (fs.ErrNotExist)
// is taken as written. One realpath cannot see through for another reason
// (a directory it may not enter, as when Claude runs as another user, a
// loop of links) may hold a link anywhere: it is left out, and so never
// matches an allow rule.
func (r *Request) Resolve(realpath func(string) (string, error)) {
	if r.Resolved == nil {
		r.Resolved = map[string]string{}
	}
	for _, p := range append(Paths(r.Tool, r.Input), r.Cwd, r.Home) {
		if p == "" {
			continue
		}
		abs, ok := joinPath(p, r.Cwd, r.Home)
		if !ok {
			continue
		}
		if real, ok := resolveExisting(abs, realpath); ok {
			r.Resolved[p] = real
		}
	}
}

// joinPath is canonicalPath without the lexical cleaning: the system
// applies a .. after a symlink to the symlink's target, so the raw
// joined path is what realpath must see.
func joinPath(p, cwd, home string) (string, bool) {
	if _, ok := canonicalPath(p, cwd, home); !ok {
		return "", false
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return home + p[1:], true
	case !path.IsAbs(p):
		return cwd + "/" + p, true
	}
	return p, true
}

// resolveExisting resolves abs, or its deepest existing directory and
// appends the names that do not exist yet.
func resolveExisting(abs string, realpath func(string) (string, error)) (string, bool) {
	rest := ""
	for range maxResolveSteps {
		real, err := realpath(abs)
		switch {
		case err == nil && path.IsAbs(real):
			return path.Clean(real + rest), true
		case !errors.Is(err, fs.ErrNotExist):
			return "", false
		}
		i := strings.LastIndexByte(abs, '/')
		if i < 0 || abs == "/" {
			return "", false
		}
		abs, rest = abs[:i], abs[i:]+rest
		if abs == "" {
			abs = "/"
		}
	}
	return "", false
}
