package fakeslack_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func client(f *fakeslack.Fake) *slack.Client {
	return slack.New(fakeslack.BotToken, slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken(fakeslack.AppToken))
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// card is a small approval card that passes Slack's limits.
func card(prefix string) []slack.Block {
	return []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Bash* wants to run `ls`", false, false), nil, nil,
			slack.SectionBlockOptionBlockID(prefix+"-sec")),
		slack.NewActionBlock(prefix+"-act",
			slack.NewButtonBlockElement("approve", "req-1", slack.NewTextBlockObject(slack.PlainTextType, "Approve", false, false)).WithStyle(slack.StylePrimary),
			slack.NewButtonBlockElement("deny", "req-1", slack.NewTextBlockObject(slack.PlainTextType, "Deny", false, false)).WithStyle(slack.StyleDanger),
			slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, slack.NewTextBlockObject(slack.PlainTextType, "Pick a mode", false, false), "mode",
				slack.NewOptionBlockObject("once", slack.NewTextBlockObject(slack.PlainTextType, "Just once", false, false), nil),
				slack.NewOptionBlockObject("always", slack.NewTextBlockObject(slack.PlainTextType, "Always", false, false), nil)),
		),
	}
}

func modal() slack.ModalViewRequest {
	input := slack.NewInputBlock("answer", slack.NewTextBlockObject(slack.PlainTextType, "Your answer", false, false), nil,
		slack.NewPlainTextInputBlockElement(nil, "answer_text"))
	choice := slack.NewInputBlock("choice", slack.NewTextBlockObject(slack.PlainTextType, "Which one", false, false), nil,
		slack.NewRadioButtonsBlockElement("choice_radio",
			slack.NewOptionBlockObject("a", slack.NewTextBlockObject(slack.PlainTextType, "Option A", false, false), nil),
			slack.NewOptionBlockObject("b", slack.NewTextBlockObject(slack.PlainTextType, "Option B", false, false), nil)))
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           slack.NewTextBlockObject(slack.PlainTextType, "Claude asks", false, false),
		Submit:          slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false),
		Close:           slack.NewTextBlockObject(slack.PlainTextType, "Cancel", false, false),
		Blocks:          slack.Blocks{BlockSet: []slack.Block{input, choice}},
		CallbackID:      "question",
		PrivateMetadata: "req-1",
		NotifyOnClose:   true,
	}
}

func TestWebAPIRecordsPostsUpdatesAndUploadsFromSlackGo(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	api := client(f)

	ch, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("approval needed", false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if ch != "C1" || ts == "" {
		t.Fatalf("post returned %q %q", ch, ts)
	}
	_, replyTS, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("working on it", false), slack.MsgOptionTS(ts))
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	if replyTS == ts {
		t.Fatalf("two posts got the same ts %s", ts)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("approved by alice", false),
		slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Approved by <@U1>", false, false), nil, nil))); err != nil {
		t.Fatalf("update: %v", err)
	}
	file, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "diff.patch", Title: "The diff", Content: "+hello\n",
		FileSize: 7, Channel: "C1", ThreadTimestamp: ts})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}

	msgs := f.Messages("C1")
	if len(msgs) != 3 {
		t.Fatalf("want 3 messages (card, reply, file share), got %d", len(msgs))
	}
	first := msgs[0]
	if first.Updated != 1 || first.Text != "approved by alice" || !first.HasText("Approved by <@U1>") || len(first.Buttons()) != 0 {
		t.Errorf("card after update: updated=%d text=%q all=%q buttons=%q", first.Updated, first.Text, first.AllText(), first.Buttons())
	}
	if !first.FromBot() || first.User != fakeslack.BotUserID {
		t.Errorf("card author: user=%q bot=%q", first.User, first.BotID)
	}
	thread := f.Thread("C1", ts)
	if len(thread) != 3 || thread[1].Text != "working on it" || thread[1].ThreadTS != ts {
		t.Errorf("thread: %+v", thread)
	}
	files := f.Files("C1", ts)
	if len(files) != 1 || files[0].ID != file.ID || string(files[0].Content) != "+hello\n" || files[0].Title != "The diff" {
		t.Errorf("files: %+v", files)
	}
	if got := len(f.CallsTo("chat.postMessage")); got != 2 {
		t.Errorf("recorded %d chat.postMessage calls, want 2", got)
	}
	if r := f.Rejections(); len(r) != 0 {
		t.Errorf("rejections: %v", r)
	}
}

