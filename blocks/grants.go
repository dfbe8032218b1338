package blocks

import (
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Grants: the card's "Approve and allow…" menu offers, beside each rule
// set Claude suggests for the session (Claude Code's own), the same rules
// kept by slackgate: for 1 hour in this session, or in this repository
// until forgotten (store.Grant). Their options carry the choice in the
// value's first field ("<choice>|<suggestion index>|<request id>"); 0 is
// Claude Code's session rule.

// GrantHour is how long a "for 1 hour in this session" grant applies.
const GrantHour = time.Hour

// Choices of the menu, in the value's first field.
const (
	choiceCLI  = 0 // the CLI's own session rule (Decision.Permissions)
	choiceHour = 1 // a grant for 1 hour in this session
	choiceRepo = 2 // a grant in this repository
)

// grantable reports whether suggestion s may become a grant: rules that
// allow, each naming its tool.
func grantable(s store.Suggestion) bool {
	if s.Type != "addRules" || (s.Behavior != "" && s.Behavior != "allow") || len(s.Rules) == 0 {
		return false
	}
	for _, r := range s.Rules {
		if strings.TrimSpace(r.ToolName) == "" {
			return false
		}
	}
	return true
}

// grantOptions are suggestion i's grant options, labelled with label.
func grantOptions(i int, id, label string) []*slack.OptionBlockObject {
	return []*slack.OptionBlockObject{
		slack.NewOptionBlockObject(value(choiceHour, i, id), plainInput("1 hour in this session: "+label, MaxOptionText),
			plainInput("slackgate allows it here without a card for an hour", MaxOptionText)),
		slack.NewOptionBlockObject(value(choiceRepo, i, id), plainInput("This repository: "+label, MaxOptionText),
			plainInput("slackgate allows it in this directory until forgotten", MaxOptionText)),
	}
}

// GrantChoice is what a pick on the menu asks slackgate to keep: the
// scope (GrantSession for the hour, GrantRepo) and the rules, each in
// Claude Code's permission-rule syntax. ok false when the pick is not a
// grant (Claude Code's own session rule, or another action).
func GrantChoice(a Action, r store.Request) (kind store.GrantScopeKind, rules []string, ok bool) {
	if a.Kind != ActionAlways || a.Question == choiceCLI || !alwaysOffered(r) || a.Index >= len(r.Suggestions) {
		return "", nil, false
	}
	s := r.Suggestions[a.Index]
	if !grantable(s) {
		return "", nil, false
	}
	for _, rule := range s.Rules {
		rules = append(rules, ruleString(rule))
	}
	switch a.Question {
	case choiceHour:
		return store.GrantSession, rules, true
	case choiceRepo:
		return store.GrantRepo, rules, true
	}
	return "", nil, false
}

// GrantWords says what a grant allows where, for people.
func GrantWords(g store.Grant) string {
	var rules []string
	for _, r := range g.Rules {
		rules = append(rules, inlineCode(r, 200))
	}
	where := "in " + inlineCode(g.Scope.Value, 300)
	if g.Scope.Kind == store.GrantSession {
		where = "in session " + inlineCode(short(g.Scope.Value), 40)
	}
	if g.Scope.Token != "" {
		where += " (API token " + inlineCode(g.Scope.Token, 80) + ")"
	}
	s := strings.Join(rules, ", ") + " " + where + ", added by <@" + g.By + ">"
	if !g.Expires.IsZero() {
		s += ", until " + dateToken(g.Expires)
	}
	return s
}

// AllowedByGrant is the one thread line that stands for the card of a
// request a grant allowed.
func AllowedByGrant(r store.Request, g store.Grant) Message {
	what := inlineCode(cut(oneLine(headline(r)), headRunes), headRunes+10)
	text := "✓ " + what + " allowed by a rule <@" + g.By + "> added (" + GrantWords(g) + ")"
	return Message{Text: cut("Allowed by a rule <@"+g.By+"> added", 300), Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(cutSafe(text, MaxText)))}}
}

// GrantAdded tells the approver who just added g what happens from now on.
func GrantAdded(g store.Grant) string {
	return "Approved. slackgate now allows " + GrantWords(g) + " without a card. The App Home lists it, with Forget."
}

// maxHomeGrants bounds the grants the Home view lists (see maxHomeAnswers).
const maxHomeGrants = 20

// homeGrants is the Home view's "Rules you allowed": each live grant with
// what it allows where, who added it and until when, and Forget for
// approvers.
func homeGrants(grants []store.Grant, canForget bool) []slack.Block {
	bs := []slack.Block{slack.NewHeaderBlock(plain("Rules you allowed")), slack.NewContextBlock("", mrkdwn(
		"Added with *Approve and allow…* on a card: slackgate allows these without a card, where no policy rule decides."))}
	if len(grants) == 0 {
		bs = append(bs, section("_No rules are allowed._"))
	}
	for i, g := range grants {
		if i == maxHomeGrants {
			bs = append(bs, slack.NewContextBlock("", mrkdwn(strconv.Itoa(len(grants)-i)+" more; `slackgate rules list` shows them all.")))
			break
		}
		var accessory *slack.Accessory
		if canForget {
			b := button(string(ActionForgetGrant), "Forget", value(0, 0, g.ID)).WithStyle(slack.StyleDanger).
				WithConfirm(confirm("Forget this rule?", "Requests it allows get a card again.", "Forget", "Keep"))
			accessory = slack.NewAccessory(b)
		}
		text := GrantWords(g) + " · added " + dateToken(g.At)
		bs = append(bs, slack.NewSectionBlock(mrkdwn(cutSafe(text, MaxText)), nil, accessory, slack.SectionBlockOptionBlockID(blockGrantPrefix+g.ID)))
	}
	return bs
}

// blockGrantPrefix starts the block id of a grant in the Home view.
const blockGrantPrefix = Prefix + "grant:"
