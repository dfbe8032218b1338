package decide_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                       { return c.now }
func (c fixedClock) NewTimer(d time.Duration) store.Timer { return store.WallClock{}.NewTimer(d) }

type harness struct {
	st  *boltstore.Store
	pub ed25519.PublicKey
	x   *decide.Decider
	s   store.Session
}

func newHarness(t *testing.T, policyFile string) harness {
	t.Helper()
	return newHarnessWith(t, policyFile, nil)
}

func newHarnessWith(t *testing.T, policyFile string, people decide.People) harness {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pub, key, _ := ed25519.GenerateKey(nil)
	pol, err := policy.Parse("policy.yaml", []byte(policyFile), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	s := store.Session{ID: "sess-1", Thread: store.MessageRef{Channel: "C1", TS: "1.1"}, WorkDir: "/srv/app", StartedBy: "U1", CreatedAt: now}
	if err := store.SignSession(key, &s); err != nil {
		t.Fatal(err)
	}
	x := decide.New(decide.Config{Store: st, Key: key, Clock: fixedClock{now}, Policy: func() *policy.Policy { return pol },
		Facts: func(r store.Request, s store.Session) policy.Request {
			return policy.Request{Tool: r.ToolName, Input: r.Input, Cwd: s.WorkDir, Channel: s.Thread.Channel}
		}, People: people})
	return harness{st: st, pub: pub, x: x, s: s}
}

func (h harness) request(t *testing.T, id string, kind store.Kind, tool, input string) store.Request {
	t.Helper()
	r := store.Request{ID: id, SessionID: h.s.ID, CLIRequestID: "cli-" + id, Kind: kind,
		ToolCall: store.ToolCall{ToolName: tool, Input: json.RawMessage(input)}, CreatedAt: time.Now()}
	if err := h.st.CreateRequest(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r
}

// records stands for what approvers kept: a grant for every tool call, an
// answer for every question; each counts the times it was asked.
func records(grants, answers *int) decide.Records {
	return decide.Records{
		Grant: func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool) {
			*grants++
			return store.Standing{Kind: store.StandingGrant, ID: "grant-1", By: "U2", ByName: "bea"}, true
		},
		Answer: func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool) {
			*answers++
			return store.Standing{Kind: store.StandingAnswer, ID: "ans-1", By: "U3", ByName: "cy", Answers: map[string]string{"Which?": "A"}}, true
		},
	}
}

const denyRM = `rules:
  - name: no-rm
    match: ["Bash(rm:*)"]
    deny: {message: "not here"}
`

func TestADenyRuleWinsOverAGrant(t *testing.T) {
	h := newHarness(t, denyRM)
	r := h.request(t, "req-rm", store.KindTool, "Bash", `{"command":"rm -rf /tmp/x"}`)
	var grants, answers int
	out, ok := h.x.Standing(context.Background(), zerolog.Nop(), r, h.s, records(&grants, &answers))
	if !ok || out.By != decide.ByRule {
		t.Fatalf("Standing = %+v, %v; want settled by the rule", out, ok)
	}
	if grants != 0 {
		t.Errorf("a grant was looked up for a request a deny rule settles")
	}
	d := out.Request.Decision
	if d == nil || d.Outcome != store.OutcomeDeny || d.Rule != "no-rm" || d.Message != "not here" {
		t.Fatalf("decision = %+v; want the rule's deny", d)
	}
	if err := store.VerifyDecision(h.pub, r, *d); err != nil {
		t.Errorf("the rule's decision does not verify: %v", err)
	}
}

func TestAGrantAllowsAToolCallNoRuleMatched(t *testing.T) {
	h := newHarness(t, denyRM)
	r := h.request(t, "req-ls", store.KindTool, "Bash", `{"command":"ls"}`)
	var grants, answers int
	out, ok := h.x.Standing(context.Background(), zerolog.Nop(), r, h.s, records(&grants, &answers))
	if !ok || out.By != decide.ByGrant || out.Kept.ID != "grant-1" {
		t.Fatalf("Standing = %+v, %v; want settled by the grant", out, ok)
	}
	if d := out.Request.Decision; d == nil || d.Grant != "grant-1" || d.By != "U2" || store.VerifyDecision(h.pub, r, *d) != nil {
		t.Errorf("decision = %+v; want a signed allow naming the grant", d)
	}
	if answers != 0 {
		t.Errorf("a remembered answer was looked up for a tool call")
	}
}

