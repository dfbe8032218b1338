package bot

import (
	"crypto/ed25519"
	"encoding/json"
	"slices"
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
	return store.Request{ID: id, Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash", Input: in},
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
	if _, err := h.fake.WaitThread(ctx, s.Thread.Channel, s.Thread.TS, fakeslack.Text("allowed by a rule *bob* added")); err != nil {
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
	h.allowIn(t, "U2", card, "Bash(npm test:*)")
	if err := h.fake.ClickView(ctx, "U2", "1 hour"); err != nil {
		t.Fatal(err)
	}
	first.SessionID = s.ID
	got, _ := h.waitSettled(t, first, card)
	if d := got.Decision; d.Outcome != store.OutcomeAllow || len(d.Permissions) != 0 {
		t.Fatalf("decision %+v: want an allow that adds no Claude Code rule", d)
	}
	if _, err := h.fake.WaitView(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("without a card") }); err != nil {
		t.Fatalf("the approver is not told what the grant allows, in the modal: %v", err)
	}
	grants, err := h.st.Kept(ctx, store.StandingGrant)
	if err != nil || len(grants) != 1 {
		t.Fatalf("grants %+v, %v; want one", grants, err)
	}
	g := grants[0]
	if g.Scope != (store.Scope{Kind: store.ScopeSession, Value: s.ID}) || g.By != "U2" || !g.Expires.Equal(g.At.Add(time.Hour)) {
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
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-forged", Scope: store.Scope{Kind: store.ScopeRepo, Value: testWorkDir},
		Rules: []string{"Bash"}, By: "U2", At: h.clock.Now()}
	if err := store.SignStanding(mallory, &g); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Keep(ctx, g); err != nil {
		t.Fatal(err)
	}
	h.createRequest(t, h.newSession(t, "sess-forged"), npmTest("req-f1", "rm -rf /"), "Approve")
}

func TestTheAppHomeListsGrantsAndForgetsThem(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-home", Scope: store.Scope{Kind: store.ScopeRepo, Value: testWorkDir},
		Rules: []string{"Bash(npm test:*)"}, By: "U2", At: time.Now()}
	if err := store.SignStanding(testSigningKey, &g); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Keep(ctx, g); err != nil {
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
	if grants, err := h.st.Kept(ctx, store.StandingGrant); err != nil || len(grants) != 0 {
		t.Errorf("grants after Forget: %+v, %v; want none", grants, err)
	}
}

// A grant stands in for APPROVERS' one tap, never for a policy rule's
// approvers: with a rule that sends `make deploy` to two SREs, one
// approver's grant for it settles nothing, and a card asks the two.
func TestAGrantNeverStandsInForARulesApprovers(t *testing.T) {
	h := approvalsHarness(t)
	ctx := testCtx(t)
	s := h.newSession(t, "sess-grant-rule")
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-deploy", Scope: store.Scope{Kind: store.ScopeRepo, Value: testWorkDir},
		Rules: []string{"Bash(make deploy:*)"}, By: "U9", ByName: "erin", At: time.Now()}
	if err := store.SignStanding(testSigningKey, &g); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.Keep(ctx, g); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]string{"command": "make deploy"})
	card := h.createRequest(t, s, store.Request{ID: "req-grant-rule", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash", Input: in}}, "Approve")
	if !card.HasText("*Needs 2 approvals*") {
		t.Errorf("the card does not ask the rule's two people: %s", card.AllText())
	}
	if got, err := h.st.GetRequest(ctx, "req-grant-rule"); err != nil || !got.Pending() {
		t.Fatalf("request %+v (%v), want it pending for the rule's approvers", got.Decision, err)
	}
}

// A card a policy rule asks for offers no grants: a grant never decides
// what a rule matched, so it would never apply to this request. Claude
// Code's session rule for a suggestion clear of the rule still is.
func TestACardARuleAsksForOffersNoGrants(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Policy = mustPolicy(t, "rules:\n  - {name: deploys, match: [\"Bash(make deploy:*)\"], ask: {}}\n")
	}})
	s := h.newSession(t, "sess-rule-grants")
	r := npmTest("req-rule-grants", "make deploy")
	r.Suggestions[0].Rules = []store.SuggestionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}
	card := h.createRequest(t, s, r, "Approve")
	if !card.HasText("asks because of rule *deploys*") {
		t.Fatalf("the rule does not ask: %s", card.AllText())
	}
	if got := h.allowIn(t, "U2", card, "Bash(npm test:*)").Buttons(); !slices.Equal(got, []string{"This session"}) {
		t.Errorf("a card the rule asks for offers %q, want Claude Code's session rule only", got)
	}
}
