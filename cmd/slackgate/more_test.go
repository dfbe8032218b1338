package main

// More end-to-end scenarios: plans, expiry, DMs, /claude, bot and workers as
// separate programs on Redis, a restart on the same DATA_DIR, and forged
// HTTP requests. Each checks what a person sees in Slack and what Claude got.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// cardIn is card for any channel: it waits for a bot message with buttons
// in the thread (channel, thread) that contains text.
func (a *app) cardIn(channel, thread, text string) fakeslack.Message {
	a.t.Helper()
	m, err := a.slack.WaitThread(a.ctx, channel, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText(text) && len(m.Buttons()) > 0
	})
	if err != nil {
		a.t.Fatalf("no card with %q in %s/%s: %v", text, channel, thread, err)
	}
	return m
}

// lastRequest is the newest main call the model got.
func (a *app) lastRequest() relaytest.Request {
	a.t.Helper()
	reqs := a.model.Requests()
	if len(reqs) == 0 {
		a.t.Fatal("the model got no request")
	}
	return reqs[len(reqs)-1]
}

// blockActions builds the block_actions payload Slack sends when user
// presses the button labelled label on m, as m looked then (a card that
// has changed since is exactly what a stale or forged click carries).
func blockActions(t testing.TB, user string, m fakeslack.Message, label string) []byte {
	t.Helper()
	var bs []struct {
		BlockID  string           `json:"block_id"`
		Elements []map[string]any `json:"elements"`
	}
	if err := json.Unmarshal(m.RawBlocks, &bs); err != nil {
		t.Fatalf("card blocks: %v", err)
	}
	var action map[string]any
	for _, b := range bs {
		for _, el := range b.Elements {
			text, _ := el["text"].(map[string]any)
			if el["type"] == "button" && text["text"] == label {
				action = map[string]any{"type": "button", "block_id": b.BlockID, "action_id": el["action_id"],
					"value": el["value"], "text": text, "action_ts": fmt.Sprint(time.Now().Unix()) + ".000100"}
			}
		}
	}
	if action == nil {
		t.Fatalf("the card has no %q button: %q", label, m.Buttons())
	}
	container := map[string]any{"type": "message", "message_ts": m.TS, "channel_id": m.Channel, "is_ephemeral": false}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
	}
	payload, err := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": user, "team_id": fakeslack.TeamID},
		"api_app_id": fakeslack.AppID,
		"token":      fakeslack.VerificationToken,
		"container":  container,
		"trigger_id": "1.2.forged",
		"team":       map[string]any{"id": fakeslack.TeamID, "domain": fakeslack.TeamDomain},
		"channel":    map[string]any{"id": m.Channel},
		"message":    map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "blocks": m.RawBlocks},
		"actions":    []any{action},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(url.Values{"payload": {string(payload)}}.Encode())
}

