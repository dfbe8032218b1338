package bot

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// statusSettled waits until the session's status line no longer waits for
// approval: the settled event's handler refreshes it last, after it edited
// the card or found the click had shown it, so by then every edit of the
// card that event would make has been made. Tests that wait on it shorten
// the status line's live-edit interval (fastStatus): its pacing is not
// their subject, and the default would add 3 s to each.
func fastStatus(c *Config) { c.Budgets.LiveEditInterval = time.Millisecond }

// statusSettled: see fastStatus.
func (h *harness) statusSettled(t *testing.T, s store.Session) {
	t.Helper()
	if _, err := h.fake.WaitThread(testCtx(t), s.Thread.Channel, s.Thread.TS, func(m fakeslack.Message) bool {
		return m.FromBot() && strings.Contains(m.AllText(), "Working") && !strings.Contains(m.AllText(), "Waiting")
	}); err != nil {
		t.Fatalf("the status line never left waiting: %v", err)
	}
}

// cardEdits counts the chat.update calls made on the message at ref.
func cardEdits(f *fakeslack.Fake, ref fakeslack.MessageRef) int {
	n := 0
	for _, c := range f.CallsTo("chat.update") {
		if c.Params.Get("channel") == ref.Channel && c.Params.Get("ts") == ref.TS {
			n++
		}
	}
	return n
}

func TestClickOutcomeReplacesTheCardThroughItsResponseURL(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: fastStatus})
			s := h.newSession(t, "sess-respond")
			card := h.createRequest(t, s, deployRequest("req-respond", s), "Approve")
			recordedCard(t, h, "req-respond")
			if err := h.fake.Click(testCtx(t), "U2", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			h.waitSettled(t, store.Request{ID: "req-respond"}, card)
			h.statusSettled(t, s)
			final, _ := h.fake.Message(card.Ref())
			if !final.HasText("Approved") || final.Replaced != 1 || final.Updated != 0 {
				t.Errorf("card = %q replaced %d updated %d; want the outcome through the response_url only", final.AllText(), final.Replaced, final.Updated)
			}
			if n := cardEdits(h.fake, card.Ref()); n != 0 {
				t.Errorf("%d chat.update calls on the card; a click's outcome spends none", n)
			}
		})
	}
}

func TestClickOutcomeFallsBackToChatUpdateWhenTheResponseURLFails(t *testing.T) {
	for _, code := range []string{"used_url", "expired_url"} {
		t.Run(code, func(t *testing.T) {
			h := newHarness(t, transportSocket, harnessOpts{cfg: fastStatus})
			s := h.newSession(t, "sess-fallback")
			card := h.createRequest(t, s, deployRequest("req-fallback", s), "Approve")
			recordedCard(t, h, "req-fallback")
			h.fake.FailNext(fakeslack.ResponseURLMethod, 1, code)
			if err := h.fake.Click(testCtx(t), "U2", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			h.waitSettled(t, store.Request{ID: "req-fallback"}, card)
			h.statusSettled(t, s)
			final, _ := h.fake.Message(card.Ref())
			if !final.HasText("Approved") || final.Replaced != 0 || final.Updated != 1 {
				t.Errorf("card = %q replaced %d updated %d; want one chat.update after the failed response_url", final.AllText(), final.Replaced, final.Updated)
			}
		})
	}
}

// TestModalOutcomeUsesTheResponseURLOfTheClickThatOpenedIt: Slack gives a
// view_submission no response_url of its own; the modal keeps its
// opener's, and the outcome replaces the card through it.
func TestModalOutcomeUsesTheResponseURLOfTheClickThatOpenedIt(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: fastStatus})
			s := h.newSession(t, "sess-modal")
			card := h.createRequest(t, s, deployRequest("req-modal", s), "Deny")
			recordedCard(t, h, "req-modal")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U1", card.Ref(), "Deny"); err != nil {
				t.Fatal(err)
			}
			view, err := h.fake.WaitView(ctx, "U1")
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := h.fake.SubmitView(ctx, "U1", view.ID, map[string]string{"Reason (Claude reads it)": "not today"}); err != nil || resp.Action != "" {
				t.Fatalf("submit: %+v, %v", resp, err)
			}
			got, _ := h.waitSettled(t, store.Request{ID: "req-modal"}, card)
			h.statusSettled(t, s)
			final, _ := h.fake.Message(card.Ref())
			if got.Decision.Outcome != store.OutcomeDeny || !final.HasText("Denied") || final.Replaced != 1 || cardEdits(h.fake, card.Ref()) != 0 {
				t.Errorf("decision %+v, card %q replaced %d, %d chat.updates; want the deny shown through the click's response_url",
					got.Decision, final.AllText(), final.Replaced, cardEdits(h.fake, card.Ref()))
			}
		})
	}
}

