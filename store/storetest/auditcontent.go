package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// testAuditSaysWhatWasDecided: the entries of a request say what it was
// about (its command, secrets masked; a long one cut and hashed), where
// (the session's working directory), the input that ran (a person's
// edit), and everyone who approved one that needed two, and who approved
// before a deny.
func (h *harness) testAuditSaysWhatWasDecided(t *testing.T) {
	s := h.newStore(t)
	ctx := h.ctx(t)
	sess := createSession(t, ctx, s)
	approve := func(r store.Request, by, name string) {
		t.Helper()
		_, _, err := s.Approve(ctx, r.ID, store.Approval{By: by, ByName: name, At: base.Add(30 * time.Second)}, 2)
		requireNoError(t, err, "Approve")
	}
	request := func(n int, command string) store.Request {
		t.Helper()
		r := newRequest(sess.ID, n)
		raw, err := json.Marshal(map[string]string{"command": command})
		requireNoError(t, err, "encode the input")
		r.Input = raw
		requireNoError(t, s.CreateRequest(ctx, r), "CreateRequest")
		return r
	}
	// Two of two approve a command holding a token.
	secret := "ghp_" + strings.Repeat("x", 36)
	both := request(1, "curl -H 'Authorization: token "+secret+"' https://api.example.com/deploy")
	approve(both, "U1", "ann")
	d := allow("U2")
	d.Approvals = []store.Approval{{By: "U1", ByName: "ann", At: base.Add(30 * time.Second)}, {By: "U2", ByName: "bo, (the second)", At: d.At}}
	_, err := s.Decide(ctx, both.ID, d)
	requireNoError(t, err, "Decide")
	// One approves, another denies.
	denied := request(2, "rm -rf /srv/project/build")
	approve(denied, "U1", "ann")
	_, err = s.Decide(ctx, denied.ID, store.Decision{Outcome: store.OutcomeDeny, By: "U3", ByName: "cy", At: base.Add(time.Minute), Message: "not before the release"})
	requireNoError(t, err, "Decide")
	// An approver edits the input before approving; a long command.
	edited := request(3, "make deploy ENV=prod")
	e := allow("U1")
	e.UpdatedInput = json.RawMessage(`{"command":"make deploy ENV=staging"}`)
	_, err = s.Decide(ctx, edited.ID, e)
	requireNoError(t, err, "Decide")
	long := request(4, "echo "+strings.Repeat("a", 3*store.MaxAuditInput))
	// A token only a JSON escape hides from a mask run on the raw input.
	escaped := newRequest(sess.ID, 5)
	escaped.Input = json.RawMessage(`{"command":"echo \u0067hp_` + strings.Repeat("x", 36) + `"}`)
	requireNoError(t, s.CreateRequest(ctx, escaped), "CreateRequest")

	entries, err := s.AuditLog(ctx, "", 0)
	requireNoError(t, err, "AuditLog")
	if len(entries) != 8 {
		t.Fatalf("AuditLog = %d entries, want 8", len(entries))
	}
	for i, en := range entries {
		if en.WorkDir != sess.WorkDir || len(en.InputSHA256) != 64 || en.Input == "" {
			t.Errorf("entry %d (%s): workdir %q, input %q, input_sha256 %q; want the session's directory and the input", i, en.Action, en.WorkDir, en.Input, en.InputSHA256)
		}
		if strings.Contains(en.Input, secret) || strings.Contains(en.Input, strings.Repeat("x", 20)) {
			t.Errorf("entry %d records the token: %q", i, en.Input)
		}
	}
	settledBoth, settledDenied, settledEdited, createdLong := entries[1], entries[3], entries[5], entries[6]
	if !strings.HasPrefix(settledBoth.Input, "curl -H 'Authorization: token "+store.SecretMask) || settledBoth.Approvers != "ann (U1), bo the second (U2)" {
		t.Errorf("2-of-2 approval: input %q, approvers %q", settledBoth.Input, settledBoth.Approvers)
	}
	if settledDenied.Input != "rm -rf /srv/project/build" || settledDenied.Approvers != "ann (U1)" || settledDenied.By != "U3" ||
		settledDenied.Message != "not before the release" || settledDenied.Outcome != store.OutcomeDeny {
		t.Errorf("a deny after one approval: %+v", settledDenied)
	}
	if settledEdited.Input != "make deploy ENV=staging" || entries[4].Input != "make deploy ENV=prod" {
		t.Errorf("an edited input: created %q, settled %q; want what was asked, then what ran", entries[4].Input, settledEdited.Input)
	}
	if n := len([]rune(createdLong.Input)); n != store.MaxAuditInput || !strings.HasSuffix(createdLong.Input, "…") {
		t.Errorf("a long input recorded as %d characters, want it cut to %d", n, store.MaxAuditInput)
	}
	if _, sum := store.AuditInput(long, long.Input); createdLong.InputSHA256 != sum {
		t.Errorf("a long input's digest = %s, want %s", createdLong.InputSHA256, sum)
	}
	verifyChain(t, ctx, s)
}