// postInteractive POSTs body to the app's /slack/interactive (HTTP mode)
// with the given signature headers (none when sig is "") and returns the
// status code.
func (a *app) postInteractive(body []byte, ts time.Time, sig string) int {
	a.t.Helper()
	if a.prog.listener == nil {
		a.t.Fatal("postInteractive needs an app in HTTP mode")
	}
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost,
		"http://"+a.prog.listener.Addr().String()+fakeslack.DefaultInteractivePath, bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("X-Slack-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("POST /slack/interactive: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signedClick delivers a click on m as it looked (see blockActions),
// correctly signed, the way Slack delivers a click on an old rendering.
func (a *app) signedClick(user string, m fakeslack.Message, label string) {
	a.t.Helper()
	body := blockActions(a.t, user, m, label)
	now := time.Now()
	if code := a.postInteractive(body, now, fakeslack.Sign(signingSecret, now, body)); code != http.StatusOK {
		a.t.Fatalf("a correctly signed click got HTTP %d, want 200", code)
	}
}

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

func TestUnansweredRequestExpiresAndALateClickChangesNothing(t *testing.T) {
	t.Parallel()
	// HTTP mode: the late click is delivered from the card as it looked
	// while pending, the way a client that has not refreshed sends it.
	a := startApp(t, options{transport: httpMode, approvers: lee, configure: func(c *Config) { c.RequestTimeout = 2 * time.Second }},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo late > late.txt", "Too late")),
		relaytest.Text("skipping it"))
	thread := a.mention("write late.txt")
	card := a.card(thread, "echo late")
	posted := time.Now()

	// Nobody clicks: the 2 s timeout is the feature under test.
	final := a.settled(card.Ref(), "Expired")
	if !final.HasText("nobody answered in time") {
		t.Errorf("the expired card should say why: %s", final.AllText())
	}
	res := a.toolResult("toolu_1")
	if !res.IsError || !strings.Contains(res.Content, "Nobody answered") || !strings.Contains(res.Content, "within the timeout (2s)") {
		t.Errorf("the model got %q (is_error %v), want a deny naming the timeout", res.Content, res.IsError)
	}
	if waited := time.Since(posted); waited > 30*time.Second {
		t.Errorf("expiry took %s after the card appeared, want about 2s", waited)
	}
	// The card shows the expiry the worker stored: counted as the system's.
	if _, body := get(t, a.ops+"/metrics"); metricValue(t, body, "slackgate_decisions_total", `decider="system",outcome="expired"`) != 1 {
		t.Errorf("one request expired; metrics say:\n%s", grepLines(body, "slackgate_decisions_total"))
	}
	a.threadText(thread, "skipping it")

	a.signedClick(lee, card, "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, lee, fakeslack.Text("Expired")); err != nil {
		t.Fatalf("the late clicker was not told the request expired: %v", err)
	}
	now, _ := a.slack.Message(card.Ref())
	if !now.HasText("Expired") || now.HasText("Approved") || len(now.Buttons()) > 0 {
		t.Errorf("the late click changed the card: %s (buttons %q)", now.AllText(), now.Buttons())
	}
	a.noFile("late.txt")
	if reqs := a.model.Requests(); len(reqs) != 2 {
		t.Errorf("the model got %d calls, want 2: the late click must not start anything", len(reqs))
	}
}

func TestDirectMessageStartsASessionInTheDM(t *testing.T) {
	t.Parallel()
	dmDir := t.TempDir()
	a := startApp(t, options{configure: func(c *Config) { c.AllowDMs, c.DMWorkDir = true, dmDir }},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo private > dm.txt", "Write dm.txt")),
		relaytest.Text("Done in the DM."))
	dm := fakeslack.DMChannel(dana)
	thread, err := a.slack.DM(a.ctx, dana, "write dm.txt please")
	if err != nil {
		t.Fatalf("DM: %v", err)
	}
	card := a.cardIn(dm, thread, "echo private")
	a.click(dana, card.Ref(), "Approve")

	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got, err := os.ReadFile(filepath.Join(dmDir, "dm.txt")); string(got) != "private\n" {
		t.Errorf("DM_WORKDIR/dm.txt = %q (%v), want the command's output: a DM session runs in DM_WORKDIR", got, err)
	}
	a.noFile("dm.txt") // never in CLAUDE_WORKDIR
	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Approved") && m.HasText("<@"+dana+">") && len(m.Buttons()) == 0
	}); err != nil {
		cur, _ := a.slack.Message(card.Ref())
		t.Fatalf("the DM card never settled naming dana: %v\ncard now: %s", err, cur.AllText())
	}
	if _, err := a.slack.WaitThread(a.ctx, dm, thread, func(m fakeslack.Message) bool {
		return m.FromBot() && m.HasText("Done in the DM.")
	}); err != nil {
		t.Fatalf("Claude's answer did not reach the DM thread: %v", err)
	}
	if got := a.lastRequest().UserTexts(); !strings.Contains(strings.Join(got, "\n"), "write dm.txt please") {
		t.Errorf("the model did not get the DM's text; user texts %q", got)
	}
	for _, m := range a.slack.Messages(general) {
		if m.FromBot() {
			t.Errorf("a DM session posted in #general: %s", m.AllText())
		}
	}
}

