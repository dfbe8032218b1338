package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// Bounds on path rules and the paths they are matched against.
const (
	maxPatternBytes = 1024
	maxPatternSegs  = 64
	maxDoubleStars  = 8
	// MaxPathBytes is the longest path a request may name, and
	// maxPathSegs the most names in it; a longer one is unknown: never
	// allowed, and matched by every deny or ask rule about its tool.
	MaxPathBytes = 4096
	maxPathSegs  = 256
)

type anchor uint8

const (
	anchorRoot anchor = iota // //path and /path
	anchorHome               // ~/path
	anchorCwd                // path and ./path: the session's working directory
)

// pathPattern is the path of a Read(…) or Edit(…) rule: gitignore-style
// globs below an anchor.
type pathPattern struct {
	raw    string
	anchor anchor
	segs   []string // glob segments below the anchor; "**" stands alone
	// anyDepth: a relative pattern without a slash matches that name at
	// any depth below the working directory (gitignore).
	anyDepth bool
	// dirOnly: a trailing slash matches a directory (and what is in it).
	dirOnly bool
	// dirAnyDepth: a relative NAME/** also matches a NAME directory at any
	// depth in deny and ask rules, as the CLI's deny rules do.
	dirAnyDepth bool
}

// parsePathPattern reads the path of a Read(…) or Edit(…) rule.
func parsePathPattern(s string) (pathPattern, error) {
	switch {
	case s == "":
		return pathPattern{}, errors.New("an empty path")
	case len(s) > maxPatternBytes:
		return pathPattern{}, fmt.Errorf("a path longer than %d bytes", maxPatternBytes)
	case strings.ContainsAny(s, "\x00\n\r"):
		return pathPattern{}, errors.New("a path with a control character")
	case s[0] == '!':
		return pathPattern{}, errors.New("a leading ! (gitignore's negation) has no meaning in a rule; write a deny rule instead")
	case strings.ContainsAny(s, "{}"):
		return pathPattern{}, errors.New("braces {a,b} are not glob syntax here; write one rule for each alternative")
	}
	pp := pathPattern{raw: s, anchor: anchorCwd}
	rest := s
	switch {
	case strings.HasPrefix(s, "/"):
		pp.anchor, rest = anchorRoot, strings.TrimLeft(s, "/")
	case s == "~" || strings.HasPrefix(s, "~/"):
		pp.anchor, rest = anchorHome, strings.TrimPrefix(s[1:], "/")
	case strings.HasPrefix(s, "~"):
		return pathPattern{}, errors.New("~user paths are not supported; write the absolute path")
	case strings.HasPrefix(s, "./"):
		rest = s[2:]
	default:
		pp.anyDepth = !strings.Contains(strings.TrimSuffix(s, "/"), "/")
	}
	pp.dirOnly = strings.HasSuffix(rest, "/")
	for seg := range strings.SplitSeq(rest, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return pathPattern{}, errors.New(".. in a path rule; write the path it means")
		}
		if err := checkGlobSeg(seg); err != nil {
			return pathPattern{}, err
		}
		pp.segs = append(pp.segs, seg)
	}
	if len(pp.segs) == 0 {
		pp.segs, pp.anyDepth, pp.dirOnly = []string{"**"}, false, false
	}
	stars := 0
	for _, seg := range pp.segs {
		if seg == "**" {
			stars++
		}
	}
	if len(pp.segs) > maxPatternSegs || stars > maxDoubleStars {
		return pathPattern{}, fmt.Errorf("a path of more than %d parts or %d **", maxPatternSegs, maxDoubleStars)
	}
	pp.dirAnyDepth = pp.anchor == anchorCwd && !strings.HasPrefix(s, "./") && len(pp.segs) == 2 && pp.segs[1] == "**" && pp.segs[0] != "**"
	return pp, nil
}

// checkGlobSeg rejects a segment with an unclosed [ or a trailing \.
func checkGlobSeg(seg string) error {
	for i := 0; i < len(seg); i++ {
		switch seg[i] {
		case '\\':
			if i+1 == len(seg) {
				return fmt.Errorf("%q ends in a lone backslash", seg)
			}
			i++
		case '[':
			_, _, n := matchClass(seg[i:], "x")
			if n == 0 {
				return fmt.Errorf("%q has an unclosed [", seg)
			}
			i += n - 1
		}
	}
	return nil
}

// relSegs splits abs below base; false when abs is not base or below it.
func relSegs(base, abs string) ([]string, bool) {
	var rel string
	switch {
	case abs == base:
		return nil, true
	case base == "/":
		rel = abs[1:]
	case strings.HasPrefix(abs, base+"/"):
		rel = abs[len(base)+1:]
	default:
		return nil, false
	}
	return strings.Split(rel, "/"), true
}

// under reports whether abs is dir or below it.
func under(abs, dir string) bool {
	return abs == dir || dir == "/" || strings.HasPrefix(abs, dir+"/")
}

// matchFile reports whether the file at abs (canonical) is one the
// pattern anchored at base names: the path, or a directory it lies in,
// matches.
func (pp pathPattern) matchFile(abs, base string, anyMode bool) bool {
	segs, ok := relSegs(base, abs)
	if !ok {
		return false
	}
	if pp.anyDepth {
		for i, s := range segs {
			if segMatch(pp.segs[0], s) && (i < len(segs)-1 || !pp.dirOnly) {
				return true
			}
		}
		return false
	}
	if anyMode && pp.dirAnyDepth {
		for i := 0; i < len(segs)-1; i++ {
			if segMatch(pp.segs[0], segs[i]) {
				return true
			}
		}
	}
	anc, self, _ := walk(pp.segs, segs, false)
	return anc || (self && !pp.dirOnly)
}

