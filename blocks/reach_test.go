package blocks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

func TestAnnouncementHasTheCardsButtonsWhilePendingAndTheOutcomeAfter(t *testing.T) {
	r := bashRequest()
	r.Card = cardRef
	link := "https://fake.slack.com/archives/C0CHAN/p1700000000000200?thread_ts=1700000000.000100&cid=C0CHAN"
	m := Announcement(r, session, ReachOptions{CardLink: link})
	if err := ValidateMessage(m.Text, m.Blocks); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range m.Blocks {
		if a, ok := b.(*slack.ActionBlock); ok {
			for _, el := range a.Elements.ElementSet {
				btn := el.(*slack.ButtonBlockElement)
				ids = append(ids, btn.ActionID+"="+btn.Value)
			}
		}
	}
	if want := []string{string(ActionApprove) + "=0|0|req-bash", string(ActionDeny) + "=0|0|req-bash"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("buttons = %v, want the card's Approve and Deny %v", ids, want)
	}
	raw, _ := json.Marshal(m.Blocks)
	for _, want := range []string{"make deploy ENV=staging", `\u003c#C0CHAN\u003e`, "U0STARTER", `\u0026amp;cid=C0CHAN|Open the card`, "{ago}"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the announcement does not hold %q: %s", want, raw)
		}
	}

	r.Decision = &store.Decision{Outcome: store.OutcomeAllow, By: "U0ALICE", At: t0.Add(time.Minute)}
	settled := Announcement(r, session, ReachOptions{CardLink: link})
	if err := ValidateMessage(settled.Text, settled.Blocks); err != nil {
		t.Fatal(err)
	}
	if len(settled.Blocks) != 1 || strings.Contains(fmt.Sprint(settled.Blocks), "sg_approve") {
		t.Errorf("a settled announcement keeps buttons: %+v", settled.Blocks)
	}
}

func TestAnnouncementOfAQuestionLinksToTheCardWithoutButtons(t *testing.T) {
	r := request("req-q", store.KindQuestion, "AskUserQuestion", `{"questions":[{"question":"Which?","header":"H","options":[{"label":"A"},{"label":"B"}],"multiSelect":false}]}`)
	m := Announcement(r, session, ReachOptions{})
	for _, b := range m.Blocks {
		if _, ok := b.(*slack.ActionBlock); ok {
			t.Errorf("a question's copy has buttons; it is answered on the card")
		}
	}
}

func TestCardSaysWhenItWasRemindedEscalatedAndUntilWhenItWaits(t *testing.T) {
	r := bashRequest()
	r.Deadline = t0.Add(8 * time.Hour)
	r.Reach = store.Reach{Reminded: t0.Add(10 * time.Minute), Escalated: t0.Add(30 * time.Minute), EscalatedTo: []string{"S0ONCALL", "<!here>"}}
	m := Card(r, session)
	raw, _ := json.Marshal(m.Blocks)
	for _, want := range []string{"reminded \\u003c!date^", "escalated to \\u003c!subteam^S0ONCALL\\u003e", "waits until \\u003c!date^"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the card does not say %q: %s", want, raw)
		}
	}
	if strings.Contains(string(raw), "!here") {
		t.Errorf("an id that is no Slack id reached the card: %s", raw)
	}
}

func TestHomeWithAHundredWaitingAndEveryOtherSectionFullStaysWithinSlacksLimits(t *testing.T) {
	var items []Waiting
	for i := range 100 {
		r := request(fmt.Sprintf("req-%03d", i), store.KindTool, "Bash", `{"command":"echo `+strings.Repeat("x", 500)+`"}`)
		items = append(items, Waiting{Request: r, Session: session, CardLink: fmt.Sprintf("https://fake.slack.com/archives/C0CHAN/p17000000000%05d", i)})
	}
	var answers []store.Standing
	for i := range 60 {
		answers = append(answers, store.Standing{Kind: store.StandingAnswer, ID: fmt.Sprintf("ans-%d", i), Scope: store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"},
			Questions: []store.RememberedQuestion{{Question: "Which?", Options: []string{"A", "B"}}}, Answers: map[string]string{"Which?": "A"}, By: "U0ALICE", At: t0})
	}
	var grants []store.Standing
	for i := range 60 {
		grants = append(grants, store.Standing{Kind: store.StandingGrant, ID: fmt.Sprintf("gr-%d", i), Scope: store.Scope{Kind: store.ScopeRepo, Value: "/srv/repo"},
			Rules: []string{"Bash(npm test:*)"}, By: "U0ALICE", At: t0})
	}
	view := HomeView(answers, HomeOptions{CanForget: true, Notice: "✅ done", Waiting: HomeWaiting("U0ALICE", items), Grants: grants})
	if err := ValidateHomeView(view); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(view)
	if !strings.Contains(string(raw), "88 more") {
		t.Errorf("the tab does not say how many more wait")
	}
	if n := len(view.Blocks.BlockSet); n > 100 {
		t.Errorf("%d blocks, Slack takes 100", n)
	}
}
