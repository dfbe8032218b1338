package blocks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Grants: the card's "Approve and allow…" menu offers each rule set
// Claude suggests; its second step (AllowModal) offers, beside Claude
// Code's own rule for the rest of the session, the same rules kept by
// slackgate: for 1 hour in this session, or in this repository until
// forgotten (store.Standing). Its buttons carry the choice in the value's
// first field and the digest of the suggestion they grant beside its
// index ("<choice>|<suggestion index>:<digest>|<request id>"); 0 is
// Claude Code's session rule. A pick counts only while the request still
// holds that suggestion (chosen): what the card showed is what is allowed.

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

// scopes are the choices of "Approve and allow…" that will apply to
// suggestion s on a card of session s rendered with o: Claude Code's rule
// for the session unless o withholds it, and slackgate's grants for a
// rule set that allows, unless none would ever apply (o.NoGrants), the
// repository's only where the session has one.
func scopes(s store.Suggestion, sess store.Session, o CardOptions) []int {
	var out []int
	if o.SessionRule == nil || o.SessionRule(s) {
		out = append(out, choiceCLI)
	}
	if grantable(s) && !o.NoGrants {
		out = append(out, choiceHour)
		if sess.WorkDir != "" {
			out = append(out, choiceRepo)
		}
	}
	return out
}

// AllowModal is "Approve and allow…"'s second step, for the rule set a
// picked on r's card (of session s, rendered with o; at is where it is):
// the rules whole and what they do, what the card does not show,
// then one button for each scope that will apply (scopes), each saying
// in its own words for how long and where. Only this repository's asks
// first, always, as it outlives the session. Errors as chosen's, and
// ErrMismatch when no scope is left.
func AllowModal(a Action, r store.Request, s store.Session, at store.MessageRef, o CardOptions) (slack.ModalViewRequest, error) {
	r = normalize(r)
	sug, err := chosen(a, r)
	if err != nil {
		return slack.ModalViewRequest{}, err
	}
	shown := r
	shown.Input = maskJSON(r.Input)
	c := &card{req: shown, real: r, sess: s, opts: o}
	c.render() // what the card hides, for its note
	names, does, ok := suggestionWords(sug)
	offered := scopes(sug, s, o)
	if !ok || len(offered) == 0 {
		return slack.ModalViewRequest{}, fmt.Errorf("%w (nothing to allow for suggestion %d)", ErrMismatch, a.Index)
	}
	rules, _ := suggestionRules(sug)
	var bs []slack.Block
	if note := c.hiddenNote(); note != "" {
		bs = append(bs, section("⚠️ "+Escape(strings.TrimSpace(note))))
	}
	act := toolAct(c.req, s.WorkDir)
	bs = append(bs, section(cutSafe("Approves the request to "+act.verb+" "+act.object+" and allows "+plural(len(names), "rule")+":\n"+
		rules+"\n_"+strings.ToUpper(does[:1])+does[1:]+"._", MaxText)))
	dir := inlineCode(s.WorkDir, 300)
	digest := store.SuggestionDigest(sug)
	for _, choice := range offered {
		var text, label string
		var ask *slack.ConfirmationBlockObject
		switch choice {
		case choiceCLI:
			text, label = "*For the rest of this session.* Claude Code stops asking for these until the session ends; slackgate does not see them.", "This session"
		case choiceHour:
			text, label = "*For 1 hour in this session.* slackgate allows these here without a card for the next hour, where no policy rule decides.", "1 hour"
		case choiceRepo:
			text, label = "*In this repository, until forgotten.* slackgate allows these in "+dir+", in every session, without a card, "+
				"until someone forgets them in the App Home.", "This repository"
			ask = confirm("Allow in this repository?", "slackgate will allow "+strings.Join(names, ", ")+" in "+s.WorkDir+
				" for every session, without a card, until someone forgets them. Approves this request too.", "Allow until forgotten", "Go back")
		}
		b := button(string(ActionAlways), label, choiceValue(choice, a.Index, digest, r.ID))
		if ask == nil {
			b = c.guard(b, "Approve and allow")
		} else {
			ask.Text = plainInput(c.hiddenNote()+ask.Text.Text, MaxConfirmText)
			b = b.WithConfirm(ask)
		}
		bs = append(bs, slack.NewSectionBlock(mrkdwn(cutSafe(text, MaxText)), nil, slack.NewAccessory(b)))
	}
	m := modal(ModalAllow, r, at, "Approve and allow", "", bs...)
	m.Submit = nil
	return m, nil
}

