package bot

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// Team approvals on a phone (issue 28): where approvers act, they read
// the same words for what is left, and act from where they are told.

// dmCopy waits for the message in user's DM with request id's buttons
// whose text holds text, and returns it.
func (h *harness) dmCopy(t *testing.T, user, text string, match func(fakeslack.Message) bool) fakeslack.Message {
	t.Helper()
	m, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool {
		return m.Channel == fakeslack.DMChannel(user) && m.ThreadTS == "" && m.FromBot() && m.HasText(text) && (match == nil || match(m))
	})
	if err != nil {
		cur := h.fake.Messages(fakeslack.DMChannel(user))
		t.Fatalf("%s's DM never showed %q: %v\n%+v", user, text, err, cur)
	}
	return m
}

func TestTheProgressPhraseIsTheSameOnTheCardEveryCopyAndTheHome(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Policy = mustPolicy(t, twoSREs)
		c.Approvers = People{IDs: []string{"U9"}}
		c.Reach = ReachDefaults{NotifyDM: true}
	}})
	h.fake.AddUser("U4", "dave")
	h.fake.AddUserGroup("S0SRE", "U2", "U3", "U4")
	ctx := testCtx(t)
	r, card := h.sessionWithRequest(t, "req-phrase")

	// Nobody approved yet: the rule's people but the starter (U1, whom
	// not_self never counts) are who it needs.
	const none = "*Needs 2 approvals* from <!subteam^S0SRE>"
	if !card.HasText(none) || card.HasText(none+" or") {
		t.Errorf("the card says %q, want %q", card.AllText(), none)
	}
	for _, u := range []string{"U2", "U3", "U4"} {
		cp := h.dmCopy(t, u, none, nil)
		if !cp.HasText("make deploy") || !cp.HasText("for <@U1>") || !hasButton(cp, "Approve") {
			t.Errorf("%s's copy does not say what, for whom, or has no Approve: %s", u, cp.AllText())
		}
		if !cp.HasText("1 of 2") && !cp.HasText("0 of 2") {
			t.Errorf("%s's notification %q does not count the approvals", u, cp.Text)
		}
	}

	// U2 approves on their own copy: told there, and their copy and tab
	// say so at once; everyone else's say what is left and who approved.
	mine := h.dmCopy(t, "U2", none, nil)
	h.eventually(t, "the copies recorded", func() bool {
		got, err := h.st.GetRequest(ctx, r.ID)
		return err == nil && len(got.Reach.Copies) == 3
	})
	if err := h.fake.Click(ctx, "U2", mine.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	told, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("✓ You approved · waiting for 1 more"))
	if err != nil {
		t.Fatal(err)
	}
	if told.Channel != fakeslack.DMChannel("U2") {
		t.Errorf("U2 was answered in %s, not where they clicked", told.Channel)
	}
	const one = "*Needs 1 more approval* from <!subteam^S0SRE> · ✓ <@U2>"
	h.dmCopy(t, "U2", "✓ You approved · waiting for 1 more", func(m fakeslack.Message) bool { return m.Ref() == mine.Ref() && !hasButton(m, "Approve") })
	h.dmCopy(t, "U3", one, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return m.Ref() == card.Ref() && m.HasText(one) }); err != nil {
		t.Fatalf("the card does not say what is left: %v", err)
	}
	for _, u := range []string{"U2", "U3"} {
		if err := h.fake.OpenHome(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool {
		return v.HasText("✓ You approved · waiting for 1 more") && !slices.Contains(v.Buttons(), "Approve")
	}); err != nil {
		t.Fatalf("U2's home does not say they approved: %v", err)
	}
	if _, err := h.fake.WaitHome(ctx, "U3", func(v fakeslack.View) bool { return v.HasText(one) && v.HasText("Waiting for you (1)") }); err != nil {
		t.Fatalf("U3's home does not say what is left: %v", err)
	}

	// U3 approves in their Home: answered there, not in the card's channel.
	if err := h.fake.ClickHome(ctx, "U3", "Approve", "make deploy"); err != nil {
		t.Fatal(err)
	}
	got, _ := h.waitSettled(t, r, card)
	if got.Decision.Outcome != store.OutcomeAllow || len(got.Decision.Approvals) != 2 {
		t.Fatalf("decision %+v, want an allow by U2 and U3", got.Decision)
	}
	if _, err := h.fake.WaitHome(ctx, "U3", func(v fakeslack.View) bool {
		return v.HasText("✅ *Approved* by <@U2> and <@U3>") && v.HasText("Nothing waits for your decision")
	}); err != nil {
		t.Fatalf("U3's home does not say what their tap did: %v", err)
	}
	if told := h.fake.Ephemerals("U3"); len(told) != 0 {
		t.Errorf("a tap in the Home was answered outside it: %+v", told)
	}
	for _, u := range []string{"U2", "U3", "U4"} {
		h.dmCopy(t, u, "Approved", func(m fakeslack.Message) bool { return len(m.Buttons()) == 0 })
	}
}