func TestWebAPIRejectsLikeSlack(t *testing.T) {
	longLabel := strings.Repeat("x", 76)
	tests := []struct {
		name     string
		call     func(context.Context, *slack.Client, string) error
		wantCode string
	}{
		{"button label over 75 chars is invalid_blocks", func(ctx context.Context, api *slack.Client, _ string) error {
			_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("t", false), slack.MsgOptionBlocks(
				slack.NewActionBlock("a", slack.NewButtonBlockElement("b", "v", slack.NewTextBlockObject(slack.PlainTextType, longLabel, false, false)))))
			return err
		}, "invalid_blocks"},
		{"update text over 4000 chars is msg_too_long", func(ctx context.Context, api *slack.Client, ts string) error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText(strings.Repeat("y", 4001), false))
			return err
		}, "msg_too_long"},
		{"update of an unknown ts is message_not_found", func(ctx context.Context, api *slack.Client, _ string) error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", "1.000001", slack.MsgOptionText("x", false))
			return err
		}, "message_not_found"},
		{"post to an unknown channel is channel_not_found", func(ctx context.Context, api *slack.Client, _ string) error {
			_, _, err := api.PostMessageContext(ctx, "C404", slack.MsgOptionText("x", false))
			return err
		}, "channel_not_found"},
		{"views.open with an unknown trigger is expired_trigger_id", func(ctx context.Context, api *slack.Client, _ string) error {
			_, err := api.OpenViewContext(ctx, "123.456.abc", modal())
			return err
		}, "expired_trigger_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			f := fakeslack.New(t, fakeslack.AllowRejections())
			f.AddChannel("C1", "general")
			api := client(f)
			_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("original", false))
			if err != nil {
				t.Fatalf("post: %v", err)
			}
			err = tt.call(ctx, api, ts)
			if err == nil || err.Error() != tt.wantCode {
				t.Fatalf("error = %v, want %s", err, tt.wantCode)
			}
			rej := f.Rejections()
			if len(rej) != 1 || rej[0].Error != tt.wantCode {
				t.Fatalf("rejections = %v, want one %s", rej, tt.wantCode)
			}
			if m := f.Messages("C1"); len(m) != 1 || m[0].Text != "original" || m[0].Updated != 0 {
				t.Errorf("a rejected call changed the channel: %+v", m)
			}
		})
	}
}

func TestInvalidBlocksCarryTheValidatorsProblems(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.AllowRejections())
	f.AddChannel("C1", "general")
	_, _, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText("t", false), slack.MsgOptionBlocks(
		slack.NewActionBlock("a", slack.NewButtonBlockElement("b", "v", slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("x", 76), false, false)))))
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_blocks" || len(se.ResponseMetadata.Messages) == 0 {
		t.Fatalf("error = %#v, want invalid_blocks with messages", err)
	}
	if !strings.Contains(se.ResponseMetadata.Messages[0], "76") {
		t.Errorf("messages %q do not name the 76-char label", se.ResponseMetadata.Messages)
	}
	if rej := f.Rejections(); len(rej) != 1 || len(rej[0].Details) == 0 {
		t.Errorf("rejections %+v", rej)
	}
}

// chat.update without blocks keeps the message's blocks, and they are
// checked again with the new text.
func TestTextOnlyUpdateKeepsTheBlocksAndChecksThemWithTheNewText(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.AllowRejections())
	f.AddChannel("C1", "general")
	api := client(f)
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("approval needed", false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("still waiting", false)); err != nil {
		t.Fatalf("text-only update: %v", err)
	}
	m, _ := f.Message(fakeslack.MessageRef{Channel: "C1", TS: ts})
	if m.Text != "still waiting" || !slices.Equal(m.Buttons(), []string{"Approve", "Deny"}) || len(m.Blocks) != 2 {
		t.Errorf("after a text-only update: text %q, buttons %q, %d blocks", m.Text, m.Buttons(), len(m.Blocks))
	}
	_, _, _, err = api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText(" ", false))
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_blocks" || len(se.ResponseMetadata.Messages) == 0 ||
		!strings.Contains(se.ResponseMetadata.Messages[0], "empty fallback") {
		t.Fatalf("blank text over kept blocks: error %#v, want invalid_blocks for the empty fallback", err)
	}
	if m, _ := f.Message(fakeslack.MessageRef{Channel: "C1", TS: ts}); m.Text != "still waiting" || m.Updated != 1 {
		t.Errorf("a rejected update changed the message: text %q, updated %d", m.Text, m.Updated)
	}
}

func TestPostMessageTruncatesTextOver40000Chars(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	if _, _, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText(strings.Repeat("z", 40010), false)); err != nil {
		t.Fatalf("post: %v", err)
	}
	if got := len(f.Messages("C1")[0].Text); got != 40000 {
		t.Errorf("stored text has %d chars, want 40000", got)
	}
}

func TestWrongTokensAreInvalidAuth(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.AllowRejections())
	bad := slack.New("xoxb-wrong", slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken("xapp-wrong"))
	if _, err := bad.AuthTestContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("auth.test with a wrong bot token: %v", err)
	}
	if _, _, err := bad.StartSocketModeContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("apps.connections.open with a wrong app token: %v", err)
	}
	if _, _, err := client(f).StartSocketModeContext(ctx); err != nil {
		t.Errorf("apps.connections.open with the app token: %v", err)
	}
	if got := len(f.Rejections()); got != 2 {
		t.Errorf("%d rejections, want 2", got)
	}
}

