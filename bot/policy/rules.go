package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// rules reads the rules list.
func (ps *parser) rules(n *yaml.Node) []*Rule {
	if n.Kind != yaml.SequenceNode {
		ps.errf(n, "rules: want a list of rules (- name: …), got %s", describe(n))
		return nil
	}
	if len(n.Content) > maxRules {
		ps.errf(n, "rules: more than %d rules", maxRules)
		return nil
	}
	var out []*Rule
	for _, c := range n.Content {
		if r := ps.rule(c); r != nil {
			out = append(out, r)
		}
	}
	return out
}

var ruleKeys = []string{"name", "match", "channels", "repos", "tokens", "allow", "deny", "ask"}

// rule reads one rule.
func (ps *parser) rule(n *yaml.Node) *Rule {
	r := &Rule{Line: n.Line, Ask: AskSpec{Count: 1}}
	fs := ps.fields(n, "rule", ruleKeys...)
	if fs == nil {
		return nil
	}
	ps.ruleName(r, n, fs)
	what := fmt.Sprintf("rule %q", r.Name)
	if f, ok := fs["match"]; ok {
		ps.match(r, f.val, what)
	} else if !hasPreset(fs) {
		ps.errf(n, "%s: no match: list what it applies to, like match: [\"Bash(npm test:*)\"]", what)
	}
	ps.scope(r, fs, what)
	var actions []field
	for _, k := range []string{"allow", "deny", "ask"} {
		if f, ok := fs[k]; ok {
			actions = append(actions, f)
		}
	}
	switch len(actions) {
	case 0:
		ps.errf(n, "%s: say what it does: allow: {}, deny: {message: …} or ask: {…}", what)
		return r
	case 1:
	default:
		ps.errf(actions[1].key, "%s: one of allow, deny or ask, not both %s and %s", what, actions[0].key.Value, actions[1].key.Value)
		return r
	}
	switch a := actions[0]; a.key.Value {
	case "allow":
		r.Action = Allow
		if f, ok := ps.fields(a.val, what+": allow", "preset")["preset"]; ok {
			ps.preset(r, f.val, what)
		}
		if i := slices.IndexFunc(r.Match, func(m Matcher) bool { return m.appliesTo("AskUserQuestion") }); i >= 0 {
			ps.errf(a.key, "%s: an allow rule cannot answer Claude's questions (%s): only a person can", what, r.Match[i].raw)
		}
	case "deny":
		r.Action = Deny
		r.Message = fmt.Sprintf("Denied by slackgate's policy (rule %q).", r.Name)
		if f, ok := ps.fields(a.val, what+": deny", "message")["message"]; ok {
			if s, ok := ps.str(f.val, what+": message"); ok && (strings.TrimSpace(s) == "" || len(s) > maxMessage) {
				ps.errf(f.val, "%s: message: empty, or longer than %d bytes", what, maxMessage)
			} else if ok {
				r.Message = s
			}
		}
	case "ask":
		r.Action = Ask
		ps.ask(r, a.val, what)
	}
	return r
}

// hasPreset reports whether the rule's allow names a preset.
func hasPreset(fs map[string]field) bool {
	f, ok := fs["allow"]
	if !ok || f.val.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(f.val.Content); i += 2 {
		if f.val.Content[i].Value == "preset" {
			return true
		}
	}
	return false
}

// preset adds a preset's entries to an allow rule's.
func (ps *parser) preset(r *Rule, n *yaml.Node, what string) {
	name, ok := ps.str(n, what+": preset")
	if !ok {
		return
	}
	entries, ok := presets[name]
	if !ok {
		ps.errf(n, "%s: no preset is called %q (there are: %s)", what, name, presetNames())
		return
	}
	for _, e := range entries {
		m, err := parseMatcher(e)
		if err != nil {
			panic("policy: preset " + name + ": " + err.Error()) // a preset is ours: TestPresetsParse
		}
		m.line, m.preset = n.Line, name
		r.Match = append(r.Match, m)
	}
}

