package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func TestAnApprovalsSignatureCoversWhoWhenAndWhatItApproves(t *testing.T) {
	pub, priv := testKey(1)
	r, _ := signedFixture(t, priv)
	a := store.Approval{By: "U1", ByName: "Ada", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if err := store.SignApproval(priv, r, &a); err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyApproval(pub, r, a); err != nil {
		t.Fatalf("VerifyApproval of a fresh signature: %v", err)
	}
	other, _ := testKey(2)
	for name, change := range map[string]func(r *store.Request, a *store.Approval){
		"ByAnotherPerson":  func(_ *store.Request, a *store.Approval) { a.By = "U2" },
		"AtAnotherTime":    func(_ *store.Request, a *store.Approval) { a.At = a.At.Add(time.Second) },
		"OfAnEditedInput":  func(_ *store.Request, a *store.Approval) { a.Input = json.RawMessage(`{"command":"rm -rf /"}`) },
		"OfAnotherRequest": func(r *store.Request, _ *store.Approval) { r.ID = "req-2" },
		"OfAnotherInput":   func(r *store.Request, _ *store.Approval) { r.Input = json.RawMessage(`{"command":"id"}`) },
	} {
		t.Run(name, func(t *testing.T) {
			r2, a2 := r, a
			change(&r2, &a2)
			if err := store.VerifyApproval(pub, r2, a2); !errors.Is(err, store.ErrBadSignature) {
				t.Errorf("VerifyApproval = %v, want ErrBadSignature", err)
			}
		})
	}
	if err := store.VerifyApproval(other, r, a); !errors.Is(err, store.ErrBadSignature) {
		t.Errorf("VerifyApproval under another key = %v, want ErrBadSignature", err)
	}
	a.Signature = nil
	if err := store.VerifyApproval(pub, r, a); !errors.Is(err, store.ErrUnsigned) {
		t.Errorf("VerifyApproval unsigned = %v, want ErrUnsigned", err)
	}
}

func TestADecisionsSignatureCoversEveryApprover(t *testing.T) {
	pub, priv := testKey(1)
	r, d := signedFixture(t, priv)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d.Approvals = []store.Approval{{By: "U1", ByName: "Ada", At: at}, {By: "U2", ByName: "Lin", At: at}}
	if err := store.SignDecision(priv, r, &d); err != nil {
		t.Fatal(err)
	}
	if err := store.VerifyDecision(pub, r, d); err != nil {
		t.Fatalf("VerifyDecision: %v", err)
	}
	for name, approvals := range map[string][]store.Approval{
		"OneLeftOut":   d.Approvals[:1],
		"OneReplaced":  {d.Approvals[0], {By: "U3", ByName: "Lin", At: at}},
		"OrderChanged": {d.Approvals[1], d.Approvals[0]},
		"NoneAtAll":    nil,
	} {
		d2 := d
		d2.Approvals = approvals
		if err := store.VerifyDecision(pub, r, d2); !errors.Is(err, store.ErrBadSignature) {
			t.Errorf("%s: VerifyDecision = %v, want ErrBadSignature", name, err)
		}
	}
	// A decision without approvals signed before they existed (payload
	// v1) still verifies: TestADecisionSignedInPayloadV1StillVerifies.
}

func TestAddApprovalCountsEachPersonOnce(t *testing.T) {
	var r store.Request
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	steps := []struct {
		by          string
		input       string
		added, last bool
		err         error
	}{
		{"U1", `{"command":"ls -l"}`, true, false, nil},
		{"U1", `{"command":"ls -l"}`, false, false, nil},
		{"U2", ``, false, false, store.ErrInputChanged},
		{"U2", `{ "command" : "ls -l" }`, true, true, nil},
		{"U3", `{"command":"ls -l"}`, false, false, nil},
	}
	for i, s := range steps {
		added, last, err := store.AddApproval(&r, store.Approval{By: s.by, At: at, Input: json.RawMessage(s.input)}, 2)
		if added != s.added || last != s.last || !errors.Is(err, s.err) && err != s.err {
			t.Errorf("step %d (%s): added %v last %v err %v; want %v %v %v", i, s.by, added, last, err, s.added, s.last, s.err)
		}
	}
	if len(r.Approvals) != 2 {
		t.Errorf("approvals %+v, want U1 and U2", r.Approvals)
	}
}
