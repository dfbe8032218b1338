package blocks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

func TestGoldenSeveralApprovals(t *testing.T) {
	needs := Needs{Count: 2, From: "<!subteam^S0SRE> or <@U0LEE>"}
	one := bashRequest()
	one.Approvals = []store.Approval{{By: "U0ALICE", At: t0.Add(time.Minute)}}
	edited := bashRequest()
	edited.Approvals = []store.Approval{{By: "U0ALICE", At: t0.Add(time.Minute), Input: json.RawMessage(`{"command":"make deploy ENV=dev"}`)}}
	settled := decided(bashRequest(), store.Decision{Outcome: store.OutcomeAllow, By: "U0BOB", At: t0.Add(2 * time.Minute),
		Approvals: []store.Approval{{By: "U0ALICE", At: t0.Add(time.Minute)}, {By: "U0BOB", At: t0.Add(2 * time.Minute)}}})
	for _, tc := range []struct {
		name      string
		r         store.Request
		has, hasn []string
	}{
		{"card_approvals_none", bashRequest(), []string{`in *repo* for <@U0STARTER>\n*Needs 2 approvals* from <!subteam^S0SRE> or <@U0LEE>"`, "Edit & approve"}, []string{blockAlways}},
		{"card_approvals_one", one, []string{`\n*Needs 1 more approval* from <!subteam^S0SRE> or <@U0LEE> · ✓ <@U0ALICE>"`}, []string{blockAlways, "Edit & approve"}},
		{"card_approvals_edited", edited, []string{"<@U0ALICE>'s edit* is approved and runs", `command:\n- make deploy ENV=staging\n+ make deploy ENV=dev\ndescription:\n- Deploy to staging\n`, "Approve the edit"},
			[]string{"Edit & approve", `"Approve"`}},
		{"final_approved_by_two", settled, []string{"by <@U0ALICE> and <@U0BOB>"}, []string{"approvals*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := CardWith(tc.r, session, CardOptions{Needs: needs})
			if err := ValidateMessage(m.Text, m.Blocks); err != nil {
				t.Errorf("card breaks Slack's limits: %v", err)
			}
			b, _ := json.Marshal(m.Blocks)
			raw := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
			for _, s := range tc.has {
				if !strings.Contains(raw, s) {
					t.Errorf("card lacks %q", s)
				}
			}
			for _, s := range tc.hasn {
				if strings.Contains(raw, s) {
					t.Errorf("card shows %q", s)
				}
			}
			checkGolden(t, tc.name, messageJSON(t, m))
		})
	}
}

func TestApprovalRecordedSaysWhatIsLeft(t *testing.T) {
	r := bashRequest()
	r.Approvals = []store.Approval{{By: "U1", At: t0}}
	got := ApprovalRecorded(r, Needs{Count: 3, From: "<!subteam^S0SRE>"}, "U1")
	if want := "✓ You approved · waiting for 2 more from <!subteam^S0SRE>."; got != want {
		t.Errorf("ApprovalRecorded = %q, want %q", got, want)
	}
}
