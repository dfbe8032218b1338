package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func (h *harness) testRequests(t *testing.T) {
	t.Run("CreateGetRoundTripKeepsEveryField", h.testCreateGetRoundTrip)
	t.Run("CreateRejectsBadRequests", h.testCreateRejects)
	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		s := h.newStore(t)
		_, err := s.GetRequest(h.ctx(t), uniq("missing"))
		requireIs(t, err, store.ErrNotFound, "GetRequest")
	})
	t.Run("DecideStoresAndReturnsDecision", h.testDecide)
	t.Run("DecideTwiceReturnsFirstDecision", h.testDecideTwice)
	t.Run("SystemOutcomesAreDecisionsToo", h.testSystemOutcomes)
	t.Run("DecideRejectsBadArguments", h.testDecideRejects)
	t.Run("DecideRaceOneWinner", h.testDecideRace)
	t.Run("WaitDecision", h.testWaitDecision)
	t.Run("ListPendingOldestFirstWithoutDecided", h.testListPending)
	t.Run("SetCardPersistsAndTellsPending", h.testSetCard)
}

func (h *harness) testCreateGetRoundTrip(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := store.Request{
		ID:           uniq("req"),
		SessionID:    uniq("sess"),
		CLIRequestID: "cli-7f3a",
		Kind:         store.KindQuestion,
		ToolCall: store.ToolCall{
			ToolName:           "AskUserQuestion",
			DisplayName:        "Ask",
			Input:              json.RawMessage(`{"questions":[{"question":"Which?","options":[{"label":"A"},{"label":"B \u00e9\"q\""}]}],"n":1.5}`),
			Description:        "asks a question",
			BlockedPath:        "/etc/passwd",
			DecisionReason:     "outside the project",
			DecisionReasonType: "workingDir",
			ToolUseID:          "toolu_01",
			AgentID:            "agent-1",
		},
		Suggestions: []store.Suggestion{
			{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash", RuleContent: "ls:*"}}, Behavior: "allow", Destination: "localSettings"},
			{Type: "setMode", Mode: "acceptEdits", Destination: "session"},
			{Type: "addDirectories", Directories: []string{"/tmp/a", "/tmp/b"}, Destination: "session"},
		},
		Home:      "/home/claude",
		Resolved:  map[string]string{"/srv/app/link": "/etc/passwd", "/srv/app": "/srv/app"},
		CreatedAt: base,
		Deadline:  base.Add(10 * time.Minute),
		Card:      store.MessageRef{Channel: "C123", TS: "1710000000.000100"},
	}
	requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	requireSameRequest(t, r, got)
	if !got.Pending() {
		t.Errorf("a new request is not pending: %+v", got.Decision)
	}

	// A request without a deadline waits forever: the zero time survives.
	r2 := newRequest(r.SessionID, 1)
	requireNoError(t, s.CreateRequest(ctx, r2), "CreateRequest without deadline")
	got2, err := s.GetRequest(ctx, r2.ID)
	requireNoError(t, err, "GetRequest")
	if !got2.Deadline.IsZero() {
		t.Errorf("Deadline = %v, want zero", got2.Deadline)
	}
	requireSameRequest(t, r2, got2)
}

func (h *harness) testCreateRejects(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	existing := createRequest(t, ctx, s)

	decided := newRequest(uniq("sess"), 0)
	d := allow("U1")
	decided.Decision = &d
	noID := newRequest(uniq("sess"), 0)
	noID.ID = ""
	noSession := newRequest("", 0)

	dup := newRequest(uniq("other-sess"), 5)
	dup.ID = existing.ID

	for _, tc := range []struct {
		name string
		r    store.Request
		want error
	}{
		{"DuplicateIDIsExists", dup, store.ErrExists},
		{"AlreadyDecidedIsInvalid", decided, store.ErrInvalid},
		{"EmptyIDIsInvalid", noID, store.ErrInvalid},
		{"EmptySessionIsInvalid", noSession, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireIs(t, s.CreateRequest(ctx, tc.r), tc.want, "CreateRequest")
		})
	}
	// The rejected duplicate did not overwrite the original.
	got, err := s.GetRequest(ctx, existing.ID)
	requireNoError(t, err, "GetRequest")
	requireSameRequest(t, existing, got)
	if _, err := s.GetRequest(ctx, decided.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRequest of a rejected decided request: err = %v, want ErrNotFound", err)
	}
}

