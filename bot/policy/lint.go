package policy

import (
	"fmt"
	"slices"
	"strings"
)

// shadows reports each rule that an earlier one shadows: every request it
// would match, the earlier one matches first, so it never decides. It is
// conservative, never reporting a rule that can decide. It finds a
// shadow when the earlier rule's scope takes everything the later one's
// does and each of the later rule's entries is covered by one entry of
// the earlier rule: the same tools and the same or a wider pattern (a
// bare tool; a prefix rule over the commands, prefixes and wildcard
// heads that extend it by a word; a literal DIR/** over paths below DIR;
// *.HOST over hosts below HOST; an MCP server over its tools). It does
// not find a rule covered only by several earlier rules together, by
// wildcards or globs wider than those forms, or when an allow rule comes
// first and the later rule denies or asks (an allow rule needs every part
// of a compound command, a deny rule only one, so a deny may still match
// what an allow did not).
func shadows(file string, rules []*Rule) []Problem {
	var out []Problem
	for j, b := range rules {
		for _, a := range rules[:j] {
			if shadowedBy(b, a) {
				out = append(out, Problem{file, b.Line, fmt.Sprintf("rule %q is shadowed by rule %q (line %d): every request it matches, %q matches first, so it never decides",
					b.Name, a.Name, a.Line, a.Name)})
				break
			}
		}
	}
	return out
}

// shadowedBy reports whether a, coming first, takes every request b does.
func shadowedBy(b, a *Rule) bool {
	if !within(b.Channels, a.Channels) || !within(b.Tokens, a.Tokens) || !reposWithin(b, a) {
		return false
	}
	aAll, bAll := a.Action == Allow, b.Action == Allow
	for _, mb := range b.Match {
		if !slices.ContainsFunc(a.Match, func(ma Matcher) bool { return covers(ma, mb, aAll, bAll) }) {
			return false
		}
	}
	return len(b.Match) > 0
}

// within reports whether a scope list a (empty: any) takes all b takes.
func within(b, a []string) bool {
	if len(a) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			return false
		}
	}
	return true
}

// reposWithin is within for repos. A request whose working directory is
// unknown (or not resolved) meets an allow rule's repos as outside them
// and a deny or ask rule's as inside.
func reposWithin(b, a *Rule) bool {
	switch {
	case len(a.repos) == 0:
		return true
	case len(b.repos) == 0 || (a.Action == Allow && b.Action != Allow):
		return false
	}
	for _, gb := range b.repos {
		if !slices.ContainsFunc(a.repos, func(ga pathPattern) bool { return pathCovers(ga, gb, true, true) }) {
			return false
		}
	}
	return true
}

// covers reports whether entry ma (of a rule with aAll: an allow rule)
// matches every request entry mb does.
func covers(ma, mb Matcher, aAll, bAll bool) bool {
	if mb.kind == kindMCP || ma.kind == kindMCP {
		return ma.kind == kindMCP && mb.kind == kindMCP && ma.mcpServer == mb.mcpServer && (ma.mcpTool == "" || ma.mcpTool == mb.mcpTool)
	}
	for _, t := range mb.tools() {
		if !slices.Contains(ma.tools(), t) {
			return false
		}
	}
	switch {
	case ma.whole():
		return true
	case mb.whole() || ma.kind != mb.kind || (aAll && !bAll):
		return false
	}
	switch mb.kind {
	case kindBash:
		return bashCovers(ma.bash, mb.bash)
	case kindPath:
		return pathCovers(ma.path, mb.path, bAll, false)
	case kindDomain:
		a, b := ma.domain, mb.domain
		return (a.sub && strings.HasSuffix(b.host, "."+a.host)) || a == b
	}
	return false
}

// bashCovers reports whether every command b matches, a matches.
func bashCovers(a, b bashPattern) bool {
	switch a.kind {
	case bashExact:
		return b.kind == bashExact && b.text == a.text
	case bashWild:
		return b.kind == bashWild && slices.Equal(a.chunks, b.chunks) && (a.tail || !b.tail)
	}
	head := b.text
	if b.kind == bashWild {
		head = b.chunks[0]
		return len(head) > len(a.text) && a.match(head[:len(a.text)+1]) // a word boundary follows a's prefix
	}
	return a.match(head)
}

// pathCovers reports whether every path b matches, a matches: the same
// pattern, or a literal DIR/** and b below DIR (inside: b may name DIR
// itself, as repos do). A deny or ask rule's NAME/** also matches NAME at
// any depth, so only the same pattern covers it (bAll false).
func pathCovers(a, b pathPattern, bAll, inside bool) bool {
	if a.anchor != b.anchor {
		return false
	}
	if slices.Equal(a.segs, b.segs) && a.dirOnly == b.dirOnly && a.anyDepth == b.anyDepth && a.dirAnyDepth == b.dirAnyDepth {
		return true
	}
	n := len(a.segs)
	if a.anyDepth || a.dirOnly || b.anyDepth || (b.dirAnyDepth && !bAll) || n < 2 || a.segs[n-1] != "**" {
		return false
	}
	dir := a.segs[:n-1]
	if len(b.segs) < len(dir) || (len(b.segs) == len(dir) && !inside) {
		return false
	}
	for i, s := range dir {
		if strings.ContainsAny(s, `*?[\`) || b.segs[i] != s {
			return false
		}
	}
	return true
}

// unknownTools warns of entries naming a tool no Claude Code has.
func unknownTools(file string, rules []*Rule) []Problem {
	var out []Problem
	for _, r := range rules {
		for _, m := range r.Match {
			if m.kind != kindMCP && !slices.Contains(knownTools, m.tool) {
				out = append(out, Problem{file, m.line, fmt.Sprintf("rule %q: no Claude Code tool is called %s; the entry matches only a tool of exactly that name", r.Name, m.tool)})
			}
		}
	}
	return out
}