func TestADMReminderIsANewDMThatDecides(t *testing.T) {
	armed := make(chan time.Time, 64)
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Reach = ReachDefaults{NotifyDM: true, RemindAfter: 10 * time.Minute}
	}, before: func(b *Bot) { b.reach.armed = func(due time.Time) { armed <- due } }})
	ctx := testCtx(t)
	start := h.clock.Now()
	s := h.newSession(t, "sess-dm-remind")
	r := store.Request{ID: "req-dm-remind", SessionID: s.ID, CLIRequestID: "cli-dm-remind", Kind: store.KindTool, CreatedAt: start, ToolCall: store.ToolCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`)}} // by the bot's clock
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	card, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool { return m.FromBot() && hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	cp := h.dmCopy(t, "U2", "make deploy", nil)
	h.eventually(t, "the copy recorded", func() bool {
		got, err := h.st.GetRequest(ctx, r.ID)
		return err == nil && len(got.Reach.Copies) == 1
	})

	advanceTo(t, h, start.Add(10*time.Minute+time.Second), armed)
	reminder := h.dmCopy(t, "U2", "Still waiting", func(m fakeslack.Message) bool { return m.Ref() != cp.Ref() })
	if len(h.fake.Thread(cp.Channel, cp.TS)) > 1 {
		t.Errorf("the reminder went under the copy in the DM: %+v", h.fake.Thread(cp.Channel, cp.TS))
	}
	if !reminder.HasText("*work*") || !reminder.HasText("for <@U1>") || !reminder.HasText("|Open the card>") {
		t.Errorf("the reminder does not name the project, the requester or link the card: %s", reminder.AllText())
	}
	if err := h.fake.Click(ctx, "U2", reminder.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.waitSettled(t, r, card); got.Decision.By != "U2" {
		t.Errorf("decision %+v, want U2's allow from the reminder", got.Decision)
	}
	for _, m := range []fakeslack.Message{cp, reminder} {
		h.dmCopy(t, "U2", "Approved", func(got fakeslack.Message) bool { return got.Ref() == m.Ref() && len(got.Buttons()) == 0 })
	}
}

// A reminder or escalation line in the card's thread carries the card's
// buttons, yet is no card: finding a card a crashed bot never recorded
// must not settle on it (cards.find), or the card would never show its
// outcome.
func TestAReminderInTheThreadIsNotTakenForTheCard(t *testing.T) {
	s := store.Session{ID: "sess-find", Thread: store.MessageRef{Channel: "C1", TS: "1.0"}, WorkDir: testWorkDir, StartedBy: "U1"}
	r := store.Request{ID: "req-find", SessionID: s.ID, Kind: store.KindTool, Reach: store.Reach{Reminded: time.Now(), Escalated: time.Now(), EscalatedTo: []string{"S0ONCALL"}}, ToolCall: store.ToolCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`)}}
	for name, m := range map[string]blocks.Message{
		"reminder":   blocks.Reminder(r, s, blocks.ReachOptions{InThread: true}, time.Hour),
		"escalation": blocks.Escalation(r, s, blocks.ReachOptions{InThread: true}, time.Hour),
		"copy":       blocks.Announcement(r, s, blocks.ReachOptions{}),
	} {
		if !slices.ContainsFunc(m.Blocks, func(b slack.Block) bool { _, ok := b.(*slack.ActionBlock); return ok }) {
			t.Fatalf("the %s has no buttons to mistake", name)
		}
		if id := cardOf(slack.Blocks{BlockSet: m.Blocks}); id != "" {
			t.Errorf("the %s is taken for the card of %s", name, id)
		}
	}
	if id := cardOf(slack.Blocks{BlockSet: blocks.Card(r, s).Blocks}); id != r.ID {
		t.Errorf("the card is not found as %s's: %q", r.ID, id)
	}
}