// matchDir is matchFile for a directory searched (Grep, Glob, LS): in an
// allow rule everything in it must match; in a deny or ask rule anything
// that may lie in it.
func (pp pathPattern) matchDir(abs, base string, anyMode bool) bool {
	segs, ok := relSegs(base, abs)
	switch {
	case anyMode && !ok:
		return under(base, abs) // the anchor lies inside what is searched
	case anyMode && (pp.anyDepth || pp.dirAnyDepth):
		return true // a name at any depth may lie inside
	case anyMode:
		anc, self, desc := walk(pp.segs, segs, false)
		return anc || self || desc
	case !ok:
		return false
	}
	if pp.anyDepth {
		for _, s := range segs {
			if segMatch(pp.segs[0], s) {
				return true
			}
		}
		return false
	}
	anc, self, _ := walk(pp.segs, segs, true)
	return anc || self
}

// walk matches path segments against pattern segments ("**" matches any
// number of segments; a trailing one at least one unless trailingEmpty).
// anc: a proper prefix of segs matches (a directory the path lies in,
// or the anchor itself); self: all of segs match; desc: some longer path
// below segs may still match.
func walk(pat, segs []string, trailingEmpty bool) (anc, self, desc bool) {
	m := len(pat)
	closure := func(cur []bool) {
		for j := 0; j < m; j++ {
			if cur[j] && pat[j] == "**" && (j < m-1 || trailingEmpty) {
				cur[j+1] = true
			}
		}
	}
	cur := make([]bool, m+1)
	cur[0] = true
	closure(cur)
	for _, s := range segs {
		if cur[m] {
			anc = true
		}
		next := make([]bool, m+1)
		live := false
		for j := 0; j < m; j++ {
			if !cur[j] {
				continue
			}
			if pat[j] == "**" {
				next[j], next[j+1], live = true, true, true
			} else if segMatch(pat[j], s) {
				next[j+1], live = true, true
			}
		}
		closure(next)
		cur = next
		if !live {
			return anc, false, false
		}
	}
	self = cur[m]
	for _, c := range cur {
		desc = desc || c
	}
	return anc, self, desc
}

// segMatch matches one path segment against one glob segment: * any run
// of characters, ? one, [a-z] and [!a-z] classes, \ escapes.
func segMatch(pat, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, -1
	for sx < len(s) {
		if px < len(pat) {
			switch c := pat[px]; c {
			case '*':
				starP, starS = px, sx
				px++
				continue
			case '?':
				_, size := utf8.DecodeRuneInString(s[sx:])
				px, sx = px+1, sx+size
				continue
			case '[':
				if ok, width, n := matchClass(pat[px:], s[sx:]); ok {
					px, sx = px+n, sx+width
					continue
				}
			case '\\':
				if px+1 < len(pat) && pat[px+1] == s[sx] {
					px, sx = px+2, sx+1
					continue
				}
			default:
				if c == s[sx] {
					px, sx = px+1, sx+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		px, sx = starP+1, starS
	}
	for px < len(pat) && pat[px] == '*' {
		px++
	}
	return px == len(pat)
}

// matchClass matches the first rune of s against the class that starts
// pat ("[…]"). n is the class's length in pat, 0 when it is unclosed.
func matchClass(pat, s string) (ok bool, width, n int) {
	i := 1
	negate := i < len(pat) && (pat[i] == '!' || pat[i] == '^')
	if negate {
		i++
	}
	r, width := utf8.DecodeRuneInString(s)
	in := false
	for first := true; i < len(pat); first = false {
		if pat[i] == ']' && !first {
			return in != negate && len(s) > 0, width, i + 1
		}
		lo, size := utf8.DecodeRuneInString(pat[i:])
		if pat[i] == '\\' && i+1 < len(pat) {
			lo, size = utf8.DecodeRuneInString(pat[i+1:])
			size++
		}
		i += size
		hi := lo
		if i+1 < len(pat) && pat[i] == '-' && pat[i+1] != ']' {
			h, hsize := utf8.DecodeRuneInString(pat[i+1:])
			hi, i = h, i+1+hsize
		}
		in = in || (lo <= r && r <= hi)
	}
	return false, 0, 0
}

// canonicalPath makes p absolute and lexically clean: ~ is the home,
// relative paths are below cwd, and . .. and doubled slashes are
// resolved as text. False when that cannot be known (no home or working
// directory given, ~user, too long); symlinks are the caller's (Request).
func canonicalPath(p, cwd, home string) (string, bool) {
	switch {
	case p == "" || len(p) > MaxPathBytes || strings.ContainsRune(p, 0):
		return "", false
	case p == "~" || strings.HasPrefix(p, "~/"):
		if !path.IsAbs(home) {
			return "", false
		}
		p = home + p[1:]
	case strings.HasPrefix(p, "~"):
		return "", false
	case !path.IsAbs(p):
		if !path.IsAbs(cwd) {
			return "", false
		}
		p = cwd + "/" + p
	}
	p = path.Clean(p)
	return p, strings.Count(p, "/") <= maxPathSegs
}

// boundedPath reports whether a real path the caller gave is within the
// bounds.
func boundedPath(p string) bool {
	return path.IsAbs(p) && len(p) <= MaxPathBytes && strings.Count(p, "/") <= maxPathSegs
}
