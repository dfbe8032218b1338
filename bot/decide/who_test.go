package decide_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// team is People as a bot's configuration would answer: APPROVERS are
// U1 to U4; U9 is who an escalation reached.
type team struct{}

func (team) Selves(s store.Session) ([]string, bool) { return []string{s.StartedBy}, true }
func (team) Escalated(_ context.Context, _ zerolog.Logger, _ store.Request, user string) bool {
	return user == "U9"
}
func (team) Approver(_ context.Context, _ zerolog.Logger, user string) (bool, string) {
	if slices.Contains([]string{"U1", "U2", "U3", "U4"}, user) {
		return true, ""
	}
	return false, "Only the approvers can decide."
}
func (team) Among(_ context.Context, ids []string, user string) (bool, error) {
	return slices.Contains(ids, user) || slices.Contains(ids, "*"), nil
}
func (team) Describe(ids []string) string { return strings.Join(ids, ", ") }

const twoPeople = `rules:
  - {name: deploy, match: ["Bash(make deploy:*)"], ask: {count: 2, not_self: true}}
  - {name: db, match: ["Bash(psql:*)"], ask: {approvers: [U3]}}
`

// TestMayAppliesTheRulesAsk: the rule's approvers or APPROVERS, never the
// starter under not_self nor whom the turn answers, and whoever an
// escalation reached.
func TestMayAppliesTheRulesAsk(t *testing.T) {
	h := newHarnessWith(t, twoPeople, team{})
	ctx, log := context.Background(), zerolog.Nop()
	deploy := h.request(t, "req-deploy", store.KindTool, "Bash", `{"command":"make deploy"}`)
	deploy.TurnBy = []string{"U2"}
	db := h.request(t, "req-db", store.KindTool, "Bash", `{"command":"psql -c 'select 1'"}`)
	for _, tc := range []struct {
		r    store.Request
		user string
		ok   bool
	}{
		{deploy, "U1", false}, // started the session
		{deploy, "U2", false}, // the turn answers them
		{deploy, "U3", true},
		{deploy, "U7", false}, // not an approver
		{db, "U3", true},
		{db, "U4", false}, // an approver, but the rule names U3 only
		{db, "U9", true},  // escalated to
	} {
		ok, why := h.x.May(ctx, log, tc.r, h.s, tc.user)
		if ok != tc.ok || ok != (why == "") {
			t.Errorf("May(%s, %s) = %v, %q; want %v and a reason only when refused", tc.r.ID, tc.user, ok, why, tc.ok)
		}
	}
}

// TestApproveCountsEachPersonOnceAndOnlySignedApprovals: the second
// person settles a two-person request with both named; the same person
// twice is told so; an approval a store writer added counts for nothing.
func TestApproveCountsEachPersonOnceAndOnlySignedApprovals(t *testing.T) {
	h := newHarnessWith(t, twoPeople, team{})
	ctx, log := context.Background(), zerolog.Nop()
	ask := policy.AskSpec{Count: 2, NotSelf: true}
	allow := func(by string) store.Decision {
		return store.Decision{Outcome: store.OutcomeAllow, By: by, ByName: strings.ToLower(by), At: time.Now()}
	}
	get := func(id string) store.Request {
		r, err := h.st.GetRequest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := h.request(t, "req-1", store.KindTool, "Bash", `{"command":"make deploy"}`)
	if _, _, tally, err := h.x.Approve(ctx, log, r, ask, allow("U3")); err != nil || tally != decide.Recorded {
		t.Fatalf("first approval: %v, %v; want Recorded", tally, err)
	}
	if _, _, tally, err := h.x.Approve(ctx, log, get(r.ID), ask, allow("U3")); err != nil || tally != decide.Twice {
		t.Fatalf("the same person again: %v, %v; want Twice", tally, err)
	}
	now, d, tally, err := h.x.Approve(ctx, log, get(r.ID), ask, allow("U4"))
	if err != nil || tally != decide.Last || len(d.Approvals) != 2 || d.Approvals[0].By != "U3" || d.Approvals[1].By != "U4" {
		t.Fatalf("second person: %v, %v, approvals %+v; want Last naming U3 and U4", tally, err, d.Approvals)
	}
	if len(d.UpdatedInput) != 0 || len(now.Approvals) != 2 {
		t.Errorf("the settling decision runs %s with %d counted approvals; want the input as asked (nobody edited it) and 2", d.UpdatedInput, len(now.Approvals))
	}

	// A store writer adds an approval no bot signed: it does not count,
	// so the real second approval cannot settle the request.
	forged := h.request(t, "req-2", store.KindTool, "Bash", `{"command":"make deploy"}`)
	if _, _, err := h.st.Approve(ctx, forged.ID, store.Approval{By: "U7", ByName: "mallory", At: time.Now(), Signature: []byte("not a signature")}, 2); err != nil {
		t.Fatal(err)
	}
	if _, _, tally, err := h.x.Approve(ctx, log, get(forged.ID), ask, allow("U3")); err != nil || tally != decide.Unverified {
		t.Errorf("a real approval after a forged one: %v, %v; want Unverified", tally, err)
	}
}
