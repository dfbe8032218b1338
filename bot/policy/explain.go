package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PartNote says what the policy makes of one simple command of a Bash
// request, for `policy explain`.
type PartNote struct {
	// Part is the command as allow rules see it.
	Part string
	// Rule names the first rule one of whose entries takes the part (the
	// entry in Matcher); "" when none does, and then Why says why.
	Rule, Matcher, Why string
}

// Parts explains a Bash request part by part: which rule takes each, or
// why none can, and what of the whole command the reader did not model
// (whole, "" when it modeled everything). Other requests have no parts.
func (p *Policy) Parts(req Request, now time.Time) (notes []PartNote, whole string) {
	_ = now
	var in struct {
		Command *string `json:"command"`
	}
	if p == nil || req.Tool != "Bash" || json.Unmarshal(req.Input, &in) != nil || in.Command == nil {
		return nil, ""
	}
	sh := parseShell(*in.Command)
	f := newFacts(req)
	for i, t := range sh.texts {
		n := PartNote{Part: t.allow}
		for _, r := range p.rules {
			if !r.takes(f) {
				continue
			}
			if m := r.partMatcher(t); m != "" {
				n.Rule, n.Matcher = r.Name, m
				break
			}
		}
		if n.Rule == "" {
			n.Why = partWhy(sh.parts[i], t, !sh.ok)
		}
		notes = append(notes, n)
	}
	return notes, sh.why
}

// partMatcher is the entry of r that takes the part, as Evaluate would:
// in an allow rule, a Bash entry matching its allow text and spelling
// its risky options; in a deny or ask rule, any form of it.
func (r *Rule) partMatcher(t texts) string {
	for _, m := range r.Match {
		if !m.appliesTo("Bash") {
			continue
		}
		if m.whole() {
			return m.raw
		}
		if m.kind != kindBash {
			continue
		}
		if r.Action == Allow {
			if t.allowable && m.bash.match(t.allow) && m.bash.spells(t.allow, t.risky) {
				return m.raw
			}
			continue
		}
		if t.dynamic || slices.ContainsFunc(t.deny, m.bash.match) {
			return m.raw
		}
	}
	return ""
}

// partWhy says why no rule takes a part.
func partWhy(pt part, t texts, unmodeled bool) string {
	switch {
	case unmodeled:
		return "no allow rule matches a command the reader does not model, and no deny or ask entry matches this part"
	case pt.dynamic:
		return "its program is known only when it runs, so no allow rule matches it"
	case pt.writes:
		return "it redirects output to a file, so no allow rule matches it"
	case pt.opaque:
		return "a wrapper whose options are not understood, so no allow rule matches it"
	case len(t.risky) > 0:
		r := t.risky[0]
		return fmt.Sprintf("%s %s: an allow rule must spell it", t.allow[r.start:r.end], r.why)
	case strings.Contains(t.allow, "="):
		return "no entry matches it as written (a leading VAR=value stays in the text: only a rule naming it allows it)"
	}
	return "no entry matches it"
}