func TestRateLimitInjectionReturnsRetryAfter(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	f.RateLimit("chat.postMessage", 2, 7*time.Second)
	api := client(f)
	for i := range 2 {
		_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("storm", false))
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
			t.Fatalf("call %d: error = %v, want RateLimitedError{7s}", i, err)
		}
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("after the storm", false)); err != nil {
		t.Fatalf("third call: %v", err)
	}
	calls := f.CallsTo("chat.postMessage")
	if len(calls) != 3 || calls[0].Status != http.StatusTooManyRequests || calls[2].Status != http.StatusOK {
		t.Errorf("calls: %+v", calls)
	}
	if len(f.Messages("C1")) != 1 {
		t.Errorf("rate-limited calls must not post")
	}
}

func TestUserDirectoryMethods(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddUser("U1", "alice")
	f.AddUser("U2", "bob")
	f.AddUserGroup("S1", "U1")
	f.AddChannel("C1", "general")
	api := client(f)
	auth, err := api.AuthTestContext(ctx)
	if err != nil || auth.UserID != fakeslack.BotUserID || auth.TeamID != fakeslack.TeamID {
		t.Errorf("auth.test = %+v, %v", auth, err)
	}
	u, err := api.GetUserInfoContext(ctx, "U2")
	if err != nil || u.Name != "bob" {
		t.Errorf("users.info = %+v, %v", u, err)
	}
	members, err := api.GetUserGroupMembersContext(ctx, "S1")
	if err != nil || !slices.Equal(members, []string{"U1"}) {
		t.Errorf("usergroups.users.list = %v, %v", members, err)
	}
}

// app is a minimal Socket Mode app built only from slack-go: it acks every
// envelope, answers view submissions with answer, and reports what it saw.
type app struct {
	mu     sync.Mutex
	events []string
	teams  []string // the acting person's team each payload names
	clicks []slack.InteractionCallback
	answer any
}

func (a *app) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.events)
}

func runSocketApp(ctx context.Context, t *testing.T, f *fakeslack.Fake, a *app) {
	t.Helper()
	sm := socketmode.New(client(f))
	ctx, cancel := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error {
		if err := sm.RunContext(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		return nil
	})
	g.Go(func() error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case evt := <-sm.Events:
				if evt.Request == nil || evt.Request.EnvelopeID == "" {
					continue
				}
				var payload any
				a.mu.Lock()
				switch data := evt.Data.(type) {
				case slackevents.EventsAPIEvent:
					a.events = append(a.events, data.InnerEvent.Type)
					switch e := data.InnerEvent.Data.(type) {
					case *slackevents.AppMentionEvent:
						a.teams = append(a.teams, e.UserTeam)
					case *slackevents.MessageEvent:
						a.teams = append(a.teams, e.UserTeam)
					}
				case slack.InteractionCallback:
					a.events = append(a.events, string(data.Type))
					a.teams = append(a.teams, data.User.TeamID)
					a.clicks = append(a.clicks, data)
					if data.Type == slack.InteractionTypeViewSubmission {
						payload = a.answer
					}
				case slack.SlashCommand:
					a.events = append(a.events, data.Command)
					a.teams = append(a.teams, data.TeamID+"/"+data.EnterpriseID)
					payload = map[string]string{"text": "on it"}
				}
				a.mu.Unlock()
				if payload != nil {
					_ = sm.Ack(*evt.Request, payload)
				} else {
					_ = sm.Ack(*evt.Request)
				}
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		if err := g.Wait(); err != nil {
			t.Errorf("socket mode app: %v", err)
		}
	})
}