// ruleName reads the rule's unique name.
func (ps *parser) ruleName(r *Rule, n *yaml.Node, fs map[string]field) {
	f, ok := fs["name"]
	if !ok {
		r.Name = "#" + strconv.Itoa(n.Line)
		ps.errf(n, "a rule without a name: give it one (name: reads)")
		return
	}
	r.Name = "#" + strconv.Itoa(n.Line)
	name, ok := ps.str(f.val, "rule name")
	if !ok {
		return
	}
	r.Name = name
	switch line, dup := ps.names[name]; {
	case !nameOf(name, "-_."):
		ps.errf(f.val, "rule name %q: use 1 to 64 letters, digits, -, _ and .", name)
	case dup:
		ps.errf(f.val, "rule name %q is also used at line %d", name, line)
	default:
		ps.names[name] = f.val.Line
	}
}

// match reads the rule's match entries.
func (ps *parser) match(r *Rule, n *yaml.Node, what string) {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		ps.errf(n, "%s: match: want a list of tools and rules, got %s", what, describe(n))
		return
	}
	if len(n.Content) > maxMatchers {
		ps.errf(n, "%s: match: more than %d entries", what, maxMatchers)
		return
	}
	for _, c := range n.Content {
		s, ok := ps.str(c, what+": match")
		if !ok {
			continue
		}
		m, err := parseMatcher(s)
		if err != nil {
			ps.errf(c, "%s: match %q: %v", what, s, err)
			continue
		}
		m.line = c.Line
		r.Match = append(r.Match, m)
	}
}

// scope reads channels, repos and tokens.
func (ps *parser) scope(r *Rule, fs map[string]field, what string) {
	if f, ok := fs["channels"]; ok {
		r.Channels = values(ps.strs(f.val, what+": channels", func(s string) string {
			if !isScopeChannel(s) {
				return "is not a Slack channel id (C…, G…, or D… for a direct message)"
			}
			return ""
		}))
	}
	if f, ok := fs["repos"]; ok {
		for _, it := range ps.strs(f.val, what+": repos", func(s string) string {
			if !strings.HasPrefix(s, "/") {
				return "is not an absolute path: repos are working directories like /srv/payments/**"
			}
			return ""
		}) {
			pp, err := parsePathPattern(it.text)
			if err != nil {
				ps.errf(it.node, "%s: repos %q: %v", what, it.text, err)
				continue
			}
			r.Repos, r.repos = append(r.Repos, it.text), append(r.repos, pp)
		}
	}
	if f, ok := fs["tokens"]; ok {
		r.Tokens = values(ps.strs(f.val, what+": tokens", func(s string) string {
			if !nameOf(s, "-_") {
				return "is not an API_TOKENS name (letters, digits, - and _)"
			}
			return ""
		}))
	}
	for _, k := range []string{"channels", "repos", "tokens"} {
		if f, ok := fs[k]; ok && f.val.Kind == yaml.SequenceNode && len(f.val.Content) == 0 {
			ps.errf(f.val, "%s: %s: an empty list takes nothing; leave the key out for any", what, k)
		}
	}
}

var askKeys = []string{"approvers", "count", "not_self", "notify", "remind_after", "escalate_after", "escalate_to"}