func TestARememberedAnswerAnswersAQuestion(t *testing.T) {
	h := newHarness(t, denyRM)
	r := h.request(t, "req-q", store.KindQuestion, "AskUserQuestion", `{"questions":[]}`)
	var grants, answers int
	out, ok := h.x.Standing(context.Background(), zerolog.Nop(), r, h.s, records(&grants, &answers))
	if !ok || out.By != decide.ByAnswer || out.Kept.ID != "ans-1" {
		t.Fatalf("Standing = %+v, %v; want answered from memory", out, ok)
	}
	if grants != 0 {
		t.Errorf("a grant was looked up for a question")
	}
}

func TestASettledRequestNeedsACardUnlessAStandingDeciderSettledIt(t *testing.T) {
	h := newHarness(t, denyRM)
	ctx := context.Background()
	var grants, answers int
	byRule := h.request(t, "req-rm", store.KindTool, "Bash", `{"command":"rm x"}`)
	if _, ok := h.x.Standing(ctx, zerolog.Nop(), byRule, h.s, records(&grants, &answers)); !ok {
		t.Fatal("the deny rule did not settle the request")
	}
	again, _ := h.st.GetRequest(ctx, byRule.ID)
	if out, ok := h.x.Standing(ctx, zerolog.Nop(), again, h.s, records(&grants, &answers)); !ok || out.By != decide.Nobody {
		t.Errorf("a request a rule settled, seen again: %+v, %v; want no card and no second line", out, ok)
	}
	byPerson := h.request(t, "req-person", store.KindTool, "Bash", `{"command":"ls"}`)
	settled, err := h.x.Settle(ctx, byPerson, store.Decision{Outcome: store.OutcomeAllow, By: "U9", At: time.Now()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.x.Standing(ctx, zerolog.Nop(), settled, h.s, records(&grants, &answers)); ok {
		t.Error("a request a person settled before its card was posted gets no card to show the outcome")
	}
}

func TestSettleSignsBeforeTheStoreSeesItAndTheFirstDecisionWins(t *testing.T) {
	h := newHarness(t, denyRM)
	ctx := context.Background()
	r := h.request(t, "req-1", store.KindTool, "Bash", `{"command":"ls"}`)
	var seen []byte
	first := store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "al", At: time.Now()}
	settled, err := h.x.Settle(ctx, r, first, func(d store.Decision) { seen = d.Signature })
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || string(seen) != string(settled.Decision.Signature) {
		t.Errorf("the hook saw signature %x; the store kept %x", seen, settled.Decision.Signature)
	}
	if err := store.VerifyDecision(h.pub, r, *settled.Decision); err != nil {
		t.Errorf("the settled decision does not verify: %v", err)
	}
	lost, err := h.x.Settle(ctx, r, store.Decision{Outcome: store.OutcomeDeny, By: "U2", At: time.Now()}, nil)
	if !errors.Is(err, store.ErrAlreadyDecided) || lost.Decision == nil || lost.Decision.By != "U1" {
		t.Errorf("second Settle = %+v, %v; want ErrAlreadyDecided with the first decision", lost.Decision, err)
	}
}

// TestSettleUnsignedEndsARequestButNeverAllowsOrDeniesIt: what no person
// decided (an API request withdrawn or expired) settles unsigned; an
// allow or deny that way is refused and leaves the request pending.
func TestSettleUnsignedEndsARequestButNeverAllowsOrDeniesIt(t *testing.T) {
	h := newHarness(t, "rules: []\n")
	ctx := context.Background()
	for _, o := range []store.Outcome{store.OutcomeAllow, store.OutcomeDeny} {
		r := h.request(t, "r-"+string(o), store.KindTool, "Bash", `{"command":"ls"}`)
		if _, err := h.x.SettleUnsigned(ctx, r.ID, store.Decision{Outcome: o, At: time.Now()}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("an unsigned %s: %v, want ErrInvalid", o, err)
		}
		if got, err := h.st.GetRequest(ctx, r.ID); err != nil || !got.Pending() {
			t.Errorf("after an unsigned %s the request is %+v, %v; want it pending", o, got.Decision, err)
		}
	}
	r := h.request(t, "r-withdrawn", store.KindTool, "Bash", `{"command":"ls"}`)
	got, err := h.x.SettleUnsigned(ctx, r.ID, store.Decision{Outcome: store.OutcomeCancelled, At: time.Now(), Message: "withdrawn"})
	if err != nil || got.Decision == nil || got.Decision.Outcome != store.OutcomeCancelled || len(got.Decision.Signature) != 0 {
		t.Errorf("a withdrawal settled %+v, %v; want cancelled, unsigned", got.Decision, err)
	}
}
