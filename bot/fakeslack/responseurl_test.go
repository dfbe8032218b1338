package fakeslack_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store/storetest"
)

// outcome is what an app shows in place of a card once it is decided.
func outcome(text string) []slack.Block {
	return []slack.Block{slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)}
}

// respond replaces the clicked message through the click's response_url,
// as the app does.
func respond(api *slack.Client, url, text string) error {
	_, _, err := api.PostMessage("", slack.MsgOptionReplaceOriginal(url), slack.MsgOptionText(text, false), slack.MsgOptionBlocks(outcome(text)...))
	return err
}

func statusOf(err error) int {
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code
	}
	return 0
}

func TestResponseURLReplacesTheClickedMessageWithoutTheUpdateBudget(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	api := client(f)
	ref := clickCard(ctx, t, f, "approval needed", "Approve")
	last := a.click(-1)
	if last.ResponseURL == "" {
		t.Fatal("a click carries no response_url")
	}
	// Spend the workspace's whole chat.update burst: the response_url
	// must still work.
	for i := range 21 {
		_, _, _, err := api.UpdateMessageContext(ctx, ref.Channel, ref.TS, slack.MsgOptionText("edited", false), slack.MsgOptionBlocks(card("v1")...))
		var limited *slack.RateLimitedError
		if i < 20 && err != nil || i == 20 && !errors.As(err, &limited) {
			t.Fatalf("chat.update %d: %v (want the 21st answered 429)", i, err)
		}
	}
	if err := respond(api, last.ResponseURL, "✅ Approved by alice"); err != nil {
		t.Fatalf("respond: %v", err)
	}
	m, _ := f.Message(ref)
	if !m.HasText("Approved by alice") || len(m.Buttons()) != 0 || m.Replaced != 1 || m.Updated != 20 {
		t.Errorf("message after respond = %q buttons %q replaced %d updated %d", m.AllText(), m.Buttons(), m.Replaced, m.Updated)
	}
	if calls := f.CallsTo(fakeslack.ResponseURLMethod); len(calls) != 1 || calls[0].Params.Get("replace_original") != "true" {
		t.Errorf("response_url calls = %+v", calls)
	}
}

func TestResponseURLAnswersUsedURLAfterFiveUses(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	api := client(f)
	ref := clickCard(ctx, t, f, "approval needed", "Approve")
	url := a.click(-1).ResponseURL
	for i := range fakeslack.ResponseURLUses {
		if err := respond(api, url, "state "+string(rune('A'+i))); err != nil {
			t.Fatalf("use %d: %v", i+1, err)
		}
	}
	err := respond(api, url, "one too many")
	if statusOf(err) != http.StatusNotFound {
		t.Fatalf("sixth use: %v, want 404", err)
	}
	m, _ := f.Message(ref)
	if !m.HasText("state E") || m.HasText("one too many") {
		t.Errorf("message = %q, want the fifth use's state", m.AllText())
	}
	calls := f.CallsTo(fakeslack.ResponseURLMethod)
	if got := calls[len(calls)-1].Error; got != "used_url" {
		t.Errorf("sixth use answered %q, want used_url", got)
	}
}

func TestResponseURLExpiresThirtyMinutesAfterTheClick(t *testing.T) {
	ctx := testCtx(t)
	clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	a := &app{}
	f := socketWorkspace(ctx, t, a, fakeslack.WithClock(clock))
	api := client(f)
	ref := clickCard(ctx, t, f, "approval needed", "Approve")
	url := a.click(-1).ResponseURL
	clock.Advance(fakeslack.ResponseURLTTL)
	if err := respond(api, url, "just in time"); err != nil {
		t.Fatalf("respond at 30 minutes: %v", err)
	}
	clock.Advance(time.Second)
	if err := respond(api, url, "too late"); statusOf(err) != http.StatusNotFound {
		t.Fatalf("respond after 30 minutes: %v, want 404", err)
	}
	calls := f.CallsTo(fakeslack.ResponseURLMethod)
	if got := calls[len(calls)-1].Error; got != "expired_url" {
		t.Errorf("late use answered %q, want expired_url", got)
	}
	if m, _ := f.Message(ref); !m.HasText("just in time") {
		t.Errorf("message = %q", m.AllText())
	}
}

func TestResponseURLChecksSlacksLimitsAndCanBeFailed(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a, fakeslack.AllowRejections())
	api := client(f)
	ref := clickCard(ctx, t, f, "approval needed", "Approve")
	url := a.click(-1).ResponseURL
	long := make([]byte, 3001)
	for i := range long {
		long[i] = 'x'
	}
	if err := respond(api, url, string(long)); statusOf(err) != http.StatusBadRequest {
		t.Fatalf("a section over 3000 chars: %v, want 400", err)
	}
	if rej := f.Rejections(); len(rej) != 1 || rej[0].Method != fakeslack.ResponseURLMethod || rej[0].Error != "invalid_blocks" {
		t.Errorf("rejections = %v", rej)
	}
	f.FailNext(fakeslack.ResponseURLMethod, 1, "expired_url")
	if err := respond(api, url, "failed on purpose"); statusOf(err) != http.StatusNotFound {
		t.Fatalf("an injected failure: %v, want 404", err)
	}
	if m, _ := f.Message(ref); len(m.Buttons()) != 2 {
		t.Errorf("a refused response changed the card: %q", m.AllText())
	}
	// Without replace_original, Slack shows the clicker a new ephemeral.
	if _, _, err := api.PostMessage("", slack.MsgOptionResponseURL(url, slack.ResponseTypeEphemeral), slack.MsgOptionText("only you", false)); err != nil {
		t.Fatalf("ephemeral response: %v", err)
	}
	if e := f.Ephemerals("U1"); len(e) != 1 || e[0].Text != "only you" {
		t.Errorf("ephemerals = %+v", e)
	}
}