func TestAnExternalPersonsPayloadsNameTheirTeam(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	f.AddExternalUser("U9", "eve", "T0OTHER", "E0OTHER")
	u, err := client(f).GetUserInfoContext(ctx, "U9")
	if err != nil || u.TeamID != "T0OTHER" || u.Enterprise.EnterpriseID != "E0OTHER" || !u.IsStranger {
		t.Errorf("users.info = %+v, %v; want eve of T0OTHER in E0OTHER", u, err)
	}
	if alice, err := client(f).GetUserInfoContext(ctx, "U1"); err != nil || alice.TeamID != fakeslack.TeamID || alice.IsStranger {
		t.Errorf("users.info of a member = %+v, %v", alice, err)
	}
	if _, err := f.Mention(ctx, "U9", "C1", "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Mention(ctx, "U1", "C1", "hello"); err != nil {
		t.Fatal(err)
	}
	if err := f.SlashCommand(ctx, "U9", "C1", "/claude", "x"); err != nil {
		t.Fatal(err)
	}
	_, ts, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText("card", false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Click(ctx, "U9", fakeslack.MessageRef{Channel: "C1", TS: ts}, "Approve"); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// eve's app_mention and message name her team; alice's name none (no
	// shared channel is involved); the command and the click name eve's.
	want := []string{"T0OTHER", "T0OTHER", "", "", "T0OTHER/E0OTHER", "T0OTHER"}
	if !slices.Equal(a.teams, want) {
		t.Errorf("teams named = %q, want %q", a.teams, want)
	}
}

// socketWorkspace is the setup most tests share: a fake workspace with alice
// (U1) and #general (C1), and the Socket Mode app a connected to it.
func socketWorkspace(ctx context.Context, t *testing.T, a *app, opts ...fakeslack.Option) *fakeslack.Fake {
	t.Helper()
	f := fakeslack.New(t, opts...)
	f.AddUser("U1", "alice")
	f.AddChannel("C1", "general")
	runSocketApp(ctx, t, f, a)
	return f
}

// clickCard posts card("v1") in C1 with the given fallback text and has
// alice click button on it.
func clickCard(ctx context.Context, t *testing.T, f *fakeslack.Fake, text, button string) fakeslack.MessageRef {
	t.Helper()
	_, ts, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText(text, false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	ref := fakeslack.MessageRef{Channel: "C1", TS: ts}
	if err := f.Click(ctx, "U1", ref, button); err != nil {
		t.Fatalf("click %s: %v", button, err)
	}
	return ref
}

// click returns the app's i-th interaction; a negative i counts from the end.
func (a *app) click(i int) slack.InteractionCallback {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i < 0 {
		i += len(a.clicks)
	}
	return a.clicks[i]
}

func TestSocketModeClientConnectsReceivesEnvelopesAndAcks(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)

	ts, err := f.Mention(ctx, "U1", "C1", "please fix the tests")
	if err != nil {
		t.Fatalf("mention: %v", err)
	}
	if got := a.seen(); !slices.Equal(got, []string{"app_mention", "message"}) {
		t.Errorf("app saw %q, want app_mention then message", got)
	}
	if m := f.Messages("C1"); len(m) != 1 || m[0].TS != ts || !m[0].HasText("<@U0BOT> please fix the tests") {
		t.Errorf("channel after mention: %+v", m)
	}
	if err := f.SlashCommand(ctx, "U1", "C1", "/claude", "status"); err != nil {
		t.Fatalf("slash command: %v", err)
	}
	if e := f.Ephemerals("U1"); len(e) != 1 || e[0].Text != "on it" {
		t.Errorf("immediate slash answer not shown as ephemeral: %+v", e)
	}

	if err := f.Disconnect(ctx); err != nil {
		t.Fatalf("disconnect: %v", err)
	}
	if got := f.Connections(); got != 2 {
		t.Errorf("connections after refresh = %d, want 2", got)
	}
	if _, err := f.DM(ctx, "U1", "hello after reconnect"); err != nil {
		t.Fatalf("DM after reconnect: %v", err)
	}
	if got := a.seen(); got[len(got)-1] != "message" {
		t.Errorf("DM not delivered after reconnect: %q", got)
	}
	if d := f.DeliveryFailures(); len(d) != 0 {
		t.Errorf("delivery failures: %+v", d)
	}
}

func TestClickBuildsABlockActionsPayloadSlackGoParses(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	_, ts, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText("approval needed", false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	ref := fakeslack.MessageRef{Channel: "C1", TS: ts}
	if err := f.Select(ctx, "U1", ref, "Pick a mode", "Always"); err != nil {
		t.Fatalf("select: %v", err)
	}
	if err := f.Click(ctx, "U1", ref, "Approve"); err != nil {
		t.Fatalf("click: %v", err)
	}
	if err := f.Click(ctx, "U1", ref, "Maybe"); err == nil || !strings.Contains(err.Error(), `"Approve" "Deny"`) {
		t.Errorf("clicking a missing button: %v, want an error listing the buttons", err)
	}
	a.mu.Lock()
	clicks := slices.Clone(a.clicks)
	a.mu.Unlock()
	if len(clicks) != 2 {
		t.Fatalf("app got %d interactions, want 2", len(clicks))
	}
	sel, click := clicks[0], clicks[1]
	if got := sel.ActionCallback.BlockActions[0]; got.ActionID != "mode" || got.SelectedOption.Value != "always" {
		t.Errorf("select action = %+v", got)
	}
	act := click.ActionCallback.BlockActions
	if len(act) != 1 || act[0].ActionID != "approve" || act[0].Value != "req-1" || act[0].BlockID != "v1-act" || act[0].Text.Text != "Approve" {
		t.Fatalf("click action = %+v", act)
	}
	if click.User.ID != "U1" || click.User.Name != "alice" || click.Team.ID != fakeslack.TeamID {
		t.Errorf("user/team = %+v / %+v", click.User, click.Team)
	}
	if click.Container.Type != "message" || click.Container.MessageTs != ts || click.Container.ChannelID != "C1" || click.Channel.ID != "C1" {
		t.Errorf("container = %+v channel = %+v", click.Container, click.Channel.ID)
	}
	if click.Message.Timestamp != ts || len(click.Message.Blocks.BlockSet) != 2 || click.TriggerID == "" {
		t.Errorf("message/trigger missing: ts=%q blocks=%d trigger=%q",
			click.Message.Timestamp, len(click.Message.Blocks.BlockSet), click.TriggerID)
	}
	if click.BlockActionState == nil || click.BlockActionState.Values["v1-act"]["mode"].SelectedOption.Value != "always" {
		t.Errorf("state does not carry the selection: %+v", click.BlockActionState)
	}

	// The trigger of the click opens a modal once.
	api := client(f)
	v, err := api.OpenViewContext(ctx, click.TriggerID, modal())
	if err != nil {
		t.Fatalf("views.open: %v", err)
	}
	got, err := f.WaitView(ctx, "U1")
	if err != nil || got.ID != v.ID || got.CallbackID != "question" || got.PrivateMetadata != "req-1" {
		t.Errorf("WaitView = %+v, %v", got, err)
	}
}

func TestTriggerIDsAreSingleUseAndExpire(t *testing.T) {
	tests := []struct {
		name    string
		advance time.Duration
		reuse   bool
		want    string
	}{
		{"fresh trigger opens a modal", 0, false, ""},
		{"trigger used twice is exchanged_trigger_id", 0, true, "exchanged_trigger_id"},
		{"trigger older than 3s is expired_trigger_id", 3*time.Second + time.Millisecond, false, "expired_trigger_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
			a := &app{}
			f := socketWorkspace(ctx, t, a, fakeslack.WithClock(clock), fakeslack.AllowRejections())
			api := client(f)
			clickCard(ctx, t, f, "q", "Deny")
			trigger := a.click(0).TriggerID
			clock.Advance(tt.advance)
			if tt.reuse {
				if _, err := api.OpenViewContext(ctx, trigger, modal()); err != nil {
					t.Fatalf("first use: %v", err)
				}
			}
			_, err := api.OpenViewContext(ctx, trigger, modal())
			if tt.want == "" {
				if err != nil {
					t.Fatalf("views.open: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("views.open error = %v, want %s", err, tt.want)
			}
		})
	}
}

// httpApp is an HTTP-mode app built from slack-go's verifier and parsers.
type httpApp struct {
	tb     *testing.T
	secret string
	mu     sync.Mutex
	got    []string
	retry  []string
}

func (h *httpApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sv, err := slack.NewSecretsVerifier(r.Header, h.secret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		http.Error(w, "bad signature: "+err.Error(), http.StatusUnauthorized)
		return
	}
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	h.mu.Lock()
	defer h.mu.Unlock()
	switch r.URL.Path {
	case fakeslack.DefaultEventsPath:
		ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.got = append(h.got, ev.InnerEvent.Type)
		h.retry = append(h.retry, r.Header.Get("X-Slack-Retry-Num"))
	case fakeslack.DefaultInteractivePath:
		ic, err := slack.InteractionCallbackParse(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.got = append(h.got, string(ic.Type))
		if ic.Type == slack.InteractionTypeViewSubmission {
			if ic.View.State.Values["answer"]["answer_text"].Value == "" {
				_ = json.NewEncoder(w).Encode(slack.NewErrorsViewSubmissionResponse(map[string]string{"answer": "say something"}))
				return
			}
			if ic.View.State.Values["choice"]["choice_radio"].SelectedOption.Value != "b" || ic.View.PrivateMetadata != "req-1" {
				http.Error(w, "unexpected submission", http.StatusBadRequest)
				return
			}
		}
	case fakeslack.DefaultCommandsPath:
		cmd, err := slack.SlashCommandParse(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.got = append(h.got, cmd.Command+" "+cmd.Text)
	}
	w.WriteHeader(http.StatusOK)
}

func TestHTTPDeliveryIsSignedAndParsesWithSlackGo(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddUser("U1", "alice")
	f.AddChannel("C1", "general")
	h := &httpApp{tb: t, secret: "s3cret"}
	srv := httptest.NewServer(h)
	defer srv.Close()
	f.UseHTTP(srv.URL, "s3cret")

	ts, err := f.Mention(ctx, "U1", "C1", "hello")
	if err != nil {
		t.Fatalf("mention: %v", err)
	}
	if _, err := f.Reply(ctx, "U1", "C1", ts, "more"); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if err := f.RetryLastEvent(ctx, "timeout"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if err := f.SlashCommand(ctx, "U1", "C1", "/claude", "status"); err != nil {
		t.Fatalf("command: %v", err)
	}
	api := client(f)
	_, cardTS, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("approval", false), slack.MsgOptionBlocks(card("v1")...))
	if err != nil {
		t.Fatal(err)
	}
	// The app opens a modal with the click's trigger; here the test plays the app.
	if err := f.Click(ctx, "U1", fakeslack.MessageRef{Channel: "C1", TS: cardTS}, "Approve"); err != nil {
		t.Fatalf("click: %v", err)
	}
	trigger := f.LastTrigger("U1")
	if _, err := api.OpenViewContext(ctx, trigger, modal()); err != nil {
		t.Fatalf("views.open: %v", err)
	}
	v, err := f.WaitView(ctx, "U1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.SubmitView(ctx, "U1", v.ID, map[string]string{"Which one": "Option A"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("submit without the required answer: %v", err)
	}
	resp, err := f.SubmitView(ctx, "U1", v.ID, map[string]string{"Your answer": "", "Which one": "Option B"})
	if err == nil {
		t.Errorf("an empty required text input must not submit; got %+v", resp)
	}
	resp, err = f.SubmitView(ctx, "U1", v.ID, map[string]string{"answer": "use the second", "Which one": "Option B"})
	if err != nil || resp.Action != "" {
		t.Fatalf("submit: %+v, %v", resp, err)
	}
	if open, ok := f.OpenView("U1"); ok {
		t.Errorf("an empty answer should close the modal; open: %s", open.ID)
	}

	h.mu.Lock()
	got, retries := slices.Clone(h.got), slices.Clone(h.retry)
	h.mu.Unlock()
	want := []string{"app_mention", "message", "message", "message", "/claude status", "block_actions", "view_submission"}
	if !slices.Equal(got, want) {
		t.Errorf("app got %q, want %q", got, want)
	}
	if !slices.Equal(retries, []string{"", "", "", "1"}) {
		t.Errorf("X-Slack-Retry-Num headers = %q", retries)
	}
}

func TestSubmitViewAppliesTheResponseAction(t *testing.T) {
	tests := []struct {
		name     string
		answer   any
		wantOpen bool
	}{
		{"errors keep the modal open", slack.NewErrorsViewSubmissionResponse(map[string]string{"answer": "too vague"}), true},
		{"an empty ack closes it", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			a := &app{answer: tt.answer}
			f := socketWorkspace(ctx, t, a)
			api := client(f)
			clickCard(ctx, t, f, "q", "Approve")
			if _, err := api.OpenViewContext(ctx, f.LastTrigger("U1"), modal()); err != nil {
				t.Fatal(err)
			}
			resp, err := f.SubmitView(ctx, "U1", "", map[string]string{"Your answer": "x", "Which one": "Option A"})
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			want := ""
			if r, ok := tt.answer.(*slack.ViewSubmissionResponse); ok {
				want = string(r.ResponseAction)
			}
			if resp.Action != want {
				t.Errorf("response action %q, want %q", resp.Action, want)
			}
			if _, open := f.OpenView("U1"); open != tt.wantOpen {
				t.Errorf("modal open = %v, want %v", open, tt.wantOpen)
			}
		})
	}
}

func TestUnackedEnvelopeIsADeliveryFailure(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.WithAckTimeout(100*time.Millisecond), fakeslack.AllowDeliveryFailures())
	f.AddUser("U1", "alice")
	// A connection that never acks: a raw websocket client reading frames.
	sm := socketmode.New(client(f))
	ctx2, cancel := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error { _ = sm.RunContext(ctx2); return nil })
	g.Go(func() error {
		for {
			select {
			case <-ctx2.Done():
				return nil
			case <-sm.Events: // read, never ack
			}
		}
	})
	defer func() { cancel(); _ = g.Wait() }()
	_, err := f.DM(ctx, "U1", "anyone there?")
	if err == nil || !strings.Contains(err.Error(), "not acked") {
		t.Fatalf("DM error = %v, want not acked", err)
	}
	if d := f.DeliveryFailures(); len(d) != 1 || d[0].Type != fakeslack.TypeEventsAPI {
		t.Errorf("delivery failures = %+v", d)
	}
}

func TestViewsAreCheckedAgainstSlacksLimits(t *testing.T) {
	big := modal()
	for range 90 {
		big.Blocks.BlockSet = append(big.Blocks.BlockSet, slack.NewSectionBlock(
			slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("w", 2900), false, false), nil, nil))
	}
	longTitle := modal()
	longTitle.Title = slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("t", 25), false, false)
	tests := []struct {
		name string
		view slack.ModalViewRequest
		want string
	}{
		{"a view over 250 KB is view_too_large", big, "view_too_large"},
		{"a title over 24 chars is invalid_arguments", longTitle, "invalid_arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t)
			f := socketWorkspace(ctx, t, &app{}, fakeslack.AllowRejections())
			if err := f.SlashCommand(ctx, "U1", "C1", "/claude", "ask"); err != nil {
				t.Fatal(err)
			}
			_, err := client(f).OpenViewContext(ctx, f.LastTrigger("U1"), tt.view)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("views.open error = %v, want %s", err, tt.want)
			}
			if _, open := f.OpenView("U1"); open {
				t.Errorf("a rejected view was opened")
			}
		})
	}
}

