package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// The realistic card set (issue 9): requests as long as real ones, rendered
// by Card itself, so `make cards` can regenerate them and measure them on a
// phone-sized screen.

var payments = store.Session{
	ID:        "9b2e7d40-1c3a-4f6e-8a5b-2d9c7e1f0a36",
	Thread:    store.MessageRef{Channel: "C0CHAN", TS: "1700000000.000300"},
	WorkDir:   "/srv/payments",
	StartedBy: "U0LEE",
	State:     store.SessionRunning,
}

const deployCommand = "cd /srv/payments && docker build -t registry.example.com/payments:2026-11-22 . && " +
	"docker push registry.example.com/payments:2026-11-22 && " +
	"kubectl --context prod-eu-west-1 -n payments set image deployment/payments payments=registry.example.com/payments:2026-11-22 && " +
	"kubectl --context prod-eu-west-1 -n payments rollout status deployment/payments --timeout=5m"

func deployRequest() store.Request {
	r := request("req-deploy", store.KindTool, "Bash", mustMarshal(map[string]string{
		"command": deployCommand, "description": "Build, push and roll out payments to prod-eu-west-1"}))
	r.SessionID = payments.ID
	r.Description = "Build, push and roll out payments to prod-eu-west-1"
	r.DecisionReasonType = "subcommandResults"
	r.Suggestions = []store.Suggestion{
		{Type: "addRules", Behavior: "allow", Destination: "localSettings", Rules: []store.SuggestionRule{
			{ToolName: "Bash", RuleContent: "docker build:*"}, {ToolName: "Bash", RuleContent: "docker push:*"}}},
		{Type: "addRules", Behavior: "allow", Destination: "localSettings", Rules: []store.SuggestionRule{
			{ToolName: "Bash", RuleContent: "kubectl --context prod-eu-west-1 -n payments set image:*"},
			{ToolName: "Bash", RuleContent: "kubectl --context prod-eu-west-1 -n payments rollout status:*"}}},
		{Type: "addDirectories", Directories: []string{"/srv/payments/deploy"}, Destination: "session"},
	}
	return r
}

func longWriteRequest() store.Request {
	var b strings.Builder
	b.WriteString("package ledger\n\nimport (\n\t\"context\"\n\t\"fmt\"\n)\n\n")
	for i := 1; b.Len() < 3000 || strings.Count(b.String(), "\n") < 100; i++ {
		fmt.Fprintf(&b, "// step%d reconciles batch %d against the bank statement.\nfunc step%d(ctx context.Context) error { return reconcile(ctx, %d) }\n", i, i, i, i)
		if strings.Count(b.String(), "\n") >= 100 {
			break
		}
	}
	r := request("req-write-long", store.KindTool, "Write", mustMarshal(map[string]string{
		"file_path": "/srv/payments/internal/ledger/reconcile.go", "content": b.String()}))
	r.SessionID = payments.ID
	r.Suggestions = []store.Suggestion{{Type: "setMode", Mode: "acceptEdits", Destination: "session"}}
	return r
}

func longEditRequest() store.Request {
	var old, new strings.Builder
	old.WriteString("func (s *Server) Refund(ctx context.Context, id string) error {\n")
	new.WriteString("func (s *Server) Refund(ctx context.Context, id string) error {\n")
	for i := 0; i < 18; i++ {
		fmt.Fprintf(&old, "\tif err := s.step%d(ctx, id); err != nil {\n\t\treturn err\n\t}\n", i)
		fmt.Fprintf(&new, "\tif err := s.step%d(ctx, id); err != nil {\n\t\treturn fmt.Errorf(\"refund %%s: step %d: %%w\", id, err)\n\t}\n", i, i)
	}
	old.WriteString("\treturn nil\n}")
	new.WriteString("\treturn nil\n}")
	r := request("req-edit-long", store.KindTool, "Edit", mustMarshal(map[string]any{
		"file_path": "/srv/payments/internal/api/refund.go", "old_string": old.String(), "new_string": new.String(), "replace_all": false}))
	r.SessionID = payments.ID
	r.Suggestions = []store.Suggestion{{Type: "setMode", Mode: "acceptEdits", Destination: "session"}}
	return r
}

func mcpBodyRequest() store.Request {
	r := request("req-mcp-body", store.KindTool, "mcp__github__create_issue", mustMarshal(map[string]any{
		"owner": "acme", "repo": "payments", "title": "Refunds fail for partially captured payments",
		"body":   "## What happens\n\nA refund of a partially captured payment returns 500.\n\n## Steps\n\n1. Capture 40 of 100 EUR\n2. Refund 40 EUR\n3. See `ledger: negative balance`\n\n## Expected\n\nThe refund succeeds and the ledger balances.",
		"labels": []string{"bug", "refunds"}, "assignees": []string{"lee"}}))
	r.SessionID = payments.ID
	r.Suggestions = []store.Suggestion{{Type: "addRules", Behavior: "allow", Destination: "localSettings",
		Rules: []store.SuggestionRule{{ToolName: "mcp__github__create_issue"}}}}
	return r
}

