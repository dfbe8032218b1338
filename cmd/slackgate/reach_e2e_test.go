package main

import (
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// sre is the channel where the prod rule announces its requests.
const sre = "C0SRE"

// prodPolicy asks the leads about every touch and announces it in #sre.
const prodPolicy = `rules:
  - name: prod
    match: ["Bash(touch:*)"]
    ask:
      approvers: ["S0LEADS"]
      notify: ["` + sre + `"]
`

// A prod rule's request is announced in its notify channel, with the
// card's buttons; an approver decides it there, the command runs, and the
// card in the session's thread and the copy both show the outcome. On
// Redis, as replicas share it.
func TestAProdRuleRequestIsAnnouncedAndDecidedInTheNotifyChannel(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := writePolicy(t, t.TempDir(), prodPolicy)
	a := startApp(t, options{backend: redisBackend, approvers: "S0LEADS", configure: func(c *Config) { c.PolicyFile, c.WorkDir = file, work }},
		relaytest.ToolUse("toolu_prod", "Bash", bash("touch deployed.txt", "Deploy")),
		relaytest.Text("deployed"))
	a.workdir = work
	a.slack.AddChannel(sre, "sre")

	thread := a.mention("deploy to prod")
	card := a.card(thread, "touch deployed.txt")
	cp, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == sre && m.FromBot() && m.HasText("touch deployed.txt") && len(m.Buttons()) > 0
	})
	if err != nil {
		t.Fatalf("no copy in the notify channel: %v", err)
	}
	for _, want := range []string{"<#" + general + ">", "<@" + dana + ">", "Open the card"} {
		if !cp.HasText(want) {
			t.Errorf("the copy does not say %q: %s", want, cp.AllText())
		}
	}

	a.click(dana, cp.Ref(), "Approve") // the starter is no lead
	a.told(dana, "Nothing was changed")
	a.click(lee, cp.Ref(), "Approve")
	if res := a.toolResult("toolu_prod"); res.IsError {
		t.Fatalf("the approved command failed: %q", res.Content)
	}
	a.file("deployed.txt")
	a.settled(card.Ref(), "Approved")
	if final := a.settled(cp.Ref(), "Approved"); !final.HasText("<@" + lee + ">") {
		t.Errorf("the settled copy does not name who approved: %s", final.AllText())
	}
	a.threadText(thread, "deployed")
}