func TestEphemeralMessagesCanBeWaitedForAndClicked(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	errc := make(chan error, 1)
	go func() {
		_, err := client(f).PostEphemeralContext(ctx, "C1", "U1", slack.MsgOptionText("only you", false), slack.MsgOptionBlocks(card("e1")...))
		errc <- err
	}()
	m, err := f.WaitEphemeral(ctx, "U1", fakeslack.Text("Bash"))
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("postEphemeral: %v", err)
	}
	if !m.Ephemeral || m.Recipient != "U1" || len(f.Messages("C1")) != 0 {
		t.Errorf("ephemeral = %+v; channel has %d messages", m, len(f.Messages("C1")))
	}
	if err := f.Click(ctx, "U1", m.Ref(), "Deny"); err != nil {
		t.Fatal(err)
	}
	click := a.click(0)
	if !click.Container.IsEphemeral || click.ActionCallback.BlockActions[0].ActionID != "deny" || click.Message.Timestamp != "" {
		t.Errorf("ephemeral click: container=%+v message ts=%q", click.Container, click.Message.Timestamp)
	}
}

func TestCheckboxSelectionsAreReplacedAndShowInState(t *testing.T) {
	ctx := testCtx(t)
	a := &app{}
	f := socketWorkspace(ctx, t, a)
	opt := func(v, label string) *slack.OptionBlockObject {
		return slack.NewOptionBlockObject(v, slack.NewTextBlockObject(slack.PlainTextType, label, false, false), nil)
	}
	bs := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "Which files?", false, false), nil, nil),
		slack.NewActionBlock("files",
			slack.NewCheckboxGroupsBlockElement("pick", opt("a", "a.go"), opt("b", "b.go"), opt("c", "c.go")),
			slack.NewButtonBlockElement("send", "q1", slack.NewTextBlockObject(slack.PlainTextType, "Send", false, false))),
	}
	_, ts, err := client(f).PostMessageContext(ctx, "C1", slack.MsgOptionText("which files", false), slack.MsgOptionBlocks(bs...))
	if err != nil {
		t.Fatal(err)
	}
	ref := fakeslack.MessageRef{Channel: "C1", TS: ts}
	if err := f.Select(ctx, "U1", ref, "pick", "a.go", "c.go"); err != nil {
		t.Fatal(err)
	}
	if err := f.Select(ctx, "U1", ref, "pick", "zz.go"); err == nil || !strings.Contains(err.Error(), `"a.go" "b.go" "c.go"`) {
		t.Errorf("unknown option: %v", err)
	}
	if err := f.Click(ctx, "U1", ref, "Send"); err != nil {
		t.Fatal(err)
	}
	click := a.click(-1)
	var got []string
	for _, o := range click.BlockActionState.Values["files"]["pick"].SelectedOptions {
		got = append(got, o.Value)
	}
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("state selected %q, want a and c", got)
	}
}

