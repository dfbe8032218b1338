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

const dbForm = `{"questions":[{"question":"Which database?","header":"Database","multiSelect":false,` +
	`"options":[{"label":"Postgres"},{"label":"SQLite"}]}]}`

// rememberFor stores an answer to dbForm remembered by by in scope.
func rememberFor(t testing.TB, st store.Store, scope store.Scope, by, choice string) store.Standing {
	t.Helper()
	fp, qs, err := store.QuestionFingerprint("AskUserQuestion", json.RawMessage(dbForm))
	if err != nil {
		t.Fatal(err)
	}
	return rememberSigned(t, st, store.Standing{Kind: store.StandingAnswer, ID: "ans-" + by + "-" + choice, Scope: scope, Fingerprint: fp, Tool: "AskUserQuestion",
		Questions: qs, Answers: map[string]string{"Which database?": choice}, By: by, ByName: by, Channel: "C1", At: time.Now()}, testSigningKey)
}

// rememberSigned stores a signed with key (nil: unsigned), as a bot (or
// someone writing into the store) would.
func rememberSigned(t testing.TB, st store.Store, a store.Standing, key ed25519.PrivateKey) store.Standing {
	t.Helper()
	if key != nil {
		if err := store.SignStanding(key, &a); err != nil {
			t.Fatal(err)
		}
	}
	a, err := st.Keep(testCtx(t), a)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAnAnswerIsUsedOnlyWhileWhoRememberedItIsAnApprover(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"S0OPS"}}
		c.GroupCacheTTL = time.Nanosecond
	}})
	h.fake.AddUserGroup("S0OPS", "U2")
	ctx := testCtx(t)
	// U3 is no approver (any more): their answer for the repository is
	// not used, and a card asks.
	rememberFor(t, h.st, store.Scope{Kind: store.ScopeRepo, Value: testWorkDir}, "U3", "SQLite")
	s := h.newSession(t, "sess-former")
	q := store.Request{ID: "req-former", Kind: store.KindQuestion, ToolCall: store.ToolCall{ToolName: "AskUserQuestion", Input: json.RawMessage(dbForm)}}
	h.createRequest(t, s, q, "Postgres")
	if r, _ := h.st.GetRequest(ctx, q.ID); !r.Pending() {
		t.Fatalf("a former approver's answer decided the request: %+v", r.Decision)
	}

	// U2's answer for the channel is used: no card, one thread line, a
	// decision signed like a person's, naming the answer.
	a := rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")
	s2 := h.newSession(t, "sess-memory")
	q2 := store.Request{ID: "req-memory", SessionID: s2.ID, CLIRequestID: "cli-memory", Kind: store.KindQuestion,
		ToolCall: store.ToolCall{ToolName: "AskUserQuestion", Input: json.RawMessage(dbForm)}, CreatedAt: time.Now()}
	if err := h.st.CreateRequest(ctx, q2); err != nil {
		t.Fatal(err)
	}
	d, err := h.st.WaitDecision(ctx, q2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Remembered != a.ID || d.By != "U2" || d.Answers["Which database?"] != "Postgres" {
		t.Errorf("decision = %+v, want U2's remembered Postgres", d)
	}
	if err := store.VerifyDecision(testSigningKey.Public().(ed25519.PublicKey), q2, d); err != nil {
		t.Errorf("a decision from memory does not verify: %v", err)
	}
	line, err := h.fake.WaitThread(ctx, "C1", s2.Thread.TS, fakeslack.Text("Answered from memory"))
	if err != nil {
		t.Fatal(err)
	}
	if len(line.Buttons()) > 0 {
		t.Errorf("the thread line has buttons: %q", line.Buttons())
	}
}

