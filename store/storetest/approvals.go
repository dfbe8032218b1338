package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testApprovals(t *testing.T) {
	t.Run("CountsEachPersonOnceAndKeepsOrder", h.testApproveCounts)
	t.Run("OnlyOneOfConcurrentApprovalsIsTheLast", h.testApproveRace)
	t.Run("LaterApprovalsApproveTheFirstOnesInput", h.testApproveInput)
	t.Run("SettledUnknownAndInvalid", h.testApproveRejects)
	t.Run("ACopiedApprovalCountsForNoOneMore", h.testApproveCopies)
}

// testApproveCopies writes, as a store writer without the key would, a
// copy of the one signed approval into the record: the request still needs
// as many other people as before.
func (h *harness) testApproveCopies(t *testing.T) {
	if h.cfg.writeApprovals == nil {
		t.Fatal("the backend gives the suite no WithApprovalsWriter")
	}
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	first, _, err := s.Approve(ctx, r.ID, approval("U1", 1), 3)
	requireNoError(t, err, "first Approve")
	h.cfg.writeApprovals(t, s, r.ID, append(first.Approvals, first.Approvals[0], first.Approvals[0]))
	got, last, err := s.Approve(ctx, r.ID, approval("U2", 2), 3)
	requireNoError(t, err, "second person's Approve")
	if last || !got.Pending() {
		t.Fatalf("two people of three (one approval copied twice) made it the last: request %+v", got)
	}
	again, last, err := s.Approve(ctx, r.ID, approval("U1", 3), 3)
	requireNoError(t, err, "the first person again")
	if last || len(store.Approvers(again.Approvals)) != 2 {
		t.Fatalf("the first person's second approval: last %v, approvals %+v; want two people still", last, again.Approvals)
	}
	got, last, err = s.Approve(ctx, r.ID, approval("U3", 4), 3)
	requireNoError(t, err, "third person's Approve")
	if !last {
		t.Fatalf("three people did not make it the last: %+v", got.Approvals)
	}
	if people := store.Approvers(got.Approvals); len(people) != 3 {
		t.Errorf("approvers %q, want U1, U2, U3", people)
	}
}

func approval(by string, minutes int) store.Approval {
	return store.Approval{By: by, ByName: "name of " + by, At: base.Add(time.Duration(minutes) * time.Minute), Signature: []byte("sig-" + by)}
}

