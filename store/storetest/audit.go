package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testAudit(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	sid := uniq("sess")
	r1 := newRequest(sid, 1)
	r2 := newRequest(sid, 2)
	r2.Kind, r2.ToolName = store.KindPlan, "ExitPlanMode"
	requireNoError(t, s.CreateRequest(ctx, r1), "CreateRequest")
	d := store.Decision{Outcome: store.OutcomeDeny, By: "U5", ByName: "Grace", At: base.Add(time.Minute), Message: "too risky",
		Rule: "no-prod", PolicyDigest: "3f9a"}
	_, err := s.Decide(ctx, r1.ID, d)
	requireNoError(t, err, "Decide")
	requireNoError(t, s.CreateRequest(ctx, r2), "CreateRequest")
	// Refused calls leave no trace in the log.
	_, err = s.Decide(ctx, r1.ID, allow("U6"))
	requireIs(t, err, store.ErrAlreadyDecided, "second Decide")
	requireIs(t, s.CreateRequest(ctx, r2), store.ErrExists, "duplicate CreateRequest")

	all, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	in1, sum1 := store.AuditInput(r1, r1.Input)
	in2, sum2 := store.AuditInput(r2, r2.Input)
	want := []store.AuditEntry{
		{Action: store.AuditCreated, RequestID: r1.ID, SessionID: sid, Kind: r1.Kind, Tool: r1.ToolName, Input: in1, InputSHA256: sum1},
		{Action: store.AuditSettled, RequestID: r1.ID, SessionID: sid, Kind: r1.Kind, Tool: r1.ToolName, Outcome: d.Outcome, By: d.By, ByName: d.ByName, Message: d.Message, At: d.At,
			Rule: d.Rule, PolicyDigest: d.PolicyDigest, Input: in1, InputSHA256: sum1},
		{Action: store.AuditCreated, RequestID: r2.ID, SessionID: sid, Kind: r2.Kind, Tool: r2.ToolName, Input: in2, InputSHA256: sum2},
	}
	if len(all) != len(want) {
		t.Fatalf("AuditLog = %d entries %+v, want %d", len(all), all, len(want))
	}
	seen := map[string]bool{}
	for i, e := range all {
		if e.ID == "" || seen[e.ID] {
			t.Errorf("entry %d has an empty or repeated id %q", i, e.ID)
		}
		seen[e.ID] = true
		if e.At.IsZero() {
			t.Errorf("entry %d has no time", i)
		}
		w := want[i]
		if !w.At.IsZero() && !w.At.Equal(e.At) {
			t.Errorf("entry %d At = %v, want the decision's %v", i, e.At, w.At)
		}
		// The chain fields have a test of their own (testAuditChain).
		w.ID, w.At, w.Seq, w.Prev, w.Hash = e.ID, e.At, e.Seq, e.Prev, e.Hash
		if w != e {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, e, w)
		}
	}

	for _, tc := range []struct {
		name  string
		after string
		limit int
		want  []store.AuditEntry
	}{
		{"FirstPage", "", 2, all[:2]},
		{"AfterFirst", all[0].ID, 1, all[1:2]},
		{"AfterSecond", all[1].ID, 10, all[2:]},
		{"AfterLastIsEmpty", all[2].ID, 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.AuditLog(ctx, tc.after, tc.limit)
			requireNoError(t, err, "AuditLog")
			if len(got) != len(tc.want) {
				t.Fatalf("AuditLog(%q, %d) = %+v, want %+v", tc.after, tc.limit, got, tc.want)
			}
			for i := range got {
				if got[i].ID != tc.want[i].ID {
					t.Errorf("entry %d id = %s, want %s", i, got[i].ID, tc.want[i].ID)
				}
			}
		})
	}
}

// testClose shows that Close unblocks every blocking call: they return an
// error (Consume may return nil) instead of hanging.
func (h *harness) testClose(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	owned := uniq("sess")
	h.enqueue(t, s, owned, "x")
	h.claimNow(t, s, "A")
	h.nextNow(t, s, owned, "A")

	wait := goCall(t, ctx, func(ctx context.Context) (store.Decision, error) { return s.WaitDecision(ctx, r.ID) })
	claim := goCall(t, ctx, func(ctx context.Context) (string, error) { return s.Claim(ctx, "B") })
	next := goCall(t, ctx, func(ctx context.Context) (store.Input, error) { return s.NextInput(ctx, owned, "A") })
	c := h.startConsumer(t, s, uniq("group"), "c1", func(context.Context, store.Event) error { return nil })
	h.ready(t, s, c)
	requireBlocked(t, wait, "WaitDecision")

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	requireNoError(t, await(t, h, closed, "Close"), "Close")

	if res := await(t, h, wait, "WaitDecision after Close"); res.err == nil {
		t.Errorf("WaitDecision after Close returned %+v and no error", res.value)
	}
	if res := await(t, h, claim, "Claim after Close"); res.err == nil {
		t.Errorf("Claim after Close returned %q and no error", res.value)
	}
	if res := await(t, h, next, "NextInput after Close"); res.err == nil {
		t.Errorf("NextInput after Close returned %+v and no error", res.value)
	}
	await(t, h, c.done, "Consume after Close")
	if _, err := s.GetRequest(ctx, r.ID); err == nil {
		t.Error("GetRequest after Close returned no error")
	}
}

