package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

const notifyChannel = "C9"

// copyIn waits for the bot's copy of a card in channel, with its buttons.
func (h *harness) copyIn(t *testing.T, channel string) fakeslack.Message {
	t.Helper()
	m, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool {
		return m.Channel == channel && m.ThreadTS == "" && m.FromBot() && hasButton(m, "Approve")
	})
	if err != nil {
		t.Fatalf("no copy of the card in %s: %v", channel, err)
	}
	return m
}

// botPosts counts the bot's top-level messages in channel holding text.
func (h *harness) botPosts(channel, text string) int {
	n := 0
	for _, m := range h.fake.Messages(channel) {
		if m.FromBot() && m.HasText(text) {
			n++
		}
	}
	return n
}

func TestACopyInTheNotifyChannelDecidesTheRequestAndEveryCopySettles(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Reach = ReachDefaults{NotifyChannel: notifyChannel}
	}})
	h.fake.AddChannel(notifyChannel, "approvals")
	ctx := testCtx(t)
	r, card := h.sessionWithRequest(t, "req-notify")
	cp := h.copyIn(t, notifyChannel)
	for _, want := range []string{"make deploy", "<#C1>", "<@U1>", "Open the card>", "archives/C1/p", "{ago}"} {
		if !cp.HasText(want) {
			t.Errorf("the copy does not say %q: %s", want, cp.AllText())
		}
	}
	h.eventually(t, "the store records the copy", func() bool {
		got, err := h.st.GetRequest(ctx, r.ID)
		return err == nil && got.Reach.HasCopy(store.MessageRef{Channel: cp.Channel, TS: cp.TS})
	})

	// The starter is no approver: the copy's buttons refuse them as the card's do.
	if err := h.fake.Click(ctx, "U1", cp.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.All(fakeslack.Text("Nothing was changed"), func(m fakeslack.Message) bool { return m.Channel == notifyChannel })); err != nil {
		t.Fatalf("the starter was not told, where they clicked, that they may not decide: %v", err)
	}
	if got, _ := h.st.GetRequest(ctx, r.ID); !got.Pending() {
		t.Fatalf("a click by someone who may not decide settled the request: %+v", got.Decision)
	}

	if err := h.fake.Click(ctx, "U2", cp.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	settled, _ := h.waitSettled(t, r, card)
	if d := settled.Decision; d.Outcome != store.OutcomeAllow || d.By != "U2" {
		t.Errorf("decision = %+v, want allow by U2", d)
	}
	final, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == cp.Ref() && len(m.Buttons()) == 0 && m.HasText("Approved")
	})
	if err != nil {
		t.Fatalf("the copy never showed the outcome: %v", err)
	}
	if !final.HasText("U2") {
		t.Errorf("the settled copy does not name who decided: %s", final.AllText())
	}
}

func TestNotifyDMReachesEachApproverButTheStarterOnce(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U1", "S0OPS"}}
		c.Reach = ReachDefaults{NotifyDM: true}
	}})
	h.fake.AddUserGroup("S0OPS", "U2", "U3")
	ctx := testCtx(t)
	r, _ := h.sessionWithRequest(t, "req-dm")
	for _, u := range []string{"U2", "U3"} {
		h.copyIn(t, fakeslack.DMChannel(u))
	}
	// Announcing again (a card recorded twice: redelivery, adoption)
	// sends nothing more: the store's claim holds.
	s, err := h.st.GetSession(ctx, r.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := h.st.GetRequest(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	h.bot.reach.announce(ctx, h.bot.log, got, s)
	for _, u := range []string{"U2", "U3"} {
		if n := h.botPosts(fakeslack.DMChannel(u), "make deploy"); n != 1 {
			t.Errorf("%s got %d copies, want 1", u, n)
		}
	}
	if n := h.botPosts(fakeslack.DMChannel("U1"), "make deploy"); n != 0 {
		t.Errorf("the starter got %d copies by DM, want none: their thread has the card", n)
	}
	h.eventually(t, "the store records both DMs", func() bool {
		got, _ := h.st.GetRequest(ctx, r.ID)
		return len(got.Reach.Copies) == 2
	})
}

func TestOnlyTheStarterMayDecideSoNobodyIsNotified(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U1"}}
		c.Reach = ReachDefaults{NotifyChannel: notifyChannel, NotifyDM: true}
	}})
	h.fake.AddChannel(notifyChannel, "approvals")
	ctx := testCtx(t)
	r, _ := h.sessionWithRequest(t, "req-self")
	s, _ := h.st.GetSession(ctx, r.SessionID)
	got, _ := h.st.GetRequest(ctx, r.ID)
	h.bot.reach.announce(ctx, h.bot.log, got, s) // as the card's recording does, but waited for
	if n := len(h.fake.Messages(notifyChannel)); n != 0 {
		t.Errorf("%d messages in the notify channel for a request only its starter may decide", n)
	}
}