func TestSlashCommandPostsTheSessionStartAndWorksUnderIt(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo via-slash > slash.txt", "Slash")),
		relaytest.Text("Slash done."))
	if err := a.slack.SlashCommand(a.ctx, dana, general, "/claude", "write slash.txt"); err != nil {
		t.Fatalf("/claude: %v", err)
	}
	start, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Channel == general && m.ThreadTS == "" && m.FromBot() && m.HasText("write slash.txt")
	})
	if err != nil {
		t.Fatalf("the bot never posted the session's first message: %v", err)
	}
	if !start.HasText("<@" + dana + ">") {
		t.Errorf("the first message should say who started the session: %s", start.AllText())
	}
	card := a.card(start.TS, "echo via-slash")
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got := a.file("slash.txt"); got != "via-slash\n" {
		t.Errorf("slash.txt = %q, want the command's output", got)
	}
	a.settled(card.Ref(), "Approved")
	a.threadText(start.TS, "Slash done.")
	if got := a.lastRequest().UserTexts(); !strings.Contains(strings.Join(got, "\n"), "write slash.txt") {
		t.Errorf("the model did not get the command's text; user texts %q", got)
	}
}

// TestBotAndWorkersAsSeparateProgramsOnRedis runs on one Redis server and
// on a 3-node Redis Cluster, where the store's keys spread over the nodes.
func TestBotAndWorkersAsSeparateProgramsOnRedis(t *testing.T) {
	t.Parallel()
	for _, be := range []backend{redisBackend, clusterBackend} {
		t.Run(string(be), func(t *testing.T) {
			t.Parallel()
			botAndWorkersAsSeparatePrograms(t, be)
		})
	}
}

func botAndWorkersAsSeparatePrograms(t *testing.T, be backend) {
	a := startApp(t, options{backend: be, command: "bot", approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo built > build.txt", "Build")),
		relaytest.Text("Built."),
		relaytest.Text("The build wrote build.txt."))
	// Each worker's CLI has a home of its own, as on two machines: the
	// second resumes the session from the transcript the first saved to
	// Redis.
	stopFirst := a.launch("worker-1", "worker", withWorkerID("worker-1"), "HOME="+t.TempDir())
	thread := a.mention("build it")
	card := a.card(thread, "echo built")
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the model got an error result: %q", res.Content)
	}
	if got := a.file("build.txt"); got != "built\n" {
		t.Errorf("build.txt = %q, want the command's output", got)
	}
	a.settled(card.Ref(), "Approved")
	a.threadText(thread, "Built.")
	a.threadText(thread, "Done: reply in this thread") // the turn has ended

	a.launch("worker-2", "worker", withWorkerID("worker-2"), "HOME="+t.TempDir())
	stopFirst() // its idle claude stops with it; the session is released
	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "what did the build write?"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "The build wrote build.txt.")
	last := a.lastRequest()
	texts := strings.Join(last.UserTexts(), "\n")
	if !strings.Contains(texts, "build it") || !strings.Contains(texts, "what did the build write?") {
		t.Errorf("the resumed turn should carry the first turn; user texts %q", last.UserTexts())
	}
	if tr, ok := last.ToolResult("toolu_1"); !ok || tr.IsError {
		t.Errorf("the resumed conversation lacks the approved command's result (found %v: %+v)", ok, tr)
	}
}

func TestRestartOnTheSameDataDirLosesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo never > never.txt", "Never approved")),
		relaytest.Text("Picked up after the restart."))
	thread := a.mention("write never.txt")
	card := a.card(thread, "echo never")
	// The status line changes once the bot has recorded where the card is;
	// stopping before that is TestRestartWhileTheCardIsBeingPosted.
	a.threadText(thread, "Waiting for approval")

	a.restart()
	final, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Session ended") && len(m.Buttons()) == 0
	})
	if err != nil {
		t.Fatalf("the card never settled showing the session ended: %v\nthread: %s", err, a.dump(thread))
	}
	if !final.HasText("before anyone answered") {
		t.Errorf("the ended card should say nobody answered: %s", final.AllText())
	}
	a.noFile("never.txt")
	// Stopping aborts the turn: Claude is not asked to carry on (and run
	// tools that need no approval) while slackgate goes away.
	if n := len(a.model.Requests()); n != 1 {
		t.Errorf("the model was called %d times before the restart, want 1 (the turn must be aborted, not continued)", n)
	}

	if _, err := a.slack.Reply(a.ctx, dana, general, thread, "carry on"); err != nil {
		t.Fatal(err)
	}
	a.threadText(thread, "Picked up after the restart.")
	last := a.lastRequest()
	texts := strings.Join(last.UserTexts(), "\n")
	if !strings.Contains(texts, "write never.txt") || !strings.Contains(texts, "carry on") {
		t.Errorf("the resumed turn should carry the conversation before the restart; user texts %q", last.UserTexts())
	}
	a.noFile("never.txt")
}