// ask reads an ask rule's settings.
func (ps *parser) ask(r *Rule, n *yaml.Node, what string) {
	fs := ps.fields(n, what+": ask", askKeys...)
	a := &r.Ask
	people := func(s string) string {
		if s != "*" && !isPerson(s) {
			return "is not a Slack user (U…, W…) or user group (S…) id"
		}
		return ""
	}
	if f, ok := fs["approvers"]; ok {
		a.Approvers = values(ps.strs(f.val, what+": approvers", people))
		if len(a.Approvers) == 0 && f.val.Kind == yaml.SequenceNode {
			ps.errf(f.val, "%s: approvers: an empty list; leave it out to ask APPROVERS", what)
		} else if slices.Contains(a.Approvers, "*") && len(a.Approvers) > 1 {
			ps.errf(f.val, "%s: approvers: * (anyone) and ids together: choose one", what)
		}
	}
	if f, ok := fs["count"]; ok {
		if f.val.Kind != yaml.ScalarNode || f.val.Tag != "!!int" {
			ps.errf(f.val, "%s: count: want a whole number, got %s", what, describe(f.val))
		} else if c, err := strconv.Atoi(f.val.Value); err != nil || c < 1 || c > maxCount {
			ps.errf(f.val, "%s: count: %s is not between 1 and %d", what, f.val.Value, maxCount)
		} else {
			a.Count = c
		}
	}
	if f, ok := fs["not_self"]; ok {
		if f.val.Kind != yaml.ScalarNode || f.val.Tag != "!!bool" {
			ps.errf(f.val, "%s: not_self: want true or false, got %s", what, describe(f.val))
		} else {
			a.NotSelf = f.val.Value == "true"
		}
	}
	ps.followUp(a, fs, what, people)
	if f, ok := fs["count"]; ok {
		ps.checkCount(f.val, a, what)
	} else if a.NotSelf {
		ps.checkCount(n, a, what)
	}
}

// followUp reads notify, remind_after, escalate_after and escalate_to.
func (ps *parser) followUp(a *AskSpec, fs map[string]field, what string, people func(string) string) {
	if f, ok := fs["notify"]; ok {
		a.Notify = values(ps.strs(f.val, what+": notify", func(s string) string {
			if !isNotifyTarget(s) {
				return "is not a Slack channel (C…, G…) or user (U…, W…) id"
			}
			return ""
		}))
	}
	if f, ok := fs["remind_after"]; ok {
		a.RemindAfter = ps.duration(f.val, what+": remind_after")
	}
	after, afterOK := fs["escalate_after"]
	to, toOK := fs["escalate_to"]
	if afterOK {
		a.EscalateAfter = ps.duration(after.val, what+": escalate_after")
	}
	if toOK {
		a.EscalateTo = values(ps.strs(to.val, what+": escalate_to", func(s string) string {
			if s == "*" {
				return "is not a Slack user (U…, W…) or user group (S…) id"
			}
			return people(s)
		}))
	}
	switch {
	case afterOK && !toOK:
		ps.errf(after.key, "%s: escalate_after without escalate_to: say whom to escalate to", what)
	case toOK && !afterOK:
		ps.errf(to.key, "%s: escalate_to without escalate_after: say when", what)
	}
}

// checkCount stops a count the approvers cannot give. Users count one
// each; a user group's size is known only in Slack, so a list with a
// group (or "*") is not limited here: the bot checks when it asks.
func (ps *parser) checkCount(n *yaml.Node, a *AskSpec, what string) {
	approvers, from := a.Approvers, "approvers"
	if approvers == nil {
		if ps.opts.Approvers == nil {
			return
		}
		approvers, from = ps.opts.Approvers, "APPROVERS"
	}
	if slices.ContainsFunc(approvers, func(id string) bool { return id == "*" || isGroup(id) }) {
		return
	}
	capacity := len(approvers)
	switch {
	case a.NotSelf && a.Count > capacity-1:
		ps.errf(n, "%s: count %d with not_self: %s names %s and the session's starter may be one of them, which leaves %s",
			what, a.Count, from, people(capacity), people(capacity-1))
	case a.Count > capacity:
		ps.errf(n, "%s: count %d, but %s names only %s", what, a.Count, from, people(capacity))
	}
}

func people(n int) string {
	switch n {
	case 0:
		return "nobody"
	case 1:
		return "1 person"
	}
	return strconv.Itoa(n) + " people"
}