func (h *harness) testDecide(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	d := store.Decision{
		Outcome:      store.OutcomeAllow,
		By:           "U42",
		ByName:       "Ada",
		At:           base.Add(90 * time.Second),
		UpdatedInput: json.RawMessage(`{"command":"ls"}`),
		Permissions:  []store.Suggestion{{Type: "addRules", Rules: []store.SuggestionRule{{ToolName: "Bash"}}, Behavior: "allow", Destination: "session"}},
		Answers:      map[string]string{"Which?": "A, B", "Why?": "free text"},
		Rule:         "reads",
		PolicyDigest: "3f9a",
	}
	settled, err := s.Decide(ctx, r.ID, d)
	requireNoError(t, err, "Decide")
	want := r
	want.Decision = &d
	requireSameRequest(t, want, settled)
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	requireSameRequest(t, want, got)
	if got.Pending() {
		t.Error("a decided request is still pending")
	}
}

func (h *harness) testDecideTwice(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	first := allow("U1")
	_, err := s.Decide(ctx, r.ID, first)
	requireNoError(t, err, "first Decide")
	second := store.Decision{Outcome: store.OutcomeDeny, By: "U2", At: base.Add(2 * time.Minute), Message: "no"}
	got, err := s.Decide(ctx, r.ID, second)
	requireIs(t, err, store.ErrAlreadyDecided, "second Decide")
	if got.ID != r.ID || got.Decision == nil {
		t.Fatalf("second Decide returned %+v; want the request with the first decision", got)
	}
	requireSameDecision(t, first, *got.Decision)
	stored, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	requireSameDecision(t, first, *stored.Decision)
}

func (h *harness) testSystemOutcomes(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	for _, o := range []store.Outcome{store.OutcomeDeny, store.OutcomeExpired, store.OutcomeCancelled, store.OutcomeEnded} {
		t.Run(string(o), func(t *testing.T) {
			r := createRequest(t, ctx, s)
			first := store.Decision{Outcome: o, At: base.Add(time.Hour), Message: "settled as " + string(o)}
			if o == store.OutcomeDeny {
				first.Skipped, first.Interrupt = true, true // the deny-only fields survive the round trip
			}
			_, err := s.Decide(ctx, r.ID, first)
			requireNoError(t, err, "Decide "+string(o))
			got, err := s.Decide(ctx, r.ID, allow("U9"))
			requireIs(t, err, store.ErrAlreadyDecided, "allow after "+string(o))
			requireSameDecision(t, first, *got.Decision)
			dec, err := s.WaitDecision(ctx, r.ID)
			requireNoError(t, err, "WaitDecision")
			requireSameDecision(t, first, dec)
		})
	}
}

func (h *harness) testDecideRejects(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	for _, tc := range []struct {
		name string
		id   string
		d    store.Decision
		want error
	}{
		{"UnknownIDIsNotFound", uniq("missing"), allow("U1"), store.ErrNotFound},
		{"UnknownOutcomeIsInvalid", r.ID, store.Decision{Outcome: "maybe", At: base}, store.ErrInvalid},
		{"EmptyOutcomeIsInvalid", r.ID, store.Decision{At: base}, store.ErrInvalid},
		{"ZeroTimeIsInvalid", r.ID, store.Decision{Outcome: store.OutcomeAllow, By: "U1"}, store.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Decide(ctx, tc.id, tc.d)
			requireIs(t, err, tc.want, "Decide")
		})
	}
	// None of the rejected decisions settled the request.
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if !got.Pending() {
		t.Errorf("a rejected decision settled the request: %+v", got.Decision)
	}
}