// replica is one more bot on h's store, Slack and clock, with its reach
// sweeper's arming reported on armed.
func startReplica(t *testing.T, h *harness, name string, cfg func(*Config), armed chan<- time.Time) func() {
	t.Helper()
	c := Config{BotToken: fakeslack.BotToken, AppToken: fakeslack.AppToken, APIURL: h.fake.APIURL(), WorkDir: testWorkDir,
		ConsumerName: name, Approvers: People{Anyone: true}, SigningKey: testSigningKey, Clock: h.clock}
	c.Budgets.Unlimited = true // a clock moved by hand would hold every write
	cfg(&c)
	b, err := New(c, h.st, zerolog.New(zerolog.NewTestWriter(t)).With().Str("bot", name).Logger())
	if err != nil {
		t.Fatal(err)
	}
	b.reach.armed = func(due time.Time) { armed <- due }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Run returned %v after cancel, want nil", name, err)
		}
	}
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			stop()
		}
	})
	return stop
}

// passedAfter returns once a sweeper reported arming for later than t:
// it has looked at the store after the clock reached t.
func passedAfter(t *testing.T, armed <-chan time.Time, after time.Time) {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case due := <-armed:
			if due.After(after) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no reach pass after %v", after)
		}
	}
}

// advanceTo moves h's clock to at and returns once every sweeper whose
// arming armed reports has looked at the store after it.
func advanceTo(t *testing.T, h *harness, at time.Time, armed ...chan time.Time) {
	t.Helper()
	h.clock.Advance(at.Sub(h.clock.Now()))
	for _, a := range armed {
		passedAfter(t, a, at)
	}
}