func TestServerPingsSocketModeConnections(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.WithPingInterval(10*time.Millisecond))
	conn := rawConn(ctx, t, f)
	defer conn.Close()
	pinged := make(chan struct{}, 1)
	conn.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	readErr := make(chan error, 1)
	go func() {
		_, _, err := conn.ReadMessage() // drives the ping handler until the fake closes
		readErr <- err
	}()
	select {
	case <-pinged:
	case <-ctx.Done():
		t.Fatal("no ping from the fake")
	}
	f.Close()
	if err := <-readErr; err == nil {
		t.Errorf("read after Close returned no error")
	}
}

func TestVerifyURLChecksTheEchoedChallenge(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr bool
	}{
		{"an echoed challenge passes", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var c struct{ Challenge string }
			_ = json.Unmarshal(body, &c)
			_, _ = io.WriteString(w, c.Challenge)
		}, false},
		{"an empty answer fails", func(w http.ResponseWriter, r *http.Request) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakeslack.New(t)
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			f.UseHTTP(srv.URL, "s")
			if err := f.VerifyURL(testCtx(t)); (err != nil) != tt.wantErr {
				t.Errorf("VerifyURL = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

// rawConn opens a Socket Mode websocket without slack-go, so a test controls
// exactly when (and whether) it acks.
func rawConn(ctx context.Context, t *testing.T, f *fakeslack.Fake) *websocket.Conn {
	t.Helper()
	_, url, err := client(f).StartSocketModeContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var hello struct{ Type string }
	if err := conn.ReadJSON(&hello); err != nil || hello.Type != "hello" {
		t.Fatalf("first frame %+v, %v; want hello", hello, err)
	}
	return conn
}

type frame struct {
	EnvelopeID   string          `json:"envelope_id"`
	Type         string          `json:"type"`
	Payload      json.RawMessage `json:"payload"`
	RetryAttempt int             `json:"retry_attempt"`
}

func TestEnvelopeLostWithItsConnectionIsResentOnTheNextOne(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddUser("U1", "alice")
	first := rawConn(ctx, t, f)
	done := make(chan error, 1)
	go func() {
		_, err := f.DM(ctx, "U1", "are you there?")
		done <- err
	}()
	var lost frame
	if err := first.ReadJSON(&lost); err != nil || lost.Type != fakeslack.TypeEventsAPI {
		t.Fatalf("first connection got %+v, %v", lost, err)
	}
	first.Close() // dies before acking

	second := rawConn(ctx, t, f)
	defer second.Close()
	var again frame
	if err := second.ReadJSON(&again); err != nil {
		t.Fatal(err)
	}
	if again.EnvelopeID != lost.EnvelopeID || again.RetryAttempt != 1 || string(again.Payload) != string(lost.Payload) {
		t.Errorf("resent envelope %s (retry %d), want %s (retry 1)", again.EnvelopeID, again.RetryAttempt, lost.EnvelopeID)
	}
	if err := second.WriteJSON(map[string]string{"envelope_id": again.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("DM: %v", err)
	}
	if got := f.Connections(); got != 2 {
		t.Errorf("connections = %d, want 2", got)
	}
}

func TestDroppedConnectionIsReopenedBySlackGo(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddUser("U1", "alice")
	a := &app{}
	runSocketApp(ctx, t, f, a)
	if err := f.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	f.DropConnections()
	if _, err := f.DM(ctx, "U1", "still there?"); err != nil {
		t.Fatalf("DM after a dropped connection: %v", err)
	}
	if got := f.Connections(); got < 2 {
		t.Errorf("connections = %d, want a reconnect", got)
	}
	if got := a.seen(); !slices.Equal(got, []string{"message"}) {
		t.Errorf("app saw %q, want one message", got)
	}
}

// BenchmarkSocketModeMentionRoundTrip measures a mention delivered over
// Socket Mode to a slack-go client and acked (two envelopes per mention).
func BenchmarkSocketModeMentionRoundTrip(b *testing.B) {
	f := fakeslack.New(b)
	f.AddUser("U1", "alice")
	f.AddChannel("C1", "general")
	sm := socketmode.New(client(f))
	ctx, cancel := context.WithCancel(b.Context())
	var g errgroup.Group
	g.Go(func() error { _ = sm.RunContext(ctx); return nil })
	g.Go(func() error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case evt := <-sm.Events:
				if evt.Request != nil && evt.Request.EnvelopeID != "" {
					_ = sm.Ack(*evt.Request)
				}
			}
		}
	})
	defer func() { cancel(); _ = g.Wait() }()
	for b.Loop() {
		if _, err := f.Mention(ctx, "U1", "C1", "go"); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLateAckCountsAsOneFailureOnly(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t, fakeslack.WithAckTimeout(50*time.Millisecond), fakeslack.AllowDeliveryFailures())
	f.AddUser("U1", "alice")
	conn := rawConn(ctx, t, f)
	defer conn.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := f.DM(ctx, "U1", "first")
		errc <- err
	}()
	var late frame
	if err := conn.ReadJSON(&late); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Fatal("unacked DM returned no error")
	}
	// Ack the abandoned envelope, then deliver and ack a second one: acks
	// are read in order, so once the second DM returns the late ack was seen.
	if err := conn.WriteJSON(map[string]string{"envelope_id": late.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := f.DM(ctx, "U1", "second")
		errc <- err
	}()
	var next frame
	if err := conn.ReadJSON(&next); err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteJSON(map[string]string{"envelope_id": next.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("second DM: %v", err)
	}
	if d := f.DeliveryFailures(); len(d) != 1 {
		t.Errorf("failures = %+v, want only the timeout", d)
	}
}

func TestRateModelAnswers429PastTheChannelsPostBurst(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	f := fakeslack.New(t, fakeslack.WithClock(clock))
	f.AddChannel("C1", "one")
	f.AddChannel("C2", "two")
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(f.APIURL()))
	for i := range 4 {
		if _, _, err := api.PostMessage("C1", slack.MsgOptionText(fmt.Sprint(i), false)); err != nil {
			t.Fatalf("post %d within the burst: %v", i, err)
		}
	}
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("one too many", false))
	var limited *slack.RateLimitedError
	if !errors.As(err, &limited) || limited.RetryAfter != time.Second {
		t.Fatalf("post past the burst: %v, want 429 with Retry-After 1s", err)
	}
	// The budget is per channel.
	if _, _, err := api.PostMessage("C2", slack.MsgOptionText("elsewhere", false)); err != nil {
		t.Fatalf("post to another channel: %v", err)
	}
	clock.Advance(time.Second)
	if _, _, err := api.PostMessage("C1", slack.MsgOptionText("a second later", false)); err != nil {
		t.Fatalf("post a second later: %v", err)
	}
}

