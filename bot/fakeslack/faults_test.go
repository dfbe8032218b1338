package fakeslack_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/bot/fakeslack"
)

func TestHeldCallWaitsAndIsCarriedOutOrDropped(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	api := client(f)

	for _, tc := range []struct {
		name    string
		release func(h *fakeslack.Held)
		posted  bool
	}{
		{"released: Slack carries it out", (*fakeslack.Held).Release, true},
		{"dropped: it never reaches Slack", (*fakeslack.Held).Drop, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "held " + tc.name
			h := f.Hold("chat.postMessage", func(c fakeslack.Call) bool { return c.Params.Get("text") == text })
			done := make(chan error, 1)
			go func() {
				_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(text, false))
				done <- err
			}()
			c, err := h.Wait(ctx)
			if err != nil || c.Params.Get("text") != text {
				t.Fatalf("Wait = %+v, %v; want the held call", c, err)
			}
			select {
			case err := <-done:
				t.Fatalf("the held call returned (%v) before it was let go", err)
			default:
			}
			tc.release(h)
			err = <-done
			if tc.posted != (err == nil) {
				t.Errorf("the call returned %v; want carried out: %v", err, tc.posted)
			}
			found := false
			for _, m := range f.Messages("C1") {
				found = found || m.Text == text
			}
			if found != tc.posted {
				t.Errorf("the message is in the channel: %v, want %v", found, tc.posted)
			}
		})
	}
}

func TestFailStatusAnswers5xxWithoutCarryingOut(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	api := client(f)
	f.FailStatus("chat.postMessage", 1, http.StatusServiceUnavailable)

	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("first", false))
	var sc slack.StatusCodeError
	if !errors.As(err, &sc) || sc.Code != http.StatusServiceUnavailable {
		t.Fatalf("first post: %v, want HTTP 503", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("second", false)); err != nil {
		t.Fatalf("second post: %v, want it through", err)
	}
	if msgs := f.Messages("C1"); len(msgs) != 1 || msgs[0].Text != "second" {
		t.Errorf("messages %+v, want only the second", msgs)
	}
	if calls := f.CallsTo("chat.postMessage"); len(calls) != 2 || calls[0].Status != http.StatusServiceUnavailable {
		t.Errorf("calls %+v, want the 503 recorded first", calls)
	}
}

func TestLostAnswerIsCarriedOutAndTheAppSeesAnError(t *testing.T) {
	ctx := testCtx(t)
	f := fakeslack.New(t)
	f.AddChannel("C1", "general")
	api := client(f)
	f.LoseAnswer("chat.postMessage", func(c fakeslack.Call) bool { return c.Params.Get("text") == "lost" })

	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("kept", false)); err != nil {
		t.Fatalf("a post LoseAnswer does not match: %v", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("lost", false)); err == nil {
		t.Fatal("the post whose answer is lost succeeded; want an error")
	}
	if msgs := f.Messages("C1"); len(msgs) != 2 || msgs[1].Text != "lost" {
		t.Errorf("messages %+v, want both, the lost answer's post carried out", msgs)
	}
}

func TestConversationsRepliesPagesThroughAThread(t *testing.T) {
	ctx := testCtx(t)
	// Six posts in one channel at once: Slack's pacing has no part in
	// reading a thread.
	f := fakeslack.New(t, fakeslack.WithoutRateModel())
	f.AddChannel("C1", "general")
	api := client(f)
	_, root, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("root", false))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText(fmt.Sprint("reply ", i), false), slack.MsgOptionTS(root)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	params := &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: root, Limit: 2}
	for pages := 0; ; pages++ {
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got = append(got, m.Text)
			if m.User != fakeslack.BotUserID || m.BotID != fakeslack.BotID {
				t.Errorf("the bot's message %q has user %q, bot_id %q", m.Text, m.User, m.BotID)
			}
		}
		if !more {
			break
		}
		if pages > 5 {
			t.Fatal("paging never ends")
		}
		params.Cursor = next
	}
	if len(got) != 6 || got[5] != "reply 4" {
		t.Errorf("thread read as %q, want the root and the 5 replies in order", got)
	}

	_, _, _, err = api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.000001"})
	if err == nil || err.Error() != "thread_not_found" {
		t.Errorf("an unknown thread: %v, want thread_not_found", err)
	}
	if rej := f.Rejections(); len(rej) != 0 {
		t.Errorf("rejections %v: asking for a thread that does not exist is an answer, not a malformed call", rej)
	}
}
