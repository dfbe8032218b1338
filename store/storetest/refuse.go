package storetest

import (
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testRefuse(t *testing.T) {
	t.Run("ReplacesTheDecisionAuditsAndAnnounces", h.testRefuseReplaces)
	t.Run("RejectsWhatItCannotRefuse", h.testRefuseRejects)
}

// refusal is a decision the worker could not verify, replaced.
func refusal() store.Decision {
	return store.Decision{Outcome: store.OutcomeRefused, At: base.Add(2 * time.Minute), Message: "not signed"}
}

// testRefuseReplaces pins Refuse on a settled request: the decision read
// back is the refusal, the audit log gains a refused entry naming the
// decider the replaced decision claimed, and the bus announces the request
// settled again, so the card can say it. A signature survives Decide too.
func (h *harness) testRefuseReplaces(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	sid := uniq("sess")
	ch := make(chan delivery, 8)
	c := h.startConsumer(t, s2, uniq("group"), "c1", collect(sid, "c1", ch))
	h.ready(t, s2, c)
	r := newRequest(sid, 0)
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	claimed := allow("U7")
	claimed.Signature = []byte("not really a signature")
	_, err := s.Decide(ctx, r.ID, claimed)
	requireNoError(t, err, "Decide")
	got, err := s2.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	requireSameDecision(t, claimed, *got.Decision)

	d := refusal()
	refused, err := s2.Refuse(ctx, r.ID, d)
	requireNoError(t, err, "Refuse")
	want := r
	want.Decision = &d
	requireSameRequest(t, want, refused)
	got, err = s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest after Refuse")
	requireSameRequest(t, want, got)

	entries, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	input, inputSum := store.AuditInput(r, r.Input)
	wantEntry := store.AuditEntry{Action: store.AuditRefused, RequestID: r.ID, SessionID: sid, Kind: r.Kind, Tool: r.ToolName,
		Outcome: store.OutcomeRefused, By: claimed.By, ByName: claimed.ByName, Message: d.Message, Input: input, InputSHA256: inputSum}
	if len(entries) != 3 {
		t.Fatalf("AuditLog = %+v, want created, settled, refused", entries)
	}
	last := entries[2]
	if !last.At.Equal(d.At) {
		t.Errorf("refused entry At = %v, want the refusal's %v", last.At, d.At)
	}
	wantEntry.ID, wantEntry.At, wantEntry.Seq, wantEntry.Prev, wantEntry.Hash = last.ID, last.At, last.Seq, last.Prev, last.Hash
	if last != wantEntry {
		t.Errorf("refused entry:\n got %+v\nwant %+v", last, wantEntry)
	}

	var types []store.EventType
	for range 3 {
		e := await(t, h, ch, "an event of the request").event
		if e.RequestID != r.ID {
			t.Errorf("event %+v is not about %s", e, r.ID)
		}
		types = append(types, e.Type)
	}
	if types[0] != store.EventRequestCreated || types[1] != store.EventRequestSettled || types[2] != store.EventRequestSettled {
		t.Errorf("events = %v, want created, settled, settled again by Refuse", types)
	}
}

// testRefuseRejects pins what Refuse will not do, and that a rejected call
// leaves the request and the audit log as they were.
func (h *harness) testRefuseRejects(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	pending := createRequest(t, ctx, s)
	settled := createRequest(t, ctx, s)
	_, err := s.Decide(ctx, settled.ID, allow("U1"))
	requireNoError(t, err, "Decide")
	twice := createRequest(t, ctx, s)
	_, err = s.Decide(ctx, twice.ID, allow("U2"))
	requireNoError(t, err, "Decide")
	_, err = s.Refuse(ctx, twice.ID, refusal())
	requireNoError(t, err, "first Refuse")
	before, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")

	notRefusal := refusal()
	notRefusal.Outcome = store.OutcomeDeny
	noTime := refusal()
	noTime.At = time.Time{}
	for _, tc := range []struct {
		name   string
		id     string
		d      store.Decision
		target error
	}{
		{"UnknownRequest", uniq("missing"), refusal(), store.ErrNotFound},
		{"PendingRequest", pending.ID, refusal(), store.ErrInvalid},
		{"RefusedAlready", twice.ID, refusal(), store.ErrInvalid},
		{"NotARefusal", settled.ID, notRefusal, store.ErrInvalid},
		{"RefusalWithoutTime", settled.ID, noTime, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Refuse(ctx, tc.id, tc.d)
			requireIs(t, err, tc.target, "Refuse")
		})
	}
	got, err := s.GetRequest(ctx, pending.ID)
	requireNoError(t, err, "GetRequest")
	if !got.Pending() {
		t.Errorf("a rejected Refuse settled the pending request: %+v", got.Decision)
	}
	got, err = s.GetRequest(ctx, settled.ID)
	requireNoError(t, err, "GetRequest")
	requireSameDecision(t, allow("U1"), *got.Decision)
	after, err := s.AuditLog(ctx, "", 100)
	requireNoError(t, err, "AuditLog")
	if len(after) != len(before) {
		t.Errorf("rejected Refuse calls appended to the audit log: %+v", after[len(before):])
	}
}
