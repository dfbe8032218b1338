package blocks

import (
	"strconv"
	"strings"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// newer holds the can_use_tool fields newer CLIs send (title, mcp_server,
// suppress_always_allow_rule).
type newer struct {
	Title               string
	MCPServer           string
	SuppressAlwaysAllow bool // the CLI asks hosts not to offer "Always allow"
}

// newerOf reads those fields from a request: the one place that does, so
// every card and decoder honours them alike (see renderCard and
// DecideAction).
func newerOf(r store.Request) newer {
	return newer{Title: r.Title, MCPServer: r.MCPServer, SuppressAlwaysAllow: r.SuppressAlwaysAllow}
}

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
	if c.o.AttachmentFailed {
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

func (c *card) controls() {
	r := c.r
	v := func(q, o int) string { return value(q, o, r.ID) }
	var els []slack.BlockElement
	switch r.Kind {
	case store.KindPlan:
		els = append(els,
			c.guard(button(string(ActionApprove), "Approve plan", v(0, 0)).WithStyle(slack.StylePrimary), "Approve plan"),
			button(string(ActionDeny), "Keep planning", v(0, 0)))
	case store.KindQuestion:
		els = questionButtons(questions(r), v)
	default:
		els = append(els, c.guard(button(string(ActionApprove), "Approve", v(0, 0)).WithStyle(slack.StylePrimary), "Approve"))
		els = append(els, c.alwaysButtons()...)
		if Editable(c.real) {
			els = append(els, button(string(ActionEdit), "Edit & approve", v(0, 0)))
		}
		els = append(els, button(string(ActionDeny), "Deny", v(0, 0)).WithStyle(slack.StyleDanger))
	}
	c.add(slack.NewActionBlock(blockActions, els...))
}

func questionButtons(qs []question, v func(q, o int) string) []slack.BlockElement {
	var els []slack.BlockElement
	if oneTap(qs) {
		for o, opt := range qs[0].Options {
			label := oneLine(opt.Label)
			if label == "" {
				label = "Option " + strconv.Itoa(o+1)
			}
			els = append(els, button(actionID(ActionAnswer, o), label, v(0, o)))
		}
	} else if len(qs) > 0 && allHaveOptions(qs) {
		els = append(els, button(string(ActionSubmit), "Submit answers", v(0, 0)).WithStyle(slack.StylePrimary))
	}
	other := "Other…"
	if !allHaveOptions(qs) {
		other = "Answer…" // free-text questions are answered in the modal
	}
	return append(els,
		button(string(ActionOther), other, v(0, 0)),
		button(string(ActionSkip), "Skip", v(0, 0)))
}

// maxRuleText bounds a suggestion's escaped label: longer rule sets could
// not be listed in full on the card, so they are not offered.
const maxRuleText = 2500

// alwaysOffered reports whether a tool request may offer "Always allow".
func alwaysOffered(r store.Request, x newer) bool {
	return normalize(r).Kind == store.KindTool && !x.SuppressAlwaysAllow
}

// alwaysButtons offers one "Always allow" button per suggestion. A label
// that does not fit a button, or a card that hides part of the input, gets
// a confirmation naming every rule the button adds; rules too many for
// the confirmation are listed on the card itself.
func (c *card) alwaysButtons() []slack.BlockElement {
	if !alwaysOffered(c.real, c.x) {
		return nil
	}
	var els []slack.BlockElement
	var listed []string
	for i, s := range c.r.Suggestions {
		label, ok := suggestionLabel(s)
		if !ok || len(els) == maxButtons || runes(codeSafe(label)) > maxRuleText {
			continue // a rule set too long to show in full is not offered
		}
		b := button(actionID(ActionAlways, i), label, value(0, i, c.r.ID))
		shown := visible(maskSecrets(label))
		if runes(shown) > MaxButtonText || len(c.hidden) > 0 {
			text := c.hiddenNote() + "For the rest of this session: " + shown + "."
			if runes(text) > MaxConfirmText {
				n := len(listed) + 1
				listed = append(listed, strconv.Itoa(n)+". "+codeSafe(label))
				text = c.hiddenNote() + "Adds the rules listed on the card as “" + strconv.Itoa(n) + ".” for the rest of this session."
			}
			b = b.WithConfirm(confirm("Always allow for this session?", text, "Always allow", "Go back"))
		}
		els = append(els, b)
	}
	if len(listed) > 0 {
		c.add(section("*“Always allow” adds, for this session:*"))
		for _, l := range listed {
			c.add(section(l))
		}
	}
	return els
}
