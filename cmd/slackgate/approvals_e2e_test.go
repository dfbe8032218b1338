package main

// End-to-end tests of a policy rule that asks several people: the real
// CLI, the policy file as an operator writes it, clicks in fake Slack.

import (
	"slices"
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
	needs := "*Needs 2 approvals* from <@" + lee + "> or <@" + kim + ">"
	card := a.card(thread, needs)
	if card.HasText(needs + " or") {
		t.Errorf("the card lists the starter, whom not_self never counts: %s", card.AllText())
	}

	// The starter never counts.
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
		return m.Ref() == card.Ref() && m.HasText("*Needs 1 more approval* from <@"+kim+"> · ✓ <@"+lee+">") &&
			m.HasText("- echo prod &gt; target.txt\n+ echo staging &gt; target.txt") && slices.Contains(m.Buttons(), "Approve lee's edit")
	}); err != nil {
		cur, _ := a.slack.Message(card.Ref())
		t.Fatalf("the card never showed one approval of the edited command: %v\n%s", err, cur.AllText())
	}
	a.noFile("target.txt")
	// The same person again counts once.
	a.click(lee, card.Ref(), "Approve lee's edit")
	if _, err := a.slack.WaitEphemeral(a.ctx, lee, fakeslack.Text("counts once")); err != nil {
		t.Fatal(err)
	}
	a.noFile("target.txt")

	a.click(kim, card.Ref(), "Approve lee's edit")
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

// TestE2EAuditExportNamesTheCommandAndEveryApprover: after a 2-of-2
// approval and a deny after one approval, the audit export's rows say
// which command each was about, in which directory, everyone who approved
// and the deny's reason; the log still verifies with what `run` keeps.
func TestE2EAuditExportNamesTheCommandAndEveryApprover(t *testing.T) {
	t.Parallel()
	policyFile := writeFile(t, t.TempDir(), "policy.yaml", twoApprovers)
	a := startApp(t, options{configure: func(c *Config) { c.PolicyFile = policyFile }},
		relaytest.ToolUse("toolu_one", "Bash", bash("echo one > a.txt", "First")),
		relaytest.ToolUse("toolu_two", "Bash", bash("echo two > b.txt", "Second")),
		relaytest.Text("done"))
	thread := a.mention("write both")
	first := a.card(thread, "echo one")
	a.click(lee, first.Ref(), "Approve")
	// The rows name the approvers in the order they approved: kim clicks
	// once lee's approval is recorded.
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == first.Ref() && m.HasText("*Needs 1 more approval*")
	}); err != nil {
		t.Fatal(err)
	}
	a.click(kim, first.Ref(), "Approve")
	if res := a.toolResult("toolu_one"); res.IsError {
		t.Fatalf("the approved command failed: %q", res.Content)
	}
	second := a.card(thread, "echo two")
	a.click(lee, second.Ref(), "Approve")
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == second.Ref() && m.HasText("*Needs 1 more approval*")
	}); err != nil {
		t.Fatal(err)
	}
	a.click(kim, second.Ref(), "Deny")
	view := a.view(kim)
	if _, err := a.slack.SubmitView(a.ctx, kim, view.ID, map[string]string{"Reason (Claude reads it)": "b.txt is frozen"}); err != nil {
		t.Fatalf("submitting the deny modal: %v", err)
	}
	if res := a.toolResult("toolu_two"); !res.IsError {
		t.Fatalf("the denied command ran: %q", res.Content)
	}
	a.settled(second.Ref(), "Denied")
	a.stop()

	out, err := runProgram(t, a.processEnv(nil), "audit", "export", "-format", "csv")
	if err != nil {
		t.Fatalf("audit export: %v\n%s", err, out)
	}
	rows, err := csvRows(out)
	must(t, err)
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	var settled [][]string
	for _, r := range rows[1:] {
		if r[col["Action"]] == "settled" {
			settled = append(settled, r)
		}
	}
	if len(settled) != 2 {
		t.Fatalf("settled rows = %q, want two", settled)
	}
	for i, want := range []struct{ input, who, outcome, approvers, detail string }{
		{"echo one > a.txt", kim, "allow", "lee (" + lee + "), kim (" + kim + ")", ""},
		{"echo two > b.txt", kim, "deny", "lee (" + lee + ")", "b.txt is frozen"},
	} {
		r := settled[i]
		if r[col["Input"]] != want.input || r[col["Who"]] != want.who || r[col["Outcome"]] != want.outcome || r[col["Approvers"]] != want.approvers ||
			r[col["Detail"]] != want.detail || r[col["Working directory"]] != a.workdir || r[col["Rule"]] != "" || len(r[col["Input SHA-256"]]) != 64 {
			t.Errorf("settled row %d = %q\nwant input %q by %s, %s, approvers %q, detail %q, in %s", i, r, want.input, want.who, want.outcome, want.approvers, want.detail, a.workdir)
		}
	}
	if out, err := runProgram(t, a.processEnv(nil), "audit", "verify"); err != nil || !strings.Contains(out, "every entry is sealed") {
		t.Errorf("audit verify: %v\n%s", err, out)
	}
}
