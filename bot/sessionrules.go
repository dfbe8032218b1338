package bot

import (
	"strings"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// Claude Code's own session rule ("Approve and allow…", the first choice
// for each suggestion) lets what it covers run with no card at all, so
// the team policy never sees those requests. With a policy loaded, a
// suggestion that could let run what a deny or ask rule would stop is not
// offered as a session rule (slackgate's grants, which meet the policy
// first, still are), and a pick of one is refused.

// scopeOf is where s runs, as the rules' channels, repos and tokens see
// it; r, when given, adds the real paths its asker resolved.
func scopeOf(s store.Session, r *store.Request) policy.Scope {
	sc := policy.Scope{Channel: s.Thread.Channel, Cwd: s.WorkDir, Token: apiTokenOf(s)}
	if r != nil {
		sc.Home, sc.Resolved = r.Home, r.Resolved
	}
	return sc
}

// widenedBy returns the deny and ask rules of pol that sug, held by the
// CLI for a session in sc, could stand in front of: an allow rule's
// requests, a mode's (policy.ModeWidens); a rule the CLI adds to deny or
// ask narrows and stands in front of none; anything else (directories,
// removed or replaced rules) could stand in front of every one.
func widenedBy(pol *policy.Policy, sug store.Suggestion, sc policy.Scope) []*policy.Rule {
	if pol == nil {
		return nil
	}
	switch {
	case sug.Type == "addRules" && (sug.Behavior == "deny" || sug.Behavior == "ask"):
		return nil
	case (sug.Type == "addRules" || sug.Type == "replaceRules") && (sug.Behavior == "" || sug.Behavior == "allow"):
		var out []*policy.Rule
		for _, rule := range sug.Rules {
			out = append(out, pol.Widens(rule.String(), sc)...)
		}
		if len(sug.Rules) == 0 {
			return pol.Restricting(sc)
		}
		return out
	case sug.Type == "setMode":
		return pol.ModeWidens(sug.Mode, sc)
	}
	return pol.Restricting(sc)
}

// sessionRuleOffer is what a card for r (of session s) offers as Claude
// Code's session rule under pol, the policy now: nil (everything) without
// one.
func sessionRuleOffer(pol *policy.Policy, r store.Request, s store.Session) func(store.Suggestion) bool {
	if pol == nil {
		return nil
	}
	sc := scopeOf(s, &r)
	return func(sug store.Suggestion) bool { return len(widenedBy(pol, sug, sc)) == 0 }
}

// sessionRuleRefusal says why perms, the session rules of a pick on r's
// card, are not handed to Claude Code under pol, the policy now; "" when
// they may be.
func sessionRuleRefusal(pol *policy.Policy, r store.Request, s store.Session, perms []store.Suggestion) string {
	sc := scopeOf(s, &r)
	var names []string
	for _, p := range perms {
		for _, rule := range widenedBy(pol, p, sc) {
			names = append(names, "*"+rule.Name+"*")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "That rule would let Claude run, without a card, what the team policy's " + strings.Join(names, ", ") +
		" rule stops or asks about, so it is not added. Nothing was changed: approve this once, or pick a slackgate rule."
}