func TestReminderAndEscalationHappenOnceAcrossReplicasAndARestart(t *testing.T) {
	reach := func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Reach = ReachDefaults{NotifyChannel: notifyChannel, RemindAfter: 10 * time.Minute, EscalateAfter: 30 * time.Minute, EscalateTo: []string{"S0ONCALL"}}
		c.ReconcileInterval = 5 * time.Minute // every replica looks before each step is due
	}
	armed1, armed2, armed3 := make(chan time.Time, 64), make(chan time.Time, 64), make(chan time.Time, 64)
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, cfg: reach, before: func(b *Bot) {
		b.reach.armed = func(due time.Time) { armed1 <- due }
	}})
	h.fake.AddChannel(notifyChannel, "approvals")
	h.fake.AddUserGroup("S0ONCALL", "U3")
	startReplica(t, h, "bot-2", reach, armed2)
	ctx := testCtx(t)
	start := h.clock.Now()
	s := h.newSession(t, "sess-reach")
	r := store.Request{ID: "req-reach", SessionID: s.ID, CLIRequestID: "cli-reach", Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy"}`),
	}, CreatedAt: start}
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	card, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool { return m.FromBot() && hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	cp := h.copyIn(t, notifyChannel)
	// Slack shows the copy a moment before the store records it, and a
	// reminder reaches only the copies recorded.
	h.eventually(t, "the copy recorded", func() bool {
		got, err := h.st.GetRequest(ctx, r.ID)
		return err == nil && len(got.Reach.Copies) == 1
	})

	// U3 is on call, not an approver: before the escalation they may not decide.
	if err := h.fake.Click(ctx, "U3", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed")); err != nil {
		t.Fatal(err)
	}

	remindAt := start.Add(10*time.Minute + time.Second)
	advanceTo(t, h, remindAt, armed1, armed2)
	reminder, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("Still waiting"))
	if err != nil {
		t.Fatalf("no reminder in the card's thread: %v", err)
	}
	if _, err := h.fake.WaitThread(ctx, notifyChannel, cp.TS, fakeslack.Text("Still waiting")); err != nil {
		t.Fatalf("no reminder under the copy: %v", err)
	}
	// A reminder says what, in which project, for whom, links to the
	// card, and decides like the card.
	for _, want := range []string{"make deploy", "*work*", "for <@U1>", "|Open the card>", "<@U2> may decide it"} {
		if !reminder.HasText(want) {
			t.Errorf("the reminder lacks %q: %s", want, reminder.AllText())
		}
	}
	if !hasButton(reminder, "Approve") || !hasButton(reminder, "Deny") {
		t.Errorf("the reminder has no Approve and Deny: %s", reminder.AllText())
	}
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return m.Ref() == card.Ref() && m.HasText("reminded") }); err != nil {
		t.Fatalf("the card does not say it was reminded: %v", err)
	}

	// One replica stops and a new one starts: the store, not memory, says
	// what was done.
	h.stop()
	startReplica(t, h, "bot-3", reach, armed3)
	passedAfter(t, armed3, remindAt)
	// bot-3 counts from when it first saw the request (a store writer
	// could move created_at back): its escalation is due 30 minutes
	// after its start, later than bot-2's; past both, one of them takes it.
	escalateAt := remindAt.Add(30*time.Minute + time.Second)
	advanceTo(t, h, escalateAt, armed2, armed3)
	line, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("Escalated to <!subteam^S0ONCALL>"))
	if err != nil {
		t.Fatalf("no escalation line in the thread: %v", err)
	}
	// It tells the first deciders they still can, and acts like the card.
	if !line.HasText("<@U2> still can") || !line.HasText("|Open the card>") || !hasButton(line, "Approve") {
		t.Errorf("the escalation line %q does not say who still can, link the card and carry its buttons", line.AllText())
	}
	dm := h.copyIn(t, fakeslack.DMChannel("U3"))
	if !dm.HasText("scalated to") {
		t.Errorf("the on-call copy does not say it is an escalation: %s", dm.AllText())
	}
	if n := h.posted("C1", s.Thread.TS, "Still waiting"); n != 1 {
		t.Errorf("%d reminders in the thread, want 1", n)
	}
	if n := h.posted("C1", s.Thread.TS, "Escalated to"); n != 1 {
		t.Errorf("%d escalation lines in the thread, want 1", n)
	}
	if n := h.posted(notifyChannel, cp.TS, "Still waiting"); n != 1 {
		t.Errorf("%d reminders under the copy, want 1", n)
	}
	entries, err := h.st.AuditLog(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[store.AuditAction]int{}
	for _, e := range entries {
		if e.RequestID == r.ID {
			steps[e.Action]++
		}
	}
	if steps[store.AuditReminded] != 1 || steps[store.AuditEscalated] != 1 {
		t.Errorf("audit: %d reminded, %d escalated entries; want 1 each", steps[store.AuditReminded], steps[store.AuditEscalated])
	}

	// Now the on-call person may decide, from their copy.
	if err := h.fake.Click(ctx, "U3", dm.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	got, final := h.waitSettled(t, r, card)
	if got.Decision.By != "U3" || got.Decision.Outcome != store.OutcomeAllow {
		t.Errorf("decision = %+v, want allow by U3", got.Decision)
	}
	if !final.HasText("reminded") || !final.HasText("escalated to") {
		t.Errorf("the settled card lost what was done to reach people: %s", final.AllText())
	}
}

// eventually waits, up to testCtx's bound, for cond: the state the bot
// writes to the store after Slack answered, which no Slack call shows.
func (h *harness) eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := testCtx(t)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("never: %s", what)
		case <-tick.C:
		}
	}
}

