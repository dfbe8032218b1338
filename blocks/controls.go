package blocks

import (
	"strconv"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

func button(id, label, val string) *slack.ButtonBlockElement {
	return slack.NewButtonBlockElement(id, val, plainInput(label, MaxButtonText))
}

// confirm builds a Slack confirmation dialog within its limits.
func confirm(title, text, yes, no string) *slack.ConfirmationBlockObject {
	return slack.NewConfirmationBlockObject(plainInput(title, MaxConfirmTitle), plainInput(text, MaxConfirmText),
		plainInput(yes, MaxConfirmButton), plainInput(no, MaxConfirmButton))
}

// hiddenNote says, for a confirmation, what the card does not show and
// where the rest is; "" when the card shows everything.
func (c *card) hiddenNote() string {
	if len(c.hidden) == 0 {
		return ""
	}
	what := c.hidden[0]
	if len(c.hidden) > 1 {
		what += " and " + plural(len(c.hidden)-1, "other part")
	}
	if c.opts.AttachmentFailed {
		return "The card does not show all of the input (" + what + "), and the full input could not be attached to the thread. "
	}
	return "The card does not show all of the input (" + what + "). The full input is attached in the thread: read it first. "
}

// guard adds a confirmation to an approving button when the card hides
// part of the input.
func (c *card) guard(b *slack.ButtonBlockElement, verb string) *slack.ButtonBlockElement {
	if note := c.hiddenNote(); note != "" {
		b = b.WithConfirm(confirm(verb+" without seeing all of it?", strings.TrimSpace(note), verb+" anyway", "Go back"))
	}
	return b
}

// controls are the card's decisions: Approve and Deny first, side by side
// (with Edit & approve), then "Approve and allow for this session…" as one
// menu naming each rule.
func (c *card) controls() {
	r := c.req
	v := func(q, o int) string { return value(q, o, r.ID) }
	var els []slack.BlockElement
	switch r.Kind {
	case store.KindPlan:
		els = append(els,
			c.guard(button(string(ActionApprove), "Approve plan", v(0, 0)).WithStyle(slack.StylePrimary), "Approve plan"),
			button(string(ActionDeny), "Keep planning", v(0, 0)))
	case store.KindQuestion:
		els = questionButtons(questions(r), v)
	case store.KindElicitation:
		els = c.elicitControls(v)
	default:
		els = append(els,
			c.guard(button(string(ActionApprove), "Approve", v(0, 0)).WithStyle(slack.StylePrimary), "Approve"),
			button(string(ActionDeny), "Deny", v(0, 0)).WithStyle(slack.StyleDanger))
		if Editable(c.real) && len(c.real.Approvals) == 0 {
			els = append(els, button(string(ActionEdit), "Edit & approve", v(0, 0)))
		}
	}
	c.add(slack.NewActionBlock(blockActions, els...))
	if r.Kind == store.KindQuestion && Rememberable(c.real) {
		c.rememberMenu()
	}
	if menu := c.alwaysMenu(); menu != nil {
		c.add(slack.NewActionBlock(blockAlways, menu))
	}
}

func questionButtons(qs []question, v func(q, o int) string) []slack.BlockElement {
	var els []slack.BlockElement
	if oneTap(qs) {
		num := numbered(qs[0])
		for o, opt := range qs[0].Options {
			label := oneLine(opt.Label)
			if label == "" || num {
				label = strconv.Itoa(o + 1)
			}
			els = append(els, button(actionID(ActionAnswer, o), label, v(0, o)))
		}
	} else if len(qs) > 0 && allHaveOptions(qs) && !formOnly(qs) {
		els = append(els, button(string(ActionSubmit), "Submit answers", v(0, 0)).WithStyle(slack.StylePrimary))
	}
	other := button(string(ActionOther), "Other…", v(0, 0))
	if !allHaveOptions(qs) || formOnly(qs) {
		// Free-text questions, and forms too long for a phone's first
		// screen, are answered in the modal.
		other = button(string(ActionOther), "Answer…", v(0, 0)).WithStyle(slack.StylePrimary)
	}
	return append(els, other, button(string(ActionSkip), "Skip", v(0, 0)))
}

// maxRuleText bounds a suggestion's escaped label: longer rule sets could
// not be listed in full on the card, so they are not offered.
const maxRuleText = 2500

// alwaysOffered reports whether a tool request may offer "Always allow".
func alwaysOffered(r store.Request) bool {
	return normalize(r).Kind == store.KindTool && !r.SuppressAlwaysAllow
}

// alwaysMenu offers the suggestions as one menu, "Approve and allow for
// this session…": each option names its rules (the option's text) and
// what they do (its description). When an option's rules do not fit its
// text, or the card hides part of the input, choosing asks first in a
// confirmation that lists every option's rules; rules too many for it are
// listed on the card itself. Nil when nothing is offered.
func (c *card) alwaysMenu() slack.BlockElement {
	if !alwaysOffered(c.real) || c.opts.Needs.several() {
		return nil
	}
	var opts []*slack.OptionBlockObject
	var all, code []string
	cutOne := false
	for i, s := range c.req.Suggestions {
		names, does, ok := suggestionWords(s)
		label := strings.Join(names, ", ")
		if !ok || len(opts) == maxButtons || runes(codeSafe(label)) > maxRuleText {
			continue // a rule set too long to show in full is not offered
		}
		n := strconv.Itoa(len(opts) + 1)
		text := label
		if runes(visible(maskSecrets(text))) > MaxOptionText {
			text = plural(len(names), "rule") + ": " + label
			cutOne = true
		}
		all = append(all, n+". "+visible(maskSecrets(label)))
		rules, _ := suggestionRules(s)
		code = append(code, "• "+rules)
		opts = append(opts, slack.NewOptionBlockObject(value(choiceCLI, i, c.req.ID), plainInput(text, MaxOptionText),
			plainInput(strings.ToUpper(does[:1])+does[1:], MaxOptionText)))
		if grantable(s) {
			opts = append(opts, grantOptions(i, c.req.ID, text)...)
		}
	}
	if len(opts) == 0 {
		return nil
	}
	menu := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Approve and allow…"), string(ActionAlways), opts...)
	if cutOne || len(c.hidden) > 0 {
		text := c.hiddenNote() + "Approves this request and, for the rest of this session, allows: " + strings.Join(all, "; ") + "."
		if runes(text) > MaxConfirmText {
			c.add(section("*“Approve and allow” adds, for the rest of this session:*"))
			for _, l := range code {
				c.add(section(cutSafe(l, MaxText)))
			}
			text = c.hiddenNote() + "Approves this request and adds the rules listed on the card for the rest of this session."
		}
		menu = menu.WithConfirm(confirm("Approve and allow?", text, "Approve and allow", "Go back"))
	}
	return menu
}
