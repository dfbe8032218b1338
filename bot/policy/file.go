package policy

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Bounds on a policy file.
const (
	// MaxFileBytes is the largest policy file read.
	MaxFileBytes = 1 << 20
	maxRules     = 1000
	maxMatchers  = 200
	maxCount     = 50
	maxWait      = 30 * 24 * time.Hour
	maxMessage   = 2000
)

// Problem is one thing wrong (or suspicious) in a policy file, at a line.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Errors are every problem that keeps a policy file from being used, in
// line order, one "file:line: what is wrong" a line.
type Errors []Problem

func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, p := range e {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Options are what Parse checks the file against beyond itself.
type Options struct {
	// Approvers is APPROVERS (user and user group ids, or "*"), whom an
	// ask rule without approvers asks: its count is checked against them.
	// Nil when unknown (then only rules that name approvers are checked).
	Approvers []string
}

// Parse reads a policy file. On any problem it returns every one found
// as Errors, and no policy.
func Parse(file string, data []byte, opts Options) (*Policy, error) {
	ps := &parser{file: file, opts: opts, names: map[string]int{}}
	pol := &Policy{file: file, digest: sha256.Sum256(data)}
	if len(data) > MaxFileBytes {
		return nil, Errors{{file, 1, fmt.Sprintf("larger than %d bytes", MaxFileBytes)}}
	}
	root, ok := ps.document(data)
	if !ok {
		return nil, ps.errs
	}
	fs := ps.fields(root, "the policy", "rules", "modes")
	if f, ok := fs["rules"]; ok {
		pol.rules = ps.rules(f.val)
	} else if fs != nil {
		ps.errf(root, "no rules: a policy file lists its rules under `rules:` (an empty list asks APPROVERS for everything)")
	}
	if f, ok := fs["modes"]; ok {
		pol.bypass = ps.modes(f.val)
	}
	if len(ps.errs) > 0 {
		slices.SortStableFunc(ps.errs, func(a, b Problem) int { return a.Line - b.Line })
		return nil, ps.errs
	}
	pol.warnings = slices.Concat(unknownTools(file, pol.rules), shadows(file, pol.rules), runnerWarnings(file, pol.rules), reorderings(file, pol.rules))
	slices.SortStableFunc(pol.warnings, func(a, b Problem) int { return a.Line - b.Line })
	return pol, nil
}

type parser struct {
	file  string
	opts  Options
	errs  Errors
	names map[string]int // rule name → line
}

func (ps *parser) errf(n *yaml.Node, format string, args ...any) {
	ps.errs = append(ps.errs, Problem{ps.file, n.Line, fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document decodes the one YAML document of the file, refusing aliases
// (a value written once and expanded many times).
func (ps *parser) document(data []byte) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		line, msg := 1, err.Error()
		if errors.Is(err, io.EOF) {
			msg = "the file is empty: a policy lists its rules under `rules:`"
		} else if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = "not YAML: " + m[2]
		}
		ps.errs = append(ps.errs, Problem{ps.file, line, msg})
		return nil, false
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		ps.errs = append(ps.errs, Problem{ps.file, max(next.Line, 1), "a second YAML document (---): a policy file holds one"})
		return nil, false
	}
	root := doc.Content[0]
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode {
			ps.errf(n, "an alias (*%s): write the value out where it is used", n.Value)
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	return root, len(ps.errs) == 0
}

// field is one key of a mapping and its value.
type field struct{ key, val *yaml.Node }

// fields reads a mapping whose keys must be among allowed.
func (ps *parser) fields(n *yaml.Node, what string, allowed ...string) map[string]field {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return map[string]field{}
	}
	if n.Kind != yaml.MappingNode {
		ps.errf(n, "%s: want keys and values, got %s", what, describe(n))
		return nil
	}
	out := map[string]field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch prev, dup := out[k.Value]; {
		case k.Kind != yaml.ScalarNode:
			ps.errf(k, "%s: a key must be a plain word", what)
		case dup:
			ps.errf(k, "%s: %s is given twice (also at line %d)", what, k.Value, prev.key.Line)
		case !slices.Contains(allowed, k.Value):
			if len(allowed) == 0 {
				ps.errf(k, "%s takes no settings (%s)", what, k.Value)
			} else {
				ps.errf(k, "%s: unknown key %q (want %s)", what, k.Value, strings.Join(allowed, ", "))
			}
		default:
			out[k.Value] = field{k, v}
		}
	}
	return out
}

// describe names what a node holds, for errors.
func describe(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "keys and values"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Tag == "!!null":
		return "nothing"
	case n.Tag == "!!str":
		return strconv.Quote(n.Value)
	}
	return fmt.Sprintf("%s (%s)", n.Value, strings.TrimPrefix(n.Tag, "!!"))
}

// str reads a text scalar.
func (ps *parser) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		ps.errf(n, "%s: want text, got %s (quote it if it is text)", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// item is one text of a list and its line.
type item struct {
	text string
	node *yaml.Node
}

// strs reads a list of texts, each checked by valid (which says what is
// wrong, or "").
func (ps *parser) strs(n *yaml.Node, what string, valid func(string) string) []item {
	if n.Kind != yaml.SequenceNode {
		ps.errf(n, "%s: want a list, got %s", what, describe(n))
		return nil
	}
	var out []item
	for _, c := range n.Content {
		s, ok := ps.str(c, what)
		if !ok {
			continue
		}
		if msg := valid(s); msg != "" {
			ps.errf(c, "%s: %q %s", what, s, msg)
			continue
		}
		if slices.ContainsFunc(out, func(i item) bool { return i.text == s }) {
			ps.errf(c, "%s: %q is listed twice", what, s)
			continue
		}
		out = append(out, item{s, c})
	}
	return out
}

func values(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.text
	}
	return out
}

// modes reads who may choose a permission mode from Slack.
func (ps *parser) modes(n *yaml.Node) []string {
	fs := ps.fields(n, "modes", "bypassPermissions")
	f, ok := fs["bypassPermissions"]
	if !ok {
		return nil
	}
	return values(ps.strs(f.val, "modes: bypassPermissions", func(s string) string {
		if !isPerson(s) {
			return "is not a Slack user (U…, W…) or user group (S…) id; name the people who may skip every prompt"
		}
		return ""
	}))
}

// duration reads a positive Go duration such as 10m or 1h30m.
func (ps *parser) duration(n *yaml.Node, what string) time.Duration {
	s, ok := ps.str(n, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxWait {
		ps.errf(n, "%s: %q is not a duration between 1s and 720h (like 10m or 1h30m)", what, s)
		return 0
	}
	return d
}