// posted counts the bot's posts to channel (thread replies under
// threadTS; "" for top-level ones) whose text held text when posted: a
// reminder is a copy, later edited to show the request as it is.
func (h *harness) posted(channel, threadTS, text string) int {
	n := 0
	for _, c := range h.fake.CallsTo("chat.postMessage") {
		if c.Error == "" && c.Params.Get("channel") == channel && c.Params.Get("thread_ts") == threadTS &&
			strings.Contains(c.Params.Get("text")+c.Params.Get("blocks"), text) {
			n++
		}
	}
	return n
}

// earlyEscalation has a request created at createdAt (by h's clock) that
// escalates to U3 after an hour, marked escalated at once as a store
// writer would, and U3 clicking Approve on its card: refused.
func earlyEscalation(t *testing.T, id string, createdAt func(now time.Time) time.Time) (*harness, store.Request, fakeslack.Message) {
	t.Helper()
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Reach = ReachDefaults{EscalateAfter: time.Hour, EscalateTo: []string{"U3"}}
	}})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-"+id)
	r := store.Request{ID: "req-" + id, SessionID: s.ID, CLIRequestID: "cli-" + id, Kind: store.KindTool, ToolCall: store.ToolCall{
		ToolName: "Bash",
		Input:    json.RawMessage(`{"command":"make deploy"}`),
	}, CreatedAt: createdAt(h.clock.Now())}
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	card, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool { return m.FromBot() && hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	if took, err := h.st.MarkReach(ctx, r.ID, store.ReachMark{Step: store.StepEscalated, At: h.clock.Now(), To: []string{"U3"}}); err != nil || !took {
		t.Fatalf("MarkReach: %v, %v", took, err)
	}
	if err := h.fake.Click(ctx, "U3", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed")); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.st.GetRequest(ctx, r.ID); !got.Pending() {
		t.Errorf("an escalation written into the store early let U3 decide: %+v", got.Decision)
	}
	return h, r, card
}

func TestAStoreWriterCannotEscalateEarly(t *testing.T) {
	earlyEscalation(t, "early", func(now time.Time) time.Time { return now })
}

