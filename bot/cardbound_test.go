package bot

import (
	"context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// swapSuggestions is the store as a writer who rewrites pending requests'
// permission_suggestions leaves it, once swapped is set: every read of a
// request shows "all of Bash" where the CLI suggested something narrower.
type swapSuggestions struct {
	store.Store
	swapped *atomic.Bool
}

func (s swapSuggestions) GetRequest(ctx context.Context, id string) (store.Request, error) {
	r, err := s.Store.GetRequest(ctx, id)
	if err == nil && s.swapped.Load() {
		r.Suggestions = slices.Clone(r.Suggestions)
		for i := range r.Suggestions {
			r.Suggestions[i].Rules = []store.SuggestionRule{{ToolName: "Bash"}}
		}
	}
	return r, err
}

// menuOptions are the option labels of the card's "Approve and allow…"
// menu, in order.
func menuOptions(t *testing.T, m fakeslack.Message) []string {
	t.Helper()
	var bs []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Options  []struct {
				Text struct {
					Text string `json:"text"`
				} `json:"text"`
			} `json:"options"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(m.RawBlocks, &bs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.ActionID == "sg_allow" {
				for _, o := range e.Options {
					out = append(out, o.Text.Text)
				}
			}
		}
	}
	return out
}

// allowIn picks rules on card's "Approve and allow…" menu as user and
// returns the second step it opens.
func (h *harness) allowIn(t *testing.T, user string, card fakeslack.Message, rules string) fakeslack.View {
	t.Helper()
	ctx := testCtx(t)
	before, _ := h.fake.OpenView(user)
	if err := h.fake.Select(ctx, user, card.Ref(), "Approve and allow…", rules); err != nil {
		t.Fatal(err)
	}
	v, err := h.fake.WaitView(ctx, user, func(v fakeslack.View) bool { return v.ID != before.ID && v.CallbackID == "sg_allow_modal" })
	if err != nil {
		t.Fatalf("picking %s opened no second step: %v", rules, err)
	}
	return v
}

// A store writer who swaps a pending request's suggestion after its card
// was posted does not turn the approver's pick into the writer's rule:
// the pick names the suggestion the card rendered, and one that no longer
// matches is refused, saying why, with the card left pending and usable,
// whether the swap came before the pick or between the pick and the
// scope chosen in its second step.
func TestAnApproveAndAllowChoiceSwappedInTheStoreIsRefused(t *testing.T) {
	var swapped atomic.Bool
	h := newHarness(t, transportSocket, harnessOpts{
		wrap: func(s store.Store) store.Store { return swapSuggestions{Store: s, swapped: &swapped} },
		cfg:  func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} },
	})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-swap")
	r := npmTest("req-swap", "npm test")
	card := h.createRequest(t, s, r, "Approve")

	for _, scope := range []string{"This session", "1 hour", "This repository"} {
		swapped.Store(false)
		v := h.allowIn(t, "U2", card, "Bash(npm test:*)")
		if !slices.Contains(v.Buttons(), scope) {
			t.Fatalf("the second step offers %q, not %q", v.Buttons(), scope)
		}
		swapped.Store(true)
		if err := h.fake.ClickView(ctx, "U2", scope); err != nil {
			t.Fatal(err)
		}
		if _, err := h.fake.WaitView(ctx, "U2", func(v fakeslack.View) bool {
			return v.HasText("not the ones this card showed") && v.HasText("nothing was approved or allowed")
		}); err != nil {
			t.Errorf("%s: the approver was not told why, in the modal: %v", scope, err)
		}
	}
	// Swapped before the pick: refused at once.
	if err := h.fake.Select(ctx, "U2", card.Ref(), "Approve and allow…", "Bash(npm test:*)"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("not the ones this card showed")); err != nil {
		t.Errorf("a pick of a swapped rule set: %v", err)
	}
	got, err := h.st.GetRequest(ctx, r.ID)
	if err != nil || !got.Pending() {
		t.Fatalf("request %+v (%v), want it still pending", got.Decision, err)
	}
	if grants, err := h.st.Kept(ctx, store.StandingGrant); err != nil || len(grants) != 0 {
		t.Errorf("grants %+v (%v): a swapped choice kept a rule", grants, err)
	}
	if m, _ := h.fake.Message(card.Ref()); !hasButton(m, "Approve") {
		t.Fatalf("the card lost its buttons: %s", m.AllText())
	}
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	r.SessionID = s.ID
	if settled, _ := h.waitSettled(t, r, card); settled.Decision.Outcome != store.OutcomeAllow || len(settled.Decision.Permissions) != 0 {
		t.Errorf("approved once: %+v, want an allow with no rule", settled.Decision)
	}
}

// With a policy loaded, the card does not offer as Claude Code's session
// rule a suggestion that could let run, with no card, what a deny or ask
// rule stops; slackgate's own grants for it (which meet the policy first)
// and suggestions clear of every rule still are. A pick of one offered
// before a reload brought such a rule is refused.
func TestASessionRuleThePolicyCouldNotStopIsNotOffered(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2"}}
		c.Policy = mustPolicy(t, "rules:\n  - {name: no-push, match: [\"Bash(git push:*)\"], deny: {}}\n")
	}})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-overlap")
	in, _ := json.Marshal(map[string]string{"command": "git status"})
	rule := func(content string) store.Suggestion {
		return store.Suggestion{Type: "addRules", Behavior: "allow", Destination: "localSettings",
			Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: content}}}
	}
	r := store.Request{ID: "req-overlap", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash", Input: in},
		Suggestions: []store.Suggestion{rule("git:*"), rule("git status")}}
	card := h.createRequest(t, s, r, "Approve")
	if opts := menuOptions(t, card); !slices.Equal(opts, []string{"Bash(git:*)", "Bash(git status)"}) {
		t.Errorf("the menu offers %q, want both rule sets", opts)
	}
	if got := h.allowIn(t, "U2", card, "Bash(git:*)").Buttons(); !slices.Equal(got, []string{"1 hour", "This repository"}) {
		t.Errorf("Bash(git:*) offers %q: want slackgate's grants, not Claude Code's session rule past the deny of git push", got)
	}
	if got := h.allowIn(t, "U2", card, "Bash(git status)").Buttons(); !slices.Equal(got, []string{"This session", "1 hour", "This repository"}) {
		t.Errorf("Bash(git status) offers %q, want every scope", got)
	}

	// A card posted before the rule existed offers it; its pick after
	// the reload is refused.
	h.bot.SetPolicy(nil)
	r2 := r
	r2.ID = "req-overlap-2"
	card2 := h.createRequest(t, h.newSession(t, "sess-overlap-2"), r2, "Approve")
	if got := h.allowIn(t, "U2", card2, "Bash(git:*)").Buttons(); !slices.Contains(got, "This session") {
		t.Fatalf("without a policy every scope should be offered: %q", got)
	}
	h.bot.SetPolicy(mustPolicy(t, "rules:\n  - {name: no-push, match: [\"Bash(git push:*)\"], deny: {}}\n"))
	if err := h.fake.ClickView(ctx, "U2", "This session"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitView(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("*no-push*") }); err != nil {
		t.Fatalf("the approver was not told why: %v", err)
	}
	if got, err := h.st.GetRequest(ctx, r2.ID); err != nil || !got.Pending() {
		t.Fatalf("request %+v (%v), want it still pending", got.Decision, err)
	}
}

// The session's record says which rules ask whom and who started it; one
// a store writer changed (it no longer verifies) approves nothing, and can
// still be denied.
func TestAnAllowInASessionThatDoesNotVerifyIsRefused(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-moved-channel")
	r := npmTest("req-moved-channel", "npm test")
	card := h.createRequest(t, s, r, "Approve")
	if _, err := h.st.UpdateSession(ctx, s.ID, func(x *store.Session) error { x.StartedBy = "U9"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("session record does not verify")); err != nil {
		t.Fatalf("the approver was not told why: %v", err)
	}
	if got, err := h.st.GetRequest(ctx, r.ID); err != nil || !got.Pending() {
		t.Fatalf("request %+v (%v), want it still pending", got.Decision, err)
	}
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Deny"); err != nil {
		t.Fatal(err)
	}
	view, err := h.fake.WaitView(ctx, "U2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.SubmitView(ctx, "U2", view.ID, nil); err != nil {
		t.Fatal(err)
	}
	r.SessionID = s.ID
	if got, _ := h.waitSettled(t, r, card); got.Decision.Outcome != store.OutcomeDeny {
		t.Errorf("decision %+v, want the deny", got.Decision)
	}
}
