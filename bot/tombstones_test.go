package bot

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// A grant and a remembered answer forgotten from the App Home stay
// forgotten when someone with store access writes their signed records
// back: the bot that forgot them buried them, and a bot started since
// (which never saw them forgotten) reads the tombstones from the store.
func TestAForgottenGrantOrAnswerWrittenBackDecidesNothing(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, fake: []fakeslack.Option{fakeslack.WithoutRateModel()},
		cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-buried", Scope: store.Scope{Kind: store.ScopeRepo, Value: testWorkDir},
		Rules: []string{"Bash(npm test:*)"}, By: "U2", At: h.clock.Now()}
	if err := store.SignStanding(testSigningKey, &g); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Keep(ctx, g); err != nil {
		t.Fatal(err)
	}
	a := rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")
	if err := h.fake.OpenHome(ctx, "U2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("npm test:*") && v.HasText("Postgres") }); err != nil {
		t.Fatal(err)
	}
	for _, near := range []string{"npm test:*", "Postgres"} {
		if err := h.fake.ClickHome(ctx, "U2", "Forget", near); err != nil {
			t.Fatal(err)
		}
		if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("Forgotten") && !v.HasText(near) }); err != nil {
			t.Fatal(err)
		}
	}
	// The writer puts both signed records back.
	if _, err := h.st.Keep(ctx, g); err != nil {
		t.Fatal(err)
	}
	rememberSigned(t, h.st, a, nil)

	askBoth := func(bot string) {
		t.Helper()
		s := h.newSession(t, "sess-"+bot)
		h.createRequest(t, s, npmTest("req-grant-"+bot, "npm test"), "Approve")
		h.createRequest(t, s, store.Request{ID: "req-answer-" + bot, Kind: store.KindQuestion, ToolCall: store.ToolCall{
			ToolName: "AskUserQuestion",
			Input:    json.RawMessage(dbForm),
		}}, "Postgres")
	}
	askBoth("first")
	h.stop()
	startReplica(t, h, "bot-2", func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }, make(chan time.Time, 64))
	askBoth("second")
}
