package main

// End-to-end tests of who may act: starting, replying, replaying a signed
// request, and the per-person bounds. Each checks what the refused person
// is told and that nothing reached Claude.

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// told waits for the ephemeral user gets that contains text.
func (a *app) told(user, text string) fakeslack.Message {
	a.tb.Helper()
	m, err := a.slack.WaitEphemeral(a.ctx, user, fakeslack.Text(text))
	if err != nil {
		a.tb.Fatalf("%s was never told %q: %v", user, text, err)
	}
	return m
}

// modelNeverGot checks that no call to the model carried text.
func (a *app) modelNeverGot(text string) {
	a.tb.Helper()
	for _, r := range a.model.Requests() {
		for _, u := range r.UserTexts() {
			if strings.Contains(u, text) {
				a.tb.Errorf("the model got %q, which was refused", u)
			}
		}
	}
}

func TestAStrangerReplyingInSomeonesThreadReachesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.Text("Started."),
		relaytest.Text("Got the starter's follow-up."))
	thread := a.mention("start something")
	a.threadText(thread, "Started.")

	if _, err := a.slack.Reply(a.ctx, sam, general, thread, "cat ~/.ssh/id_rsa for me"); err != nil {
		t.Fatal(err)
	}
	eph := a.told(sam, "can send Claude messages in this thread")
	if !strings.Contains(eph.Text, "<@"+dana+">") || !strings.Contains(eph.Text, "<@"+lee+">") {
		t.Errorf("the refusal does not say who may reply: %q", eph.Text)
	}
	// The starter's reply after it is the next thing Claude hears.
	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "now the docs"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "Got the starter's follow-up.")
	if got := a.lastRequest().LastUserText(); !strings.Contains(got, "now the docs") {
		t.Errorf("the model's last user text = %q, want the starter's reply", got)
	}
	a.modelNeverGot(".ssh")
}

func TestADirectMessageIsRefusedWhileDMsAreOff(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{}, relaytest.Text("should never run"))
	if _, err := a.slack.DM(a.ctx, dana, "read .env"); err != nil {
		t.Fatal(err)
	}
	a.told(dana, "Direct messages to me are turned off")
	if n := len(a.model.Requests()); n != 0 {
		t.Errorf("the model got %d calls for a refused DM", n)
	}
}

func TestStartsAreLimitedToStartersAndAllowedChannels(t *testing.T) {
	t.Parallel()
	const random = "C0RANDOM"
	a := startApp(t, options{starters: dana, configure: func(c *Config) { c.AllowedChannels = general }},
		relaytest.Text("Only dana's start in #general runs."))
	a.slack.AddChannel(random, "random")

	if _, err := a.slack.Mention(a.ctx, sam, general, "sam wants in"); err != nil {
		t.Fatal(err)
	}
	a.told(sam, "can start Claude sessions")
	if err := a.slack.SlashCommand(a.ctx, kim, general, "/claude", "kim by command"); err != nil {
		t.Fatal(err)
	}
	a.told(kim, "can start Claude sessions")
	if _, err := a.slack.Mention(a.ctx, dana, random, "in the wrong channel"); err != nil {
		t.Fatal(err)
	}
	a.told(dana, "not in ALLOWED_CHANNELS")

	thread := a.mention("dana in general")
	a.threadText(thread, "Only dana's start in #general runs.")
	if n := len(a.model.Requests()); n != 1 {
		t.Errorf("the model got %d calls, want 1: only dana's start in #general", n)
	}
	a.modelNeverGot("sam wants in")
	a.modelNeverGot("kim by command")
	a.modelNeverGot("wrong channel")
	for _, m := range a.slack.Messages(random) {
		if m.FromBot() {
			t.Errorf("the bot posted in #random: %s", m.AllText())
		}
	}
}

func TestStartersDefaultToTheApproversInProduction(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee, defaultStarters: true}, relaytest.Text("lee's session runs."))
	if _, err := a.slack.Mention(a.ctx, dana, general, "dana is no approver"); err != nil {
		t.Fatal(err)
	}
	if eph := a.told(dana, "can start Claude sessions"); !strings.Contains(eph.Text, "<@"+lee+">") {
		t.Errorf("the refusal does not say who may start: %q", eph.Text)
	}
	if err := a.slack.SlashCommand(a.ctx, sam, general, "/claude", "sam by command"); err != nil {
		t.Fatal(err)
	}
	a.told(sam, "can start Claude sessions")
	thread, err := a.slack.Mention(a.ctx, lee, general, "lee starts")
	if err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "lee's session runs.")
	if n := len(a.model.Requests()); n != 1 {
		t.Errorf("the model got %d calls, want 1: only lee's start", n)
	}
	a.modelNeverGot("dana is no approver")
	a.modelNeverGot("sam by command")
}

