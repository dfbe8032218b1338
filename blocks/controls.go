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
// (with Edit & approve), then "Approve and allow…" as one menu naming
// each rule set.
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
		approve := "Approve"
		if c.editor != nil {
			approve = approveEditLabel(*c.editor)
		}
		els = append(els,
			c.guard(button(string(ActionApprove), approve, v(0, 0)).WithStyle(slack.StylePrimary), "Approve"),
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

// alwaysMenu offers the suggestions as one menu, "Approve and allow…",
// rules first: each option names a rule set (its text, whole when it
// fits) and what it does (its description), and only when some scope of
// it will apply (scopes). A pick opens AllowModal, which lists the rules
// whole and asks for how long and where, each scope in its own words.
// Nil when nothing is offered.
func (c *card) alwaysMenu() slack.BlockElement {
	if !alwaysOffered(c.real) || c.opts.Needs.several() {
		return nil
	}
	var opts []*slack.OptionBlockObject
	for i, s := range c.req.Suggestions {
		names, does, ok := suggestionWords(s)
		label := strings.Join(names, ", ")
		if !ok || len(opts) == maxButtons || strings.TrimSpace(label) == "" || runes(codeSafe(label)) > maxRuleText ||
			len(scopes(s, c.sess, c.opts)) == 0 {
			continue // a rule set with no words, or too long to show in full, is not offered
		}
		text := label
		if runes(visible(maskSecrets(text))) > MaxOptionText {
			text = plural(len(names), "rule") + ": " + label
		}
		opts = append(opts, slack.NewOptionBlockObject(choiceValue(choiceCLI, i, store.SuggestionDigest(s), c.req.ID),
			plainInput(text, MaxOptionText), plainInput(strings.ToUpper(does[:1])+does[1:], MaxOptionText)))
	}
	if len(opts) == 0 {
		return nil
	}
	return slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, plain("Approve and allow…"), string(ActionAllowRules), opts...)
}