func TestAStaleForgetButtonOfAFormerApproverForgetsNothing(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{cfg: func(c *Config) {
		c.Approvers = People{IDs: []string{"S0OPS"}}
		c.GroupCacheTTL = time.Nanosecond
	}})
	h.fake.AddUserGroup("S0OPS", "U3")
	ctx := testCtx(t)
	a := rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U3", "Postgres")
	if err := h.fake.OpenHome(ctx, "U3"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U3", func(v fakeslack.View) bool { return slices.Contains(v.Buttons(), "Forget") }); err != nil {
		t.Fatal(err)
	}
	// U3 leaves the approvers; the Forget button on their tab is stale.
	h.fake.AddUserGroup("S0OPS", "U2")
	if err := h.fake.ClickHome(ctx, "U3", "Forget", "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U3", func(v fakeslack.View) bool {
		return v.HasText("can forget remembered answers") && !slices.Contains(v.Buttons(), "Forget")
	}); err != nil {
		t.Fatalf("the former approver was not told, or still sees Forget: %v", err)
	}
	if list, err := h.st.Kept(ctx, store.StandingAnswer); err != nil || len(list) != 1 {
		t.Fatalf("answers after a refused forget = %+v, %v; want the one", list, err)
	}

	if err := h.fake.OpenHome(ctx, "U2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return slices.Contains(v.Buttons(), "Forget") }); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.ClickHome(ctx, "U2", "Forget", "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitHome(ctx, "U2", func(v fakeslack.View) bool { return v.HasText("Forgotten") && v.HasText("Nothing is remembered") }); err != nil {
		t.Fatal(err)
	}
	log, err := h.st.AuditLog(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := log[len(log)-1]; last.Action != store.AuditAnswerForgotten || last.By != "U2" || last.AnswerID != a.ID {
		t.Errorf("last audit entry = %+v, want U2 forgetting %s", last, a.ID)
	}
}

// TestARememberedAnswerThatDoesNotVerifyIsNotUsed writes remembered answers
// into the store as someone with store access would: one unsigned (as
// every answer remembered before answers were signed is), one signed and
// then re-attributed to an approver. Neither answers the question: a card
// asks, and each refusal is audited. A signed answer still is used.
func TestARememberedAnswerThatDoesNotVerifyIsNotUsed(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Approvers = People{IDs: []string{"U2"}} }})
	ctx := testCtx(t)
	fp, qs, err := store.QuestionFingerprint("AskUserQuestion", json.RawMessage(dbForm))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(id string, scope store.Scope, by string) store.Standing {
		return store.Standing{Kind: store.StandingAnswer, ID: id, Scope: scope, Fingerprint: fp, Tool: "AskUserQuestion", Questions: qs,
			Answers: map[string]string{"Which database?": "SQLite"}, By: by, ByName: by, Channel: "C1", At: time.Now()}
	}
	unsigned := rememberSigned(t, h.st, answer("ans-unsigned", store.Scope{Kind: store.ScopeRepo, Value: testWorkDir}, "U2"), nil)
	reattributed := answer("ans-reattributed", store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U3")
	if err := store.SignStanding(testSigningKey, &reattributed); err != nil {
		t.Fatal(err)
	}
	reattributed.By, reattributed.ByName = "U2", "U2"
	reattributed = rememberSigned(t, h.st, reattributed, nil)

	s := h.newSession(t, "sess-forged-answers")
	q := store.Request{ID: "req-forged-answers", Kind: store.KindQuestion, ToolCall: store.ToolCall{ToolName: "AskUserQuestion", Input: json.RawMessage(dbForm)}}
	h.createRequest(t, s, q, "Postgres")
	if r, _ := h.st.GetRequest(ctx, q.ID); !r.Pending() {
		t.Fatalf("an answer that does not verify decided the request: %+v", r.Decision)
	}
	refused := map[string]store.AuditEntry{}
	entries, err := h.st.AuditLog(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == store.AuditAnswerRefused {
			refused[e.AnswerID] = e
		}
	}
	for _, a := range []store.Standing{unsigned, reattributed} {
		if e, ok := refused[a.ID]; !ok || e.RequestID != q.ID || e.By != "U2" || e.Message == "" {
			t.Errorf("refusal of %s audited as %+v (found %v), want naming the request, U2 and why", a.ID, e, ok)
		}
	}

	// Remembered again (signed), the channel's answer is used.
	good := rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")
	s2 := h.newSession(t, "sess-good-answer")
	q2 := store.Request{ID: "req-good-answer", SessionID: s2.ID, CLIRequestID: "cli-good", Kind: store.KindQuestion,
		ToolCall: store.ToolCall{ToolName: "AskUserQuestion", Input: json.RawMessage(dbForm)}, CreatedAt: time.Now()}
	if err := h.st.CreateRequest(ctx, q2); err != nil {
		t.Fatal(err)
	}
	if d, err := h.st.WaitDecision(ctx, q2.ID); err != nil || d.Remembered != good.ID {
		t.Errorf("decision %+v (%v), want the signed answer %s", d, err, good.ID)
	}
}