func (h *harness) testDecideRace(t *testing.T) {
	const n = 50
	s1, s2 := h.pair(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s1)

	type outcome struct {
		by  string
		req store.Request
		err error
	}
	results := make([]outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		s := s1
		if i%2 == 1 {
			s = s2 // half of them decide through the second client
		}
		wg.Go(func() {
			<-start
			d := allow(fmt.Sprintf("U%02d", i))
			req, err := s.Decide(ctx, r.ID, d)
			results[i] = outcome{by: d.By, req: req, err: err}
		})
	}
	close(start)
	wg.Wait()

	winner := ""
	for i, o := range results {
		switch {
		case o.err == nil:
			if winner != "" {
				t.Fatalf("two winners: %s and %s", winner, o.by)
			}
			winner = o.by
		case !errors.Is(o.err, store.ErrAlreadyDecided):
			t.Fatalf("decider %d: err = %v, want nil or ErrAlreadyDecided", i, o.err)
		}
	}
	if winner == "" {
		t.Fatal("no decider won")
	}
	for i, o := range results {
		if o.req.Decision == nil || o.req.Decision.By != winner {
			t.Errorf("decider %d (%s) saw decision %+v; want the winner's (%s)", i, o.by, o.req.Decision, winner)
		}
	}
	got, err := s2.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	if got.Decision == nil || got.Decision.By != winner {
		t.Errorf("stored decision %+v; want the winner's (%s)", got.Decision, winner)
	}
}

func (h *harness) testWaitDecision(t *testing.T) {
	t.Run("ReturnsAtOnceWhenDecided", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		r := createRequest(t, ctx, s)
		d := allow("U1")
		_, err := s.Decide(ctx, r.ID, d)
		requireNoError(t, err, "Decide")
		wctx, cancel := context.WithTimeout(ctx, h.cfg.timeout)
		defer cancel()
		got, err := s.WaitDecision(wctx, r.ID)
		requireNoError(t, err, "WaitDecision")
		requireSameDecision(t, d, got)
	})
	t.Run("BlocksWhilePending", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		r := createRequest(t, ctx, s)
		wctx, cancel := context.WithTimeout(ctx, blockFor)
		defer cancel()
		_, err := s.WaitDecision(wctx, r.ID)
		requireIs(t, err, context.DeadlineExceeded, "WaitDecision on a pending request")
	})
	t.Run("ReturnsDecisionMadeLater", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		r := createRequest(t, ctx, s)
		waiter := goCall(t, ctx, func(ctx context.Context) (store.Decision, error) { return s.WaitDecision(ctx, r.ID) })
		requireBlocked(t, waiter, "WaitDecision before Decide")
		d := store.Decision{Outcome: store.OutcomeDeny, By: "U2", At: base.Add(time.Minute), Message: "not now", Interrupt: true}
		_, err := s.Decide(ctx, r.ID, d)
		requireNoError(t, err, "Decide")
		res := await(t, h, waiter, "WaitDecision after Decide")
		requireNoError(t, res.err, "WaitDecision")
		requireSameDecision(t, d, res.value)
	})
	t.Run("DecisionThroughSecondClientReachesWaiter", func(t *testing.T) {
		s1, s2 := h.pair(t)
		ctx := h.ctx(t)
		r := createRequest(t, ctx, s1)
		waiters := make([]<-chan result[store.Decision], 3)
		for i := range waiters {
			waiters[i] = goCall(t, ctx, func(ctx context.Context) (store.Decision, error) { return s1.WaitDecision(ctx, r.ID) })
		}
		requireBlocked(t, waiters[0], "WaitDecision before Decide")
		d := allow("U3")
		_, err := s2.Decide(ctx, r.ID, d)
		requireNoError(t, err, "Decide on the second client")
		for i, w := range waiters {
			res := await(t, h, w, "WaitDecision on the first client")
			requireNoError(t, res.err, "WaitDecision")
			if res.value.By != d.By {
				t.Errorf("waiter %d got %+v, want %+v", i, res.value, d)
			}
		}
	})
	t.Run("ReturnsContextErrorOnCancel", func(t *testing.T) {
		s := h.newStore(t)
		ctx := h.ctx(t)
		r := createRequest(t, ctx, s)
		wctx, cancel := context.WithCancel(ctx)
		waiter := goCall(t, wctx, func(ctx context.Context) (store.Decision, error) { return s.WaitDecision(ctx, r.ID) })
		requireBlocked(t, waiter, "WaitDecision")
		cancel()
		res := await(t, h, waiter, "WaitDecision after cancel")
		requireIs(t, res.err, context.Canceled, "WaitDecision after cancel")
	})
	t.Run("UnknownIDIsNotFound", func(t *testing.T) {
		s := h.newStore(t)
		ctx, cancel := context.WithTimeout(h.ctx(t), h.cfg.timeout)
		defer cancel()
		_, err := s.WaitDecision(ctx, uniq("missing"))
		requireIs(t, err, store.ErrNotFound, "WaitDecision")
	})
}