// TestModalSubmittedAfterThirtyMinutesFallsBackToChatUpdate: the opening
// click's response_url is expired by then (fake Slack and bot share the
// clock), so the settled event edits the card.
func TestModalSubmittedAfterThirtyMinutesFallsBackToChatUpdate(t *testing.T) {
	clock := newFakeClock()
	h := newHarness(t, transportSocket, harnessOpts{fake: []fakeslack.Option{fakeslack.WithClock(clock)},
		cfg: func(c *Config) {
			c.Clock = clock
			// The clock moves only by hand: no budget would refill.
			c.Budgets.Unlimited = true
		}})
	s := h.newSession(t, "sess-late")
	card := h.createRequest(t, s, deployRequest("req-late-modal", s), "Deny")
	recordedCard(t, h, "req-late-modal")
	ctx := testCtx(t)
	if err := h.fake.Click(ctx, "U1", card.Ref(), "Deny"); err != nil {
		t.Fatal(err)
	}
	view, err := h.fake.WaitView(ctx, "U1")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(fakeslack.ResponseURLTTL + time.Minute)
	if _, err := h.fake.SubmitView(ctx, "U1", view.ID, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitCall(ctx, func(c fakeslack.Call) bool {
		return c.Method == fakeslack.ResponseURLMethod && c.Status == http.StatusNotFound && c.Error == "expired_url"
	}); err != nil {
		t.Fatal(err)
	}
	_, final := h.waitSettled(t, store.Request{ID: "req-late-modal"}, card)
	if !final.HasText("Denied") || final.Replaced != 0 || final.Updated != 1 {
		t.Errorf("card = %q replaced %d updated %d; want one chat.update", final.AllText(), final.Replaced, final.Updated)
	}
}

// TestSettledEventOnAnotherReplicaLeavesTheClickedCardAlone: two bots
// share the store and Slack's deliveries; whichever gets the click and
// whichever the settled event, the card is replaced once, by the click.
func TestSettledEventOnAnotherReplicaLeavesTheClickedCardAlone(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: fastStatus})
	startSecondBot(t, h, nil, fastStatus)
	if err := h.fake.WaitConnections(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"U1", "U2", "U3", "U1"} {
		id := "req-replica-" + string(rune('a'+i))
		channel := "C" + string(rune('5'+i)) // a channel each: the test is not about posting pace
		h.fake.AddChannel(channel, "replica-"+channel)
		s := h.newSessionIn(t, "sess-"+id, channel)
		card := h.createRequest(t, s, deployRequest(id, s), "Approve")
		recordedCard(t, h, id)
		if err := h.fake.Click(testCtx(t), u, card.Ref(), "Approve"); err != nil {
			t.Fatal(err)
		}
		h.waitSettled(t, store.Request{ID: id}, card)
		h.statusSettled(t, s)
		if m, _ := h.fake.Message(card.Ref()); m.Replaced != 1 || cardEdits(h.fake, card.Ref()) != 0 {
			t.Errorf("%s: card replaced %d times, %d chat.updates; want the click's response only", id, m.Replaced, cardEdits(h.fake, card.Ref()))
		}
	}
}

// TestOutcomesGoOnlyToSlacksResponseURLs: the bot posts a card's content to
// a click's response_url, so a URL that is not Slack's (or the configured
// API host's) is refused and the outcome goes by chat.update.
func TestOutcomesGoOnlyToSlacksResponseURLs(t *testing.T) {
	for _, tc := range []struct {
		apiURL, url string
		ok          bool
	}{
		{"", "https://hooks.slack.com/actions/T0/1/abc", true},
		{"", "https://HOOKS.slack.com/actions/T0/1/abc", true},
		{"", "https://hooks.slack-gov.com/actions/T0/1/abc", true},
		{"", "http://hooks.slack.com/actions/T0/1/abc", false},
		{"", "https://hooks.slack.com.evil.example/actions", false},
		{"", "https://evil.example/?u=hooks.slack.com", false},
		{"", "https://user@evil.example/hooks.slack.com", false},
		{"", "", false},
		{"", "hooks.slack.com/actions", false},
		{"http://127.0.0.1:4000/api/", "http://127.0.0.1:4000/actions/R1", true},
		{"http://127.0.0.1:4000/api/", "http://127.0.0.1:4001/actions/R1", false},
		{"https://slack.proxy.example/api/", "http://slack.proxy.example/actions/R1", false},
	} {
		b := &Bot{cfg: Config{APIURL: tc.apiURL}}
		if got := b.respondable(tc.url) != ""; got != tc.ok {
			t.Errorf("respondable(%q) with APIURL %q = %v, want %v", tc.url, tc.apiURL, got, tc.ok)
		}
	}
}

// TestAClickCarryingAForeignResponseURLPostsNothingThere: a signed click
// (someone who holds the signing secret, or a proxy that rewrote it) names
// a response_url of another host; the bot posts the card's outcome only
// to Slack's, so that host gets nothing and the card is edited by
// chat.update instead.
func TestAClickCarryingAForeignResponseURLPostsNothingThere(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{cfg: fastStatus})
	var posts atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	t.Cleanup(foreign.Close)
	s := h.newSession(t, "sess-foreign")
	card := h.createRequest(t, s, deployRequest("req-foreign", s), "Approve")
	recordedCard(t, h, "req-foreign")
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": "U2", "username": "bob", "name": "bob", "team_id": fakeslack.TeamID},
		"api_app_id": fakeslack.AppID, "token": fakeslack.VerificationToken, "trigger_id": "1.2.3",
		"team":      map[string]any{"id": fakeslack.TeamID},
		"container": map[string]any{"type": "message", "message_ts": card.TS, "channel_id": card.Channel, "thread_ts": s.Thread.TS},
		"channel":   map[string]any{"id": card.Channel},
		"actions": []any{map[string]any{"type": "button", "action_id": "sg_approve", "block_id": "sg_actions",
			"value": "0|0|req-foreign", "action_ts": "1700000100.000300"}},
		"response_url": foreign.URL + "/actions/T0FAKE/1/abc",
	})
	if err != nil {
		t.Fatal(err)
	}
	if code := h.postSigned(t, "/slack/interactive", time.Now(), []byte("payload="+url.QueryEscape(string(payload)))); code != http.StatusOK {
		t.Fatalf("the click: status %d", code)
	}
	h.waitSettled(t, store.Request{ID: "req-foreign"}, card)
	if final, _ := h.fake.Message(card.Ref()); !final.HasText("Approved") || final.Updated == 0 {
		t.Errorf("card %q updated %d times; want the outcome by chat.update", final.AllText(), final.Updated)
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("the foreign response_url got %d posts of the card's outcome", n)
	}
}