func (h *harness) testApproveCounts(t *testing.T) {
	s, s2 := h.pair(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	got, last, err := s.Approve(ctx, r.ID, approval("U1", 1), 3)
	requireNoError(t, err, "first Approve")
	if last || len(got.Approvals) != 1 || !got.Pending() {
		t.Fatalf("after one of three: last %v, request %+v", last, got)
	}
	// The same person again counts once, through either client.
	got, last, err = s2.Approve(ctx, r.ID, approval("U1", 2), 3)
	requireNoError(t, err, "same person again")
	if last || len(got.Approvals) != 1 || !got.Approvals[0].At.Equal(base.Add(time.Minute)) {
		t.Fatalf("the same person twice: last %v, approvals %+v; want the first one only", last, got.Approvals)
	}
	_, last, err = s2.Approve(ctx, r.ID, approval("U2", 3), 3)
	requireNoError(t, err, "second Approve")
	if last {
		t.Fatal("two of three reported as the last")
	}
	got, last, err = s.Approve(ctx, r.ID, approval("U3", 4), 3)
	requireNoError(t, err, "third Approve")
	if !last {
		t.Fatal("the third of three was not the last")
	}
	// A fourth, before the decision is stored, is not recorded.
	_, last, err = s.Approve(ctx, r.ID, approval("U4", 5), 3)
	requireNoError(t, err, "fourth Approve")
	if last {
		t.Fatal("an approval after the last reported as the last")
	}
	stored, err := s2.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	for _, g := range []store.Request{got, stored} {
		if len(g.Approvals) != 3 {
			t.Fatalf("approvals %+v, want U1, U2, U3", g.Approvals)
		}
		for i, by := range []string{"U1", "U2", "U3"} {
			a, want := g.Approvals[i], approval(by, []int{1, 3, 4}[i])
			if a.By != by || a.ByName != want.ByName || !a.At.Equal(want.At) || string(a.Signature) != "sig-"+by {
				t.Errorf("approval %d = %+v, want %s's", i, a, by)
			}
		}
	}
	// Listing pending requests reads them too.
	pending, err := s.ListPending(ctx, r.SessionID)
	requireNoError(t, err, "ListPending")
	if len(pending) != 1 || len(pending[0].Approvals) != 3 {
		t.Errorf("ListPending = %+v, want the request with its three approvals", pending)
	}
}

func (h *harness) testApproveRace(t *testing.T) {
	const n = 20
	s1, s2 := h.pair(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s1)
	lasts := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Go(func() {
			<-start
			_, lasts[i], errs[i] = s.Approve(ctx, r.ID, approval(fmt.Sprintf("U%02d", i), i), 2)
		})
	}
	close(start)
	wg.Wait()
	count := 0
	for i := range n {
		requireNoError(t, errs[i], "Approve")
		if lasts[i] {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d approvals were the last of two; want exactly one", count)
	}
	got, err := s2.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if len(got.Approvals) != 2 || got.Approvals[0].By == got.Approvals[1].By {
		t.Errorf("approvals %+v; want two different people", got.Approvals)
	}
}

func (h *harness) testApproveInput(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	first := approval("U1", 1)
	first.Input = json.RawMessage(`{"command": "ls -la"}`)
	_, _, err := s.Approve(ctx, r.ID, first, 2)
	requireNoError(t, err, "edited first approval")
	got, last, err := s.Approve(ctx, r.ID, approval("U2", 2), 2)
	requireIs(t, err, store.ErrInputChanged, "approval of Claude's own input after an edit")
	if last || len(got.Approvals) != 1 {
		t.Errorf("a refused approval: last %v, approvals %+v", last, got.Approvals)
	}
	second := approval("U2", 3)
	second.Input = json.RawMessage(`{"command":"ls -la"}`) // the same input, spelt another way
	got, last, err = s.Approve(ctx, r.ID, second, 2)
	requireNoError(t, err, "approval of the edited input")
	if !last || len(got.Approvals) != 2 || !sameJSON(got.Approvals[0].Input, first.Input) {
		t.Errorf("last %v, approvals %+v; want both, the first with its input", last, got.Approvals)
	}
}

func (h *harness) testApproveRejects(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	_, _, err := s.Approve(ctx, uniq("missing"), approval("U1", 1), 2)
	requireIs(t, err, store.ErrNotFound, "Approve of an unknown request")
	for name, tc := range map[string]struct {
		a    store.Approval
		need int
	}{
		"NoOne":   {store.Approval{At: base}, 2},
		"NoTime":  {store.Approval{By: "U1"}, 2},
		"NeedOne": {approval("U1", 1), 1},
	} {
		_, _, err := s.Approve(ctx, r.ID, tc.a, tc.need)
		requireIs(t, err, store.ErrInvalid, "Approve "+name)
	}
	_, _, err = s.Approve(ctx, r.ID, approval("U1", 1), 2)
	requireNoError(t, err, "Approve")
	d := allow("U2")
	d.Approvals = []store.Approval{{By: "U1", At: base}, {By: "U2", At: base}}
	_, err = s.Decide(ctx, r.ID, d)
	requireNoError(t, err, "Decide")
	got, last, err := s.Approve(ctx, r.ID, approval("U3", 2), 2)
	requireIs(t, err, store.ErrAlreadyDecided, "Approve of a settled request")
	if last || got.Decision == nil || len(got.Decision.Approvals) != 2 {
		t.Errorf("Approve of a settled request: last %v, request %+v; want its decision with both approvers", last, got)
	}
}