func (h *harness) testListPending(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	sa, sb := uniq("sess-a"), uniq("sess-b")
	a1 := newRequest(sa, 1)
	b1 := newRequest(sb, 2)
	a2 := newRequest(sa, 3)
	b2 := newRequest(sb, 4)
	a3 := newRequest(sa, 5)
	for _, r := range []store.Request{a1, b1, a2, b2, a3} {
		requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
	}
	for _, id := range []string{a2.ID, b2.ID} {
		_, err := s.Decide(ctx, id, allow("U1"))
		requireNoError(t, err, "Decide")
	}
	for _, tc := range []struct {
		name    string
		session string
		want    []store.Request
	}{
		{"OneSession", sa, []store.Request{a1, a3}},
		{"OtherSession", sb, []store.Request{b1}},
		{"AllSessions", "", []store.Request{a1, b1, a3}},
		{"UnknownSessionIsEmpty", uniq("nobody"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ListPending(ctx, tc.session)
			requireNoError(t, err, "ListPending")
			if len(got) != len(tc.want) {
				t.Fatalf("ListPending(%q) = %d requests %v, want %d", tc.session, len(got), ids(got), len(tc.want))
			}
			for i := range got {
				requireSameRequest(t, tc.want[i], got[i])
			}
			n, err := s.CountPending(ctx, tc.session)
			requireNoError(t, err, "CountPending")
			if n != len(tc.want) {
				t.Errorf("CountPending(%q) = %d, want %d (what ListPending lists)", tc.session, n, len(tc.want))
			}
		})
	}
}

func ids(rs []store.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func (h *harness) testSetCard(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	r := createRequest(t, ctx, s)
	card := store.MessageRef{Channel: "C9", TS: "1710000000.000200"}
	pending, err := s.SetCard(ctx, r.ID, card)
	requireNoError(t, err, "SetCard")
	if !pending {
		t.Errorf("SetCard on a pending request reports it settled")
	}
	got, err := s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	want := r
	want.Card = card
	requireSameRequest(t, want, got)

	// The card survives the decision and the decision survives a later SetCard.
	d := allow("U1")
	_, err = s.Decide(ctx, r.ID, d)
	requireNoError(t, err, "Decide")
	moved := store.MessageRef{Channel: "C9", TS: "1710000000.000300"}
	pending, err = s.SetCard(ctx, r.ID, moved)
	requireNoError(t, err, "SetCard after Decide")
	if pending {
		t.Errorf("SetCard on a settled request reports it pending")
	}
	got, err = s.GetRequest(ctx, r.ID)
	requireNoError(t, err, "GetRequest")
	want.Card = moved
	want.Decision = &d
	requireSameRequest(t, want, got)

	_, err = s.SetCard(ctx, uniq("missing"), card)
	requireIs(t, err, store.ErrNotFound, "SetCard unknown")
}