func TestPeopleOfAnotherTeamReachNothingUnlessItIsAllowed(t *testing.T) {
	t.Parallel()
	const eve, pat = "U9EVE", "U9PAT" // a Slack Connect stranger, and a partner whose team is listed
	a := startApp(t, options{configure: func(c *Config) { c.AllowedTeams = "T0PARTNER" }}, relaytest.Text("The partner's session runs."))
	a.slack.AddExternalUser(eve, "eve", "T0STRANGER", "E0STRANGER")
	a.slack.AddExternalUser(pat, "pat", "T0PARTNER", "")
	if _, err := a.slack.Mention(a.ctx, eve, general, "eve wants a shell"); err != nil {
		t.Fatal(err)
	}
	a.told(eve, "belongs to another workspace or organization")
	thread, err := a.slack.Mention(a.ctx, pat, general, "pat starts")
	if err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "The partner's session runs.")
	if _, err := a.slack.Reply(a.ctx, eve, general, thread, "and mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitEphemeral(a.ctx, eve, func(m fakeslack.Message) bool {
		return m.ThreadTS == thread && m.HasText("belongs to another workspace or organization")
	}); err != nil {
		t.Errorf("eve's reply in the partner's thread: %v", err)
	}
	if n := len(a.model.Requests()); n != 1 {
		t.Errorf("the model got %d calls, want 1: only the partner's start", n)
	}
	a.modelNeverGot("eve wants a shell")
	a.modelNeverGot("and mine")
}

func TestAReplayedSlashCommandIsRefused(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{transport: httpMode}, relaytest.Text("One session."))
	body := []byte(url.Values{
		"command": {"/claude"}, "text": {"write once"}, "user_id": {dana}, "user_name": {"dana"},
		"channel_id": {general}, "team_id": {fakeslack.TeamID}, "api_app_id": {fakeslack.AppID},
	}.Encode())
	now := time.Now()
	sig := fakeslack.Sign(signingSecret, now, body)
	post := func() int {
		t.Helper()
		req, err := http.NewRequestWithContext(a.ctx, http.MethodPost, "http://"+a.prog.listener.Addr().String()+"/slack/commands", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("X-Slack-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusOK {
		t.Fatalf("the signed /claude got HTTP %d", code)
	}
	if code := post(); code != http.StatusUnauthorized {
		t.Errorf("the replayed /claude got HTTP %d, want 401", code)
	}
	root, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText("started a Claude session")
	})
	if err != nil {
		t.Fatal(err)
	}
	a.threadText(root.TS, "One session.")
	if !strings.Contains(a.logs.String(), "replayed request") {
		t.Error("the replay was not logged")
	}
	starts := 0
	for _, m := range a.slack.Messages(general) {
		if m.FromBot() && m.HasText("started a Claude session") {
			starts++
		}
	}
	if n := len(a.model.Requests()); starts != 1 || n != 1 {
		t.Errorf("%d session starts and %d model calls, want exactly one of each", starts, n)
	}
}

func TestAPersonOverMaxSessionsPerUserIsRefused(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee, configure: func(c *Config) { c.MaxSessionsPerUser = 1 }},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo one > one.txt", "Keeps the first session running")))
	thread := a.mention("first session")
	a.card(thread, "echo one") // waiting for lee: the session is running

	if _, err := a.slack.Mention(a.ctx, dana, general, "second session"); err != nil {
		t.Fatal(err)
	}
	a.told(dana, "MAX_SESSIONS_PER_USER=1")
	a.modelNeverGot("second session")
	// kim has no session: the bound is per person.
	if _, err := a.slack.Mention(a.ctx, kim, general, "kim's own"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.model.WaitRequests(a.ctx, 2); err != nil {
		t.Errorf("kim's session never reached the model: %v", err)
	}
}
