package main

// End-to-end tests of what reaches HTTP mode's endpoints: only what Slack
// signed, recently, for the body it came with; a click replayed from an old
// rendering of a card is handled as the card stands now.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

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
	a.tb.Helper()
	if a.prog.listener == nil {
		a.tb.Fatal("postInteractive needs an app in HTTP mode")
	}
	req, err := http.NewRequestWithContext(a.ctx, http.MethodPost,
		"http://"+a.prog.listener.Addr().String()+fakeslack.DefaultInteractivePath, bytes.NewReader(body))
	if err != nil {
		a.tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
		req.Header.Set("X-Slack-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.tb.Fatalf("POST /slack/interactive: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signedClick delivers a click on m as it looked (see blockActions),
// correctly signed, the way Slack delivers a click on an old rendering.
func (a *app) signedClick(user string, m fakeslack.Message, label string) {
	a.tb.Helper()
	body := blockActions(a.tb, user, m, label)
	now := time.Now()
	if code := a.postInteractive(body, now, fakeslack.Sign(signingSecret, now, body)); code != http.StatusOK {
		a.tb.Fatalf("a correctly signed click got HTTP %d, want 200", code)
	}
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
	if !final.HasText("nobody answered within 2 seconds") || final.HasText("within the timeout") {
		t.Errorf("the expired card should say why in people's words, not Claude's: %s", final.AllText())
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
