package main

// End-to-end tests of a policy rule that asks several people: the real
// CLI, the policy file as an operator writes it, clicks in fake Slack.

import (
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// twoApprovers needs two of lee, kim and dana, never the session's starter
// (dana starts every test session).
const twoApprovers = `rules:
  - name: two-people
    match: ["Bash(echo:*)"]
    ask:
      approvers: ["` + lee + `", "` + kim + `", "` + dana + `"]
      count: 2
      not_self: true
`

func TestTwoOfTwoRunsTheFirstApproversEditOnlyAfterASecondPerson(t *testing.T) {
	t.Parallel()
	policyFile := writeFile(t, t.TempDir(), "policy.yaml", twoApprovers)
	a := startApp(t, options{configure: func(c *Config) { c.PolicyFile = policyFile }},
		relaytest.ToolUse("toolu_two", "Bash", bash("echo prod > target.txt", "Pick the target")),
		relaytest.Text("done"))
	thread := a.mention("set the target")
	card := a.card(thread, "0 of 2 approvals")

	// The starter is listed, but never counts.
	a.click(dana, card.Ref(), "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, dana, fakeslack.Text("You started this session; someone else must approve")); err != nil {
		t.Fatal(err)
	}
	// The first approver edits: one approval, nothing runs.
	a.click(lee, card.Ref(), "Edit & approve")
	view := a.view(lee)
	if _, err := a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"Command": "echo staging > target.txt"}); err != nil {
		t.Fatalf("submitting the edit modal: %v", err)
	}
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("1 of 2 approvals") && m.HasText("echo staging") && len(m.Buttons()) > 0
	}); err != nil {
		cur, _ := a.slack.Message(card.Ref())
		t.Fatalf("the card never showed one approval of the edited command: %v\n%s", err, cur.AllText())
	}
	a.noFile("target.txt")
	// The same person again counts once.
	a.click(lee, card.Ref(), "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, lee, fakeslack.Text("counts once")); err != nil {
		t.Fatal(err)
	}
	a.noFile("target.txt")

	a.click(kim, card.Ref(), "Approve")
	if res := a.toolResult("toolu_two"); res.IsError {
		t.Fatalf("the approved command failed: %q", res.Content)
	}
	if got := a.file("target.txt"); got != "staging\n" {
		t.Errorf("target.txt = %q, want the first approver's edit", got)
	}
	final := a.settled(card.Ref(), "Approved")
	if !final.HasText("<@"+lee+"> and <@"+kim+">") || strings.Contains(final.AllText(), "<@"+dana+"> and") {
		t.Errorf("the settled card should name lee and kim: %s", final.AllText())
	}
}
