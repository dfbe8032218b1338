package blocks

import (
	"github.com/slackgate/slackgate/store"
)

// DecidedByRule is the one thread line that stands for the card of a
// request a policy rule allowed or denied (d names the rule): what was
// asked, the rule, and for a deny what Claude was told. Everything in it
// comes from the request or the policy file, escaped like all tool text.
func DecidedByRule(r store.Request, d store.Decision) Message {
	what := boldText(r.ToolName, 100)
	if arg := toolArg(r.ToolName, maskJSON(r.Input)); arg != "" {
		what = inlineCode(arg, toolLine)
		if r.ToolName != "Bash" {
			what = boldText(r.ToolName, 100) + " " + what
		}
	}
	rule := boldText(d.Rule, 100)
	if d.Outcome == store.OutcomeAllow {
		return contextMessage("✓ " + what + " allowed by rule " + rule)
	}
	line := "⛔ " + what + " denied by rule " + rule
	if d.Message != "" {
		line += ": " + codeSafe(cutShown(oneLine(d.Message), 300))
	}
	return contextMessage(line)
}

// AsksByRule is what a card says when an ask rule of the policy is why
// it asks: the rule's name.
func AsksByRule(rule string) string {
	return "asks because of rule " + boldText(rule, 100)
}
