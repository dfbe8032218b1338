package bot

import (
	"crypto/ed25519"
	"encoding/json"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// noProdTests denies one command a grant for npm test would allow.
const noProdTests = `rules:
  - name: no-prod
    match: ["Bash(npm test --prod:*)"]
    deny: {message: "not against prod"}
`

func npmTest(id, cmd string) store.Request {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return store.Request{ID: id, Kind: store.KindTool, ToolName: "Bash", Input: in,
		Suggestions: []store.Suggestion{{Type: "addRules", Behavior: "allow", Destination: "localSettings",
			Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}}}}
}

// allowedWithoutCard waits for r (created in s) to be settled by a grant,
// with the thread line that stands for its card.
func (h *harness) allowedWithoutCard(t *testing.T, s store.Session, r store.Request) store.Decision {
	t.Helper()
	ctx := testCtx(t)
	r.SessionID, r.CLIRequestID, r.CreatedAt = s.ID, "cli-"+r.ID, h.clock.Now()
	if err := h.st.CreateRequest(ctx, r); err != nil {
		t.Fatal(err)
	}
	d, err := h.st.WaitDecision(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, s.Thread.Channel, s.Thread.TS, fakeslack.Text("allowed by a rule <@U2> added")); err != nil {
		t.Fatalf("no thread line for %s: %v", r.ID, err)
	}
	return d
}

func TestAnHourGrantAllowsItsSessionUntilItExpiresAndNotAfter(t *testing.T) {
	// The clock moves only by hand, so Slack's pacing (which the bot
	// waits out on it) is off: this test pins the grant's expiry.
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, fake: []fakeslack.Option{fakeslack.WithoutRateModel()},
		cfg: func(c *Config) {
			c.Approvers = People{IDs: []string{"U2"}}
			c.Policy = mustPolicy(t, noProdTests)
		}})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-grant")
	first := npmTest("req-g1", "npm test")
	card := h.createRequest(t, s, first, "Approve")
	if err := h.fake.Select(ctx, "U2", card.Ref(), "Approve and allow…", "1 hour in this session: Bash(npm test:*)"); err != nil {
		t.Fatal(err)
	}
	first.SessionID = s.ID
	got, _ := h.waitSettled(t, first, card)
	if d := got.Decision; d.Outcome != store.OutcomeAllow || len(d.Permissions) != 0 {
		t.Fatalf("decision %+v: want an allow that adds no Claude Code rule", d)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("without a card")); err != nil {
		t.Fatal(err)
	}
	grants, err := h.st.ListGrants(ctx)
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants %+v, %v; want one", grants, err)
	}
	g := grants[0]
	if g.Scope != (store.GrantScope{Kind: store.GrantSession, Value: s.ID}) || g.By != "U2" || !g.Expires.Equal(g.At.Add(time.Hour)) {
		t.Errorf("grant %+v: want session scope, by U2, for an hour", g)
	}

	// Within the hour the same rule runs without a card, signed.
	d := h.allowedWithoutCard(t, s, npmTest("req-g2", "npm test -- --watch"))
	if d.Outcome != store.OutcomeAllow || d.Grant != g.ID || d.By != "U2" {
		t.Errorf("decision %+v: want an allow naming the grant", d)
	}
	stored, _ := h.st.GetRequest(ctx, "req-g2")
	if err := store.VerifyDecision(testSigningKey.Public().(ed25519.PublicKey), stored, d); err != nil {
		t.Errorf("the grant's decision does not verify: %v", err)
	}
	// A policy deny wins over the grant; a compound command needs every
	// part allowed; another session is not this grant's.
	deny := npmTest("req-g3", "npm test --prod")
	deny.SessionID, deny.CLIRequestID = s.ID, "cli-req-g3"
	if err := h.st.CreateRequest(ctx, deny); err != nil {
		t.Fatal(err)
	}
	if d, err := h.st.WaitDecision(ctx, deny.ID); err != nil || d.Outcome != store.OutcomeDeny || d.Rule != "no-prod" {
		t.Errorf("a denied command under a grant: %+v, %v; want the rule's deny", d, err)
	}
	h.createRequest(t, s, npmTest("req-g4", "npm test && curl evil.example"), "Approve")
	h.createRequest(t, h.newSession(t, "sess-other"), npmTest("req-g5", "npm test"), "Approve")

	// After the hour, a card asks again.
	h.clock.Advance(time.Hour)
	h.createRequest(t, s, npmTest("req-g6", "npm test"), "Approve")
}

// A grant written into the store by someone without the key decides
// nothing: a card asks.
func TestAForgedGrantIsIgnored(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{useClock: true, cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	_, mallory, _ := ed25519.GenerateKey(nil)
	g := store.Grant{ID: "grant-forged", Scope: store.GrantScope{Kind: store.GrantRepo, Value: testWorkDir},
		Rules: []string{"Bash"}, By: "U2", At: h.clock.Now()}
	if err := store.SignGrant(mallory, &g); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	h.createRequest(t, h.newSession(t, "sess-forged"), npmTest("req-f1", "rm -rf /"), "Approve")
}

func TestTheAppHomeListsGrantsAndForgetsThem(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	g := store.Grant{ID: "grant-home", Scope: store.GrantScope{Kind: store.GrantRepo, Value: testWorkDir},
		Rules: []string{"Bash(npm test:*)"}, By: "U2", At: time.Now()}
	if err := store.SignGrant(testSigningKey, &g); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddGrant(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.OpenHome(ctx, "U2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("Rules you allowed") && v.HasText("npm test:*") }); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.ClickHome(ctx, "U2", "Forget", "npm test:*"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("Forgotten") && v.HasText("No rules are allowed") }); err != nil {
		t.Fatal(err)
	}
	if grants, err := h.st.ListGrants(ctx); err != nil || len(grants) != 0 {
		t.Errorf("grants after Forget: %+v, %v; want none", grants, err)
	}
}