func TestHomeListsWhatTheViewerMayDecideAndUpdatesWhenDecidedElsewhere(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	r, card := h.sessionWithRequest(t, "req-home")
	for _, u := range []string{"U2", "U3"} {
		if err := h.fake.OpenHome(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool {
		return v.HasText("Waiting for you") && v.HasText("make deploy") && slices.Contains(v.Buttons(), "Approve")
	}); err != nil {
		t.Fatalf("the approver's home does not list the request: %v", err)
	}
	if _, err := h.fake.WaitHome(ctx, "U3", func(v fakeslack.View) bool { return v.HasText("Nothing waits for your decision") }); err != nil {
		t.Fatalf("a non-approver's home lists what they may not decide: %v", err)
	}

	// A second request, decided from the Home itself.
	s2 := h.newSession(t, "sess-home-2")
	r2 := store.Request{ID: "req-home-2", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"make release"}`)}}
	card2 := h.createRequest(t, s2, r2, "Approve")
	r2.SessionID = s2.ID
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("make release") && v.HasText("make deploy") }); err != nil {
		t.Fatalf("the home was not republished for the new request: %v", err)
	}
	if err := h.fake.ClickHome(ctx, "U2", "Approve", "make release"); err != nil {
		t.Fatal(err)
	}
	h.waitSettled(t, r2, card2)

	// The first is decided on its card: the home drops it.
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	h.waitSettled(t, r, card)
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("Nothing waits for your decision") }); err != nil {
		t.Fatalf("the home still lists what was decided: %v", err)
	}
}

// TestHomeListsTwelveAndHowManyMore: past 12 requests the tab says how
// many more wait (the blocks test takes it to 100 beside 40 answers).
func TestHomeListsTwelveAndHowManyMore(t *testing.T) {
	// The subject is the tab, not Slack's pacing of the cards.
	h := newHarness(t, transportSocket, harnessOpts{fake: []fakeslack.Option{fakeslack.WithoutRateModel()}, cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Budgets.Unlimited = true
	}})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-many")
	for i := range 16 {
		r := store.Request{ID: fmt.Sprintf("req-many-%02d", i), SessionID: s.ID, CLIRequestID: "cli", Kind: store.KindTool,
			ToolCall: store.ToolCall{ToolName: "Bash", Input: json.RawMessage(`{"command":"echo ` + strings.Repeat("x", 100) + `"}`)}, CreatedAt: time.Now()}
		if err := h.st.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually(t, "every card recorded", func() bool {
		got, err := h.st.ListPending(ctx, s.ID)
		return err == nil && len(got) == 16 && !slices.ContainsFunc(got, func(r store.Request) bool { return r.Card.IsZero() })
	})
	if err := h.fake.OpenHome(ctx, "U2"); err != nil {
		t.Fatal(err)
	}
	// fakeslack refuses a view over Slack's limits, so one published is within them.
	v, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("4 more") })
	if err != nil {
		t.Fatalf("no home listing 12 and 4 more: %v", err)
	}
	if n := strings.Count(string(v.Raw), `"type":"actions"`); n != 12 {
		t.Errorf("%d requests with buttons in the home, want 12", n)
	}
}

func TestAPolicyRulesAskOverridesEachReachDefault(t *testing.T) {
	defaults := ReachDefaults{NotifyChannel: "C1", NotifyDM: true, RemindAfter: time.Minute, EscalateAfter: time.Hour, EscalateTo: []string{"U9"}}
	base := defaults.plan(People{IDs: []string{"U1", "S1"}})
	for _, tc := range []struct {
		name string
		ask  reachAsk
		want reachPlan
	}{
		{"nothing said keeps the defaults", reachAsk{}, base},
		{"notify replaces the channel and the DMs", reachAsk{notify: []string{"C2", "U3"}},
			reachPlan{deciders: base.deciders, notify: []string{"C2", "U3"}, remindAfter: time.Minute, escalateAfter: time.Hour, escalateTo: []string{"U9"}}},
		{"approvers and times", reachAsk{approvers: []string{"S0SRE"}, remindAfter: 10 * time.Minute, escalateAfter: 30 * time.Minute, escalateTo: []string{"S0ONCALL"}},
			reachPlan{deciders: []string{"S0SRE"}, notify: []string{"C1"}, dm: true, remindAfter: 10 * time.Minute, escalateAfter: 30 * time.Minute, escalateTo: []string{"S0ONCALL"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := base.with(tc.ask); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("plan = %+v, want %+v", got, tc.want)
			}
		})
	}
	if p := (ReachDefaults{}).plan(People{Anyone: true}); fmt.Sprint(p.deciders) != "[*]" || p.dm || len(p.notify) > 0 {
		t.Errorf("APPROVERS=* with no reach settings: %+v", p)
	}
}

func TestReachSettingsThatCannotWorkAreRefused(t *testing.T) {
	for _, d := range []ReachDefaults{
		{NotifyChannel: "U1"},
		{RemindAfter: -time.Second},
		{EscalateAfter: time.Hour},
		{EscalateTo: []string{"U1"}},
		{EscalateAfter: time.Hour, EscalateTo: []string{"#oncall"}},
	} {
		if err := d.validate(); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
	if err := (ReachDefaults{NotifyChannel: "C1", NotifyDM: true, RemindAfter: time.Minute, EscalateAfter: time.Hour, EscalateTo: []string{"S1", "U2"}}).validate(); err != nil {
		t.Errorf("a good setting refused: %v", err)
	}
}

// A store writer who moves a pending request's created_at back (and marks
// it escalated) does not let escalate_to decide it: the escalation clock
// starts when the bot first saw the request, by the bot's own clock.
func TestAStoreWriterCannotBackdateARequestIntoItsEscalation(t *testing.T) {
	h, r, card := earlyEscalation(t, "backdated", func(now time.Time) time.Time { return now.Add(-2 * time.Hour) })
	// An hour after the bot first saw it, the escalation has come.
	h.clock.Advance(time.Hour + time.Second)
	if err := h.fake.Click(testCtx(t), "U3", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.waitSettled(t, r, card); got.Decision.By != "U3" {
		t.Errorf("after the hour: %+v, want U3's approval", got.Decision)
	}
}
