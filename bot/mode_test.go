package bot

import (
	"slices"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// A mode that skips prompts voids, for what it runs without asking, every
// rule the policy has about it. So acceptEdits is not offered where an
// Edit deny rule could apply, nor picked past an ask rule by someone
// other than that rule's approvers; a switch is signed for the process
// running now, and with none running nothing is queued.
func TestAModeThatSkipsPromptsNeedsWhatThePolicyAsksOfIt(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"U2", "U3"}}
		c.Policy = mustPolicy(t, "rules:\n  - {name: src, match: [\"Edit(src/**)\"], ask: {approvers: [\"U3\"]}}\n")
	}})
	ctx := testCtx(t)
	ts, err := h.fake.Mention(ctx, "U2", "C1", "start")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.claim(t)
	// Played as the worker: Claude runs, and the status line offers modes.
	if _, err := h.st.Publish(ctx, store.Event{SessionID: s.ID, Type: store.EventSessionStarted, Text: "claude started"}); err != nil {
		t.Fatal(err)
	}
	status, err := h.fake.WaitThread(ctx, "C1", ts, fakeslack.Text("mode `default`"))
	if err != nil {
		t.Fatal(err)
	}
	pick := func(user string) {
		t.Helper()
		if err := h.fake.Select(ctx, user, status.Ref(), "Permission mode", "acceptEdits: file edits run"); err != nil {
			t.Fatal(err)
		}
	}
	told := func(user, text string) {
		t.Helper()
		if _, err := h.fake.WaitEphemeral(ctx, user, fakeslack.Text(text)); err != nil {
			t.Fatalf("%s was not told %q: %v", user, text, err)
		}
	}

	pick("U2") // an approver, but not the rule's
	told("U2", "Only <@U3> may approve")
	pick("U3") // the rule's approver, while no Claude runs
	told("U3", "Claude is not running in this session now")
	if _, err := h.st.UpdateSession(ctx, s.ID, func(x *store.Session) error { x.Process = "proc-1"; return nil }); err != nil {
		t.Fatal(err)
	}
	pick("U3")
	if in := h.next(t, s.ID); in.Control != store.ControlSetMode || in.Mode != "acceptEdits" || in.Process != "proc-1" || in.User != "U3" {
		t.Errorf("queued %+v, want U3's switch to acceptEdits signed for proc-1", in)
	}

	h.bot.SetPolicy(mustPolicy(t, "rules:\n  - {name: env, match: [\"Edit(.env)\"], deny: {}}\n"))
	s, err = h.st.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if modes := h.bot.modesOffered(s); slices.Contains(modes, "acceptEdits") {
		t.Errorf("under an Edit deny rule the menu offers %q", modes)
	}
	pick("U3") // from the menu shown before the reload
	told("U3", "rule *env* denies")
	h.bot.SetPolicy(mustPolicy(t, "rules:\n  - {name: two, match: [\"Bash(rm:*)\"], ask: {count: 2, approvers: [\"*\"]}}\n"))
	if modes := h.bot.modesOffered(s); slices.Contains(modes, "acceptEdits") {
		t.Errorf("under a two-person rule on rm the menu offers %q", modes)
	}
	pick("U3")
	told("U3", "needs 2 approvals")
	h.bot.SetPolicy(mustPolicy(t, "rules:\n  - {name: web, match: [\"WebFetch\"], deny: {}}\n"))
	if modes := h.bot.modesOffered(s); !slices.Contains(modes, "acceptEdits") {
		t.Errorf("with no rule acceptEdits skips, the menu offers %q", modes)
	}
}