// ModalNote is a modal of slackgate's that now only says text: what a
// click in it did.
func ModalNote(title, text string) slack.ModalViewRequest {
	return slack.ModalViewRequest{Type: slack.VTModal, Title: plain(cut(title, 24)), Close: plain("Close"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{section(cutSafe(text, MaxText))}}}
}

// GrantChoice is what a pick on the menu asks slackgate to keep: the
// scope (GrantSession for the hour, GrantRepo) and the rules, each in
// Claude Code's permission-rule syntax, as the card showed them. ok false
// when the pick is not a grant (Claude Code's own session rule, another
// action, or a choice whose rules are not the card's: DecideAction
// refuses those).
func GrantChoice(a Action, r store.Request) (kind store.ScopeKind, rules []string, ok bool) {
	if a.Kind != ActionAlways || a.Question == choiceCLI {
		return "", nil, false
	}
	s, err := chosen(a, r)
	if err != nil || !grantable(s) {
		return "", nil, false
	}
	for _, rule := range s.Rules {
		rules = append(rules, rule.String())
	}
	switch a.Question {
	case choiceHour:
		return store.ScopeSession, rules, true
	case choiceRepo:
		return store.ScopeRepo, rules, true
	}
	return "", nil, false
}

// chosen is the suggestion an "Approve and allow…" pick names, while r
// offers the menu and still holds, at the pick's index, the suggestion
// the card rendered there (its digest). ErrMismatch for a pick the card
// cannot have offered; ErrChoiceChanged when the suggestion is another.
func chosen(a Action, r store.Request) (store.Suggestion, error) {
	if !alwaysOffered(r) || a.Index >= len(r.Suggestions) {
		return store.Suggestion{}, fmt.Errorf("%w (no suggestion %d to allow)", ErrMismatch, a.Index)
	}
	s := r.Suggestions[a.Index]
	if a.Digest == "" || a.Digest != store.SuggestionDigest(s) {
		return store.Suggestion{}, fmt.Errorf("%w (suggestion %d of %s)", ErrChoiceChanged, a.Index, r.ID)
	}
	return s, nil
}

// GrantWords says what a grant allows where, for people.
func GrantWords(g store.Standing) string {
	s := grantScope(g) + ", added by " + grantAuthor(g)
	if !g.Expires.IsZero() {
		s += ", until " + dateToken(g.Expires)
	}
	return s
}

// grantScope is a grant's rules and where they apply.
func grantScope(g store.Standing) string {
	var rules []string
	for _, r := range g.Rules {
		rules = append(rules, inlineCode(r, 200))
	}
	where := "in " + inlineCode(g.Scope.Value, 300)
	if g.Scope.Kind == store.ScopeSession {
		where = "in session " + inlineCode(short(g.Scope.Value), 40)
	}
	if g.Scope.Token != "" {
		where += " (API token " + inlineCode(g.Scope.Token, 80) + ")"
	}
	return strings.Join(rules, ", ") + " " + where
}

// grantAuthor names who added g without mentioning them: a grant runs
// many times, and each of its lines must not buzz its author's phone.
func grantAuthor(g store.Standing) string {
	if g.ByName != "" {
		return boldText(g.ByName, 80)
	}
	return inlineCode(g.By, 40)
}

// AllowedByGrant is the one thread line that stands for the card of a
// request a grant allowed: a rule's run, not its author's tap.
func AllowedByGrant(r store.Request, g store.Standing) Message {
	what := boldText(r.ToolName, 100)
	if arg := toolArg(r.ToolName, maskJSON(r.Input)); arg != "" {
		what = inlineCode(arg, toolLine)
	}
	text := "✓ " + what + " allowed by a rule " + grantAuthor(g) + " added: " + grantScope(g)
	if !g.Expires.IsZero() {
		text += ", until " + dateToken(g.Expires)
	}
	return Message{Text: cutSafe("Allowed by a rule "+grantAuthor(g)+" added", 300), Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(cutSafe(text, MaxText)))}}
}

// GrantAdded tells the approver who just added g what happens from now on.
func GrantAdded(g store.Standing) string {
	return "Approved. slackgate now allows " + GrantWords(g) + " without a card. The App Home lists it, with Forget."
}

// maxHomeGrants bounds the grants the Home view lists (see maxHomeAnswers).
const maxHomeGrants = 20

// homeGrants is the Home view's "Rules you allowed": each live grant with
// what it allows where, who added it and until when, and Forget for
// approvers.
func homeGrants(grants []store.Standing, canForget bool) []slack.Block {
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