// testAppendAudit: a tool that ran outside slackgate is appended in order
// with the request entries; an entry a transition writes cannot be.
func (h *harness) testAppendAudit(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	sid := uniq("sess")
	r := newRequest(sid, 1)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	ran := store.AuditEntry{Action: store.AuditToolRan, SessionID: sid, Tool: "Bash", Message: "make test",
		ToolUseID: "toolu_1", Result: store.ToolFailed, ReportedBy: "api:laptop", At: base.Add(time.Minute)}
	requireNoError(t, s.AppendAudit(ctx, ran), "AppendAudit")
	all, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	if len(all) != 2 || all[0].Action != store.AuditCreated {
		t.Fatalf("AuditLog = %+v, want the request's created entry, then the tool that ran", all)
	}
	got := all[1]
	ran.ID, ran.Seq, ran.Prev, ran.Hash = got.ID, got.Seq, got.Prev, got.Hash
	if !got.At.Equal(ran.At) {
		t.Errorf("At = %v, want %v", got.At, ran.At)
	}
	got.At = ran.At
	if got != ran {
		t.Errorf("appended entry:\n got %+v\nwant %+v", got, ran)
	}
	for _, bad := range []store.AuditEntry{
		{Action: store.AuditSettled, RequestID: r.ID, SessionID: sid, Outcome: store.OutcomeAllow, At: base},
		{Action: store.AuditToolRan, SessionID: sid, Tool: "Bash", Result: "maybe", ReportedBy: "api:laptop", At: base},
		{Action: store.AuditToolRan, Tool: "Bash", Result: store.ToolSucceeded, ReportedBy: "api:laptop", At: base},
		// A report is a client's claim: it must say whose.
		{Action: store.AuditToolRan, SessionID: sid, Tool: "Bash", Result: store.ToolSucceeded, At: base},
		{Action: store.AuditSessionRefused, Message: "not signed", At: base},
		{Action: store.AuditSessionRefused, SessionID: sid, At: base},
		{Action: store.AuditInputRefused, SessionID: sid, At: base},
		{Action: store.AuditAnswerRefused, RequestID: r.ID, SessionID: sid, Message: "not signed", At: base},
		{Action: store.AuditAnswerRefused, AnswerID: "ans-1", RequestID: r.ID, SessionID: sid, At: base},
		{Action: store.AuditAnswerRemembered, AnswerID: "ans-1", At: base},
	} {
		requireIs(t, s.AppendAudit(ctx, bad), store.ErrInvalid, "AppendAudit of "+string(bad.Action)+" "+bad.Result)
	}
	again, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	if len(again) != 2 {
		t.Errorf("refused appends left entries: %+v", again[2:])
	}
}

// testAppendRefusals: the refusals of records that did not verify (a
// session, a queued input, a remembered answer) are appended on their own,
// in order, as they were given.
func (h *harness) testAppendRefusals(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	sid := uniq("sess")
	refusals := []store.AuditEntry{
		{Action: store.AuditSessionRefused, SessionID: sid, By: "U6", Message: "not signed", At: base},
		{Action: store.AuditInputRefused, SessionID: sid, By: "U6", Message: "input in-1: signature does not verify", At: base.Add(time.Second)},
		{Action: store.AuditAnswerRefused, AnswerID: "ans-1", RequestID: uniq("req"), SessionID: sid, Kind: store.KindQuestion,
			Tool: "AskUserQuestion", By: "U6", ByName: "Mallory", Message: "not signed", At: base.Add(2 * time.Second)},
	}
	for _, a := range refusals {
		requireNoError(t, s.AppendAudit(ctx, a), "AppendAudit of "+string(a.Action))
	}
	all, err := s2.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	if len(all) != len(refusals) {
		t.Fatalf("AuditLog = %+v, want the %d refusals", all, len(refusals))
	}
	for i, got := range all {
		want := refusals[i]
		if !got.At.Equal(want.At) {
			t.Errorf("entry %d At = %v, want %v", i, got.At, want.At)
		}
		want.ID, want.At, want.Seq, want.Prev, want.Hash = got.ID, got.At, got.Seq, got.Prev, got.Hash
		want.Channel, want.ThreadTS = got.Channel, got.ThreadTS // filled from the session
		if got != want {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}