func TestForgedInteractionIsRejectedAndChangesNothing(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{transport: httpMode},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo approved > forged.txt", "Guarded")),
		relaytest.Text("done"))
	thread := a.mention("guarded change")
	card := a.card(thread, "echo approved")

	// kim's click, as Slack would send it, but not signed by Slack.
	body := blockActions(t, kim, card, "Approve")
	now := time.Now()
	tests := []struct {
		name string
		ts   time.Time
		sig  string
	}{
		{"no signature", now, ""},
		{"signed with another secret", now, fakeslack.Sign("not-the-signing-secret", now, body)},
		{"signature of another body", now, fakeslack.Sign(signingSecret, now, []byte("payload=%7B%7D"))},
		{"replayed: correct signature, timestamp ten minutes old", now.Add(-10 * time.Minute),
			fakeslack.Sign(signingSecret, now.Add(-10*time.Minute), body)},
	}
	for _, tt := range tests {
		if code := a.postInteractive(body, tt.ts, tt.sig); code != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d, want 401", tt.name, code)
		}
	}
	// The rejections happen before any work starts, so the card is as it was.
	if m, _ := a.slack.Message(card.Ref()); len(m.Buttons()) == 0 || m.Updated != card.Updated {
		t.Fatalf("a forged request changed the card: %s", m.AllText())
	}
	if _, ok := a.model.ToolResult("toolu_1"); ok {
		t.Fatal("the model got a result after forged requests")
	}
	a.noFile("forged.txt")

	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError {
		t.Fatalf("the real click did not approve: %q", res.Content)
	}
	final := a.settled(card.Ref(), "Approved")
	if !final.HasText("<@"+lee+">") || final.HasText("<@"+kim+">") {
		t.Errorf("the card should name lee, who really clicked, not kim: %s", final.AllText())
	}
	if got := a.file("forged.txt"); got != "approved\n" {
		t.Errorf("forged.txt = %q, want the command's output", got)
	}

	// The forged body was a well-formed click: signed properly it reaches
	// the app, which tells kim the request was already settled by lee.
	a.signedClick(kim, card, "Approve")
	if _, err := a.slack.WaitEphemeral(a.ctx, kim, fakeslack.Text("<@"+lee+">")); err != nil {
		t.Errorf("the same click, signed, was not handled: %v", err)
	}
}

// TestRestartWhileTheCardIsBeingPosted stops slackgate the moment the card
// shows up in Slack, before the bot has recorded where it is. The restarted
// bot must still settle that card rather than post a second one.
func TestRestartWhileTheCardIsBeingPosted(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo never > never.txt", "Never approved")))
	thread := a.mention("write never.txt")
	card := a.card(thread, "echo never")
	a.restart()

	if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && m.HasText("Session ended") && len(m.Buttons()) == 0
	}); err != nil {
		t.Fatalf("the card never settled showing the session ended: %v\nthread: %s", err, a.dump(thread))
	}
	a.threadText(thread, "Claude exited") // the old program's last event is shown, so every card is too
	cards := 0
	for _, m := range a.slack.Thread(general, thread) {
		// Pending, the card says "wants to run `echo never…"; settled, "did not run `echo never…".
		if m.FromBot() && m.HasText("run `echo never") {
			cards++
		}
	}
	if cards != 1 {
		t.Errorf("%d cards for one request, want 1:%s", cards, a.dump(thread))
	}
}