const fourQuestions = `{"questions":[` +
	`{"question":"The integration test for refunds fails on CI but passes locally. What should I do first?","header":"Flaky test","multiSelect":false,"options":[` +
	`{"label":"Retry with the same Idempotency-Key to see whether it is a race","description":"Cheapest check; may hide the bug"},` +
	`{"label":"Add logging around the ledger lock and run CI again","description":"Slower, but tells us where it waits"},` +
	`{"label":"Skip the test for now and open an issue","description":"Unblocks the release"}]},` +
	`{"question":"Which database should the new reconciliation job read from?","header":"Database","multiSelect":false,"options":[` +
	`{"label":"The primary, with a statement timeout of 30 seconds","description":"Always fresh"},` +
	`{"label":"The read replica in eu-west-1, accepting up to a minute of lag","description":"No load on the primary"}]},` +
	`{"question":"Which checks should run before every deploy to production?","header":"Checks","multiSelect":true,"options":[` +
	`{"label":"Unit and integration tests","description":"about 6 minutes"},{"label":"Database migration dry run against a snapshot","description":"about 4 minutes"},` +
	`{"label":"Load test of the refund endpoint","description":"about 15 minutes"},{"label":"Manual approval by someone on call"}]},` +
	`{"question":"Where should the runbook for failed reconciliations live?","header":"Runbook","multiSelect":false,"options":[` +
	`{"label":"docs/runbooks in this repository"},{"label":"The team wiki page for payments on call"}]}]}`

func fourQuestionsRequest() store.Request {
	r := questionRequest(fourQuestions)
	r.ID, r.SessionID = "req-four", payments.ID
	return r
}

func longPlanRequest() store.Request {
	var b strings.Builder
	b.WriteString("# Plan: move refunds to the new ledger\n\n")
	steps := []string{"Add the `refunds` table and its migration", "Write refunds through the ledger service",
		"Backfill refunds of the last 90 days", "Switch the API to the new path behind a flag",
		"Run both paths side by side for a week", "Remove the old path and the flag"}
	for i, s := range steps {
		fmt.Fprintf(&b, "## %d. %s\n\n- Change the code in `internal/refunds` and `internal/ledger`.\n- Add tests for partial captures, currency rounding and retries.\n- Risk: a refund written twice; guarded by the idempotency key.\n\n", i+1, s)
	}
	b.WriteString("## Rollback\n\nTurn the flag off; the old path keeps working until step 6.\n")
	r := request("req-plan-long", store.KindPlan, "ExitPlanMode", mustMarshal(map[string]string{
		"plan": b.String(), "planFilePath": "/home/worker/.claude/plans/refunds-ledger-quiet-otter.md"}))
	r.SessionID = payments.ID
	return r
}

// realCards lists the realistic set: every pending card and a settled card
// per outcome, all in the payments session.
func realCards() map[string]store.Request {
	at := t0.Add(3 * time.Minute)
	by := func(o store.Outcome) store.Decision {
		return store.Decision{Outcome: o, By: "U0LEE", ByName: "lee", At: at}
	}
	allow := by(store.OutcomeAllow)
	always := allow
	always.Permissions = []store.Suggestion{deployRequest().Suggestions[1]}
	always.Permissions[0].Destination = "session"
	editedWrite := allow
	editedWrite.UpdatedInput = json.RawMessage(mustMarshal(map[string]string{
		"file_path": "/srv/payments/internal/ledger/reconcile_test.go", "content": "package ledger\n"}))
	editedEdit := allow
	editedEdit.UpdatedInput = json.RawMessage(mustMarshal(map[string]any{
		"file_path": "/srv/payments/internal/api/refund.go", "old_string": "return err", "new_string": "return fmt.Errorf(\"refund: %w\", err)", "replace_all": true}))
	deny := by(store.OutcomeDeny)
	deny.Message, deny.Interrupt = "Not on a Friday: wait for Monday's release window", true
	sentBack := by(store.OutcomeDeny)
	sentBack.Message = "Add a step that compares the old and new ledgers before removing the flag"
	answered := by(store.OutcomeAllow)
	answered.Answers = map[string]string{}
	for _, q := range questions(fourQuestionsRequest()) {
		answered.Answers[q.Question] = q.Options[len(q.Options)-1].Label
	}
	skipped := by(store.OutcomeDeny)
	skipped.Skipped, skipped.Message = true, SkipMessage
	expired := store.Decision{Outcome: store.OutcomeExpired, At: t0.Add(time.Hour), Message: "No decision within 1h0m0s"}
	ended := store.Decision{Outcome: store.OutcomeEnded, At: at, Message: "claude exited (signal: killed)"}
	cancelled := by(store.OutcomeCancelled)
	cancelled.Message = "Claude's turn was stopped"
	return map[string]store.Request{
		"card_real_deploy":              deployRequest(),
		"card_real_write":               longWriteRequest(),
		"card_real_edit":                longEditRequest(),
		"card_real_mcp":                 mcpBodyRequest(),
		"card_real_questions":           fourQuestionsRequest(),
		"card_real_plan":                longPlanRequest(),
		"final_real_deploy_approved":    decided(deployRequest(), allow),
		"final_real_deploy_always":      decided(deployRequest(), always),
		"final_real_deploy_denied":      decided(deployRequest(), deny),
		"final_real_deploy_expired":     decided(deployRequest(), expired),
		"final_real_write_edited":       decided(longWriteRequest(), editedWrite),
		"final_real_edit_edited":        decided(longEditRequest(), editedEdit),
		"final_real_mcp_cancelled":      decided(mcpBodyRequest(), cancelled),
		"final_real_edit_ended":         decided(longEditRequest(), ended),
		"final_real_questions_answered": decided(fourQuestionsRequest(), answered),
		"final_real_questions_skipped":  decided(fourQuestionsRequest(), skipped),
		"final_real_plan_approved":      decided(longPlanRequest(), allow),
		"final_real_plan_sent_back":     decided(longPlanRequest(), sentBack),
	}
}

