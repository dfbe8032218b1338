package blocks

import (
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Needs is how many distinct people must approve a request, and who may:
// a policy rule's ask (count, approvers). A zero Needs, or Count 1, is one
// approval, as without a policy.
type Needs struct {
	Count int
	// From names who may approve, as Slack mrkdwn mentions
	// ("<!subteam^S0SRE>, <@U0LEE>"), or "anyone".
	From string
}

// several reports whether the card collects approvals one by one.
func (n Needs) several() bool { return n.Count > 1 }

// approvalsLine is a pending card's progress of several approvals:
// "1 of 2 approvals · approved by <@U1> · waiting for <!subteam^S0SRE>".
func approvalsLine(r store.Request, n Needs) slack.Block {
	parts := []string{"*" + strconv.Itoa(len(r.Approvals)) + " of " + strconv.Itoa(n.Count) + " approvals*"}
	if len(r.Approvals) > 0 {
		parts = append(parts, "approved by "+mentions(r.Approvals))
	}
	if n.From != "" {
		parts = append(parts, "waiting for "+n.From)
	}
	return slack.NewContextBlock(blockApprovals, mrkdwn(cutSafe(strings.Join(parts, " · "), MaxText)))
}

// editedByFirst is the flag of a card whose first approver edited the
// input: the card shows the edited input, which the others approve.
func editedByFirst(r store.Request) (string, bool) {
	if len(r.Approvals) == 0 || len(r.Approvals[0].Input) == 0 {
		return "", false
	}
	return "✏️ *Edited by <@" + r.Approvals[0].By + "> before approving*: the input shown is what the approvals are of and what runs", true
}

// mentions names the people of as, in order: "<@U1>, <@U2> and <@U3>".
func mentions(as []store.Approval) string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = "<@" + a.By + ">"
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ApprovalRecorded tells an approver their approval counted and what the
// request still waits for.
func ApprovalRecorded(r store.Request, n Needs) string {
	left := n.Count - len(r.Approvals)
	s := "Your approval is recorded: " + strconv.Itoa(len(r.Approvals)) + " of " + strconv.Itoa(n.Count) + "."
	if left > 0 && n.From != "" {
		s += " Waiting for " + plural(left, "more approval") + " from " + n.From + "."
	}
	return s
}