func TestRateModelPacesViewsPublishAtTier4(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	f := fakeslack.New(t, fakeslack.WithClock(clock))
	f.AddUser("U1", "alice")
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(f.APIURL()))
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hi", false, false), nil, nil)}}}
	publish := func() error {
		_, err := api.PublishView("U1", home, "")
		return err
	}
	for i := range 20 {
		if err := publish(); err != nil {
			t.Fatalf("publish %d within the burst: %v", i, err)
		}
	}
	var limited *slack.RateLimitedError
	if err := publish(); !errors.As(err, &limited) {
		t.Fatalf("publish past the burst: %v, want 429", err)
	}
	clock.Advance(time.Second) // 100 a minute: one more within a second
	if err := publish(); err != nil {
		t.Fatalf("publish a second later: %v", err)
	}
}

// TestRateModelPacesHistoryReadsAtTier3: conversations.history, which the
// audit channel's readers page through, is Tier 3.
func TestRateModelPacesHistoryReadsAtTier3(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	f := fakeslack.New(t, fakeslack.WithClock(clock))
	f.AddChannel("C1", "one")
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(f.APIURL()))
	read := func() error {
		_, err := api.GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1", Limit: 200})
		return err
	}
	for i := range 20 {
		if err := read(); err != nil {
			t.Fatalf("read %d within the burst: %v", i, err)
		}
	}
	var limited *slack.RateLimitedError
	if err := read(); !errors.As(err, &limited) || limited.RetryAfter != 2*time.Second {
		t.Fatalf("read past the burst: %v, want 429 with Retry-After 2s", err)
	}
	clock.Advance(1200 * time.Millisecond) // 50 a minute: one every 1.2 s
	if err := read(); err != nil {
		t.Fatalf("read 1.2 s later: %v", err)
	}
}