func TestDeployHeadlineNamesTheProdStep(t *testing.T) {
	m := Card(deployRequest(), payments)
	want := "<@U0LEE> Claude wants to run `kubectl --context prod-eu-west-1 -n payments set image"
	if !strings.HasPrefix(m.Text, want) || !strings.Contains(m.Text, "and 3 other steps in payments") {
		t.Errorf("notification %q, want it to start %q and count the other steps", m.Text, want)
	}
	if strings.Contains(m.Text, "cd /srv/payments") {
		t.Errorf("the session's own cd is news in %q", m.Text)
	}
	if js := mustJSON(t, m.Blocks); !strings.Contains(js, "cd /srv/payments \\u0026amp;\\u0026amp; docker build") ||
		!strings.Contains(js, "rollout status deployment/payments --timeout=5m") {
		t.Errorf("the body does not show the whole command: %s", js)
	}
}

func TestApproveAndAllowMenuAndOlderButtonsDecodeAlike(t *testing.T) {
	r := deployRequest()
	digest := store.SuggestionDigest(r.Suggestions[1])
	menu := &slack.BlockAction{ActionID: string(ActionAlways), BlockID: blockAlways,
		SelectedOption: slack.OptionBlockObject{Value: choiceValue(0, 1, digest, r.ID)}}
	older := &slack.BlockAction{ActionID: actionID(ActionAlways, 1), BlockID: blockActions, Value: choiceValue(0, 1, digest, r.ID)}
	for name, ba := range map[string]*slack.BlockAction{"menu": menu, "older button": older} {
		a, ok := ParseAction(ba)
		if !ok || a.Kind != ActionAlways || a.Index != 1 || a.RequestID != r.ID {
			t.Fatalf("%s: ParseAction = %+v, %v", name, a, ok)
		}
		d, next, err := DecideAction(a, r, nil, alice, t0)
		if err != nil || next != NextDecide || d.Outcome != store.OutcomeAllow || len(d.Permissions) != 1 ||
			d.Permissions[0].Rules[0].RuleContent != "kubectl --context prod-eu-west-1 -n payments set image:*" {
			t.Errorf("%s: decided %+v, %v, %v", name, d, next, err)
		}
	}
	// A card posted before choices named their rules cannot say which
	// rules it showed: its pick allows nothing.
	unnamed, ok := ParseAction(&slack.BlockAction{ActionID: string(ActionAlways), BlockID: blockAlways,
		SelectedOption: slack.OptionBlockObject{Value: value(0, 1, r.ID)}})
	if !ok {
		t.Fatal("a pick of a card without digests is not ours")
	}
	if _, _, err := DecideAction(unnamed, r, nil, alice, t0); !errors.Is(err, ErrChoiceChanged) {
		t.Errorf("a pick naming no digest: %v, want ErrChoiceChanged", err)
	}
	if _, _, ok := GrantChoice(Action{Kind: ActionAlways, RequestID: r.ID, Question: choiceRepo, Index: 1}, r); ok {
		t.Error("a grant pick naming no digest is a grant")
	}
}

func TestAnswerModalStartsFromThePicksOnTheCard(t *testing.T) {
	r := questionRequest(severalQuestions)
	cb := &slack.InteractionCallback{BlockActionState: &slack.BlockActionStates{Values: map[string]map[string]slack.BlockAction{
		questionBlockID(0, r.ID): {string(ActionPick): {SelectedOption: slack.OptionBlockObject{Value: "1"}}},
		questionBlockID(1, r.ID): {string(ActionPick): {SelectedOptions: []slack.OptionBlockObject{{Value: "0"}, {Value: "2"}}}},
	}}}
	v, ok := ModalFor(ModalOther, r, cardRef, cb)
	if !ok {
		t.Fatal("no answer modal")
	}
	if err := ValidateView(v); err != nil {
		t.Fatal(err)
	}
	js := mustJSON(t, v.Blocks)
	if !strings.Contains(js, `"initial_option":{"type":"plain_text"`) && !strings.Contains(js, `"initial_option"`) {
		t.Errorf("the single choice does not start from the card's pick: %s", js)
	}
	if !strings.Contains(js, `"initial_options"`) || !strings.Contains(js, `"SQLite"`) {
		t.Errorf("the picks are not carried over: %s", js)
	}
}
