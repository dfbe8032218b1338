package main

// End-to-end tests of plans (ExitPlanMode): a person approves one, or sends
// Claude back to planning with feedback, from the card.

import (
	"strings"
	"testing"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// planMode has Claude plan first: CLAUDE_PERMISSION_MODE=plan.
func planMode(c *Config) { c.PermissionMode = "plan" }

func TestPlanApprovedLetsClaudeStartWorking(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee, configure: planMode},
		relaytest.WritePlan("toolu_w", "# Plan\n1. add x\n"),
		relaytest.ToolUse("toolu_p", "ExitPlanMode", map[string]any{}),
		relaytest.Text("on it"))
	thread := a.mention("plan adding x")
	card := a.card(thread, "add x")
	if !card.HasText("plan for your approval") {
		t.Errorf("the card does not say it is a plan: %s", card.AllText())
	}
	if got := card.Buttons(); len(got) < 2 || got[0] != "Approve plan" || got[1] != "Keep planning" {
		t.Errorf("plan card buttons = %q, want Approve plan and Keep planning", got)
	}

	a.click(lee, card.Ref(), "Approve plan")
	res := a.toolResult("toolu_p")
	if res.IsError || !strings.Contains(res.Content, "approved") {
		t.Errorf("the model got %q (is_error %v), want the plan approved", res.Content, res.IsError)
	}
	final := a.settled(card.Ref(), "Plan approved")
	if !final.HasText("<@" + lee + ">") {
		t.Errorf("the settled plan card does not name the approver: %s", final.AllText())
	}
	a.threadText(thread, "on it")
}

func TestKeepPlanningSendsTheFeedbackToClaude(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee, configure: planMode},
		relaytest.WritePlan("toolu_w", "# Plan\n1. add x\n"),
		relaytest.ToolUse("toolu_p", "ExitPlanMode", map[string]any{}),
		relaytest.Text("revising the plan"))
	thread := a.mention("plan adding x")
	card := a.card(thread, "add x")

	a.click(lee, card.Ref(), "Keep planning")
	view := a.view(lee)
	const feedback = "add tests for x first"
	if _, err := a.slack.SubmitView(a.ctx, lee, view.ID, map[string]string{"What should Claude change?": feedback}); err != nil {
		t.Fatalf("submitting the feedback modal: %v", err)
	}
	res := a.toolResult("toolu_p")
	if !res.IsError || !strings.Contains(res.Content, feedback) {
		t.Errorf("the model got %q (is_error %v), want the feedback as an error result", res.Content, res.IsError)
	}
	final := a.settled(card.Ref(), "Sent back to planning")
	if !final.HasText(feedback) || !final.HasText("<@"+lee+">") {
		t.Errorf("the card should show the feedback and who sent it: %s", final.AllText())
	}
	a.threadText(thread, "revising the plan")
}
