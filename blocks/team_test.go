package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// The team set (issue 28): what a realistic team setup sends, rendered by
// the real renderers, so `make cards` measures every family on a phone. A
// 4-step prod deploy under the policy rule prod-deploys-need-two-sres (two
// of the SRE group, never the starter lee), copies by DM, a reminder after
// 30 minutes and an escalation to on-call after an hour.

const prodRule = "prod-deploys-need-two-sres"

// twoSREs is the rule's need as the bot words it: lee, the starter, is
// left out (not_self).
var twoSREs = Needs{Count: 2, From: "<!subteam^S0SRE>"}

var (
	aliceApproval = store.Approval{By: "U0ALICE", ByName: "alice", At: t0.Add(5 * time.Minute)}
	teamReach     = store.Reach{Reminded: t0.Add(30 * time.Minute), Escalated: t0.Add(time.Hour), EscalatedTo: []string{"S0ONCALL"}}
)

// teamDeploy is the deploy waiting for its two SREs, reminded and
// escalated, with a working day to wait.
func teamDeploy() store.Request {
	r := deployRequest()
	r.Deadline = t0.Add(8 * time.Hour)
	r.Reach = teamReach
	r.Card = store.MessageRef{Channel: payments.Thread.Channel, TS: "1700000000.000400"}
	return r
}

// editedDeploy is teamDeploy once alice approved it with a longer rollout
// timeout.
func editedDeploy() store.Request {
	r := teamDeploy()
	a := aliceApproval
	a.Input = json.RawMessage(mustMarshal(map[string]string{
		"command":     strings.Replace(deployCommand, "--timeout=5m", "--timeout=15m", 1),
		"description": "Build, push and roll out payments to prod-eu-west-1"}))
	r.Approvals = []store.Approval{a}
	return r
}

func teamOpts() CardOptions { return CardOptions{Needs: twoSREs, AskRule: prodRule} }

func teamCards() map[string]store.Request {
	one := teamDeploy()
	one.Approvals = []store.Approval{aliceApproval}
	bob := store.Approval{By: "U0BOB", ByName: "bob", At: t0.Add(70 * time.Minute)}
	approved := decided(editedDeploy(), store.Decision{Outcome: store.OutcomeAllow, By: "U0BOB", ByName: "bob", At: bob.At,
		UpdatedInput: editedDeploy().Approvals[0].Input, Approvals: []store.Approval{{By: "U0ALICE", At: aliceApproval.At}, {By: "U0BOB", At: bob.At}}})
	return map[string]store.Request{
		"card_team_deploy":         teamDeploy(),
		"card_team_deploy_one":     one,
		"card_team_deploy_edited":  editedDeploy(),
		"final_team_deploy_by_two": approved,
	}
}

func TestGoldenTeamCards(t *testing.T) {
	for name, r := range teamCards() {
		t.Run(name, func(t *testing.T) {
			m := CardWith(r, payments, teamOpts())
			if err := ValidateMessage(m.Text, m.Blocks); err != nil {
				t.Errorf("card breaks Slack's limits: %v", err)
			}
			checkGolden(t, name, messageJSON(t, m))
		})
	}
}

const teamLink = "https://acme.slack.com/archives/C0CHAN/p1700000000000400?thread_ts=1700000000.000300&cid=C0CHAN"

// teamMessages are the team's copies, reminders and escalation lines, each
// as its reader's screen shows it.
func teamMessages() map[string][]Message {
	o := ReachOptions{CardLink: teamLink, Needs: twoSREs, InThread: true, Deciders: []string{"S0SRE"}}
	forBob, forAlice := o, o
	forBob.InThread, forAlice.InThread = false, false
	forBob.Viewer, forAlice.Viewer = "U0BOB", "U0ALICE"
	escalated := forBob
	escalated.Escalated, escalated.Viewer = true, "U0CAROL"
	fresh := deployRequest()
	fresh.Deadline = t0.Add(8 * time.Hour)
	one := teamDeploy()
	one.Approvals = []store.Approval{aliceApproval}
	reminded := one
	reminded.Reach = store.Reach{Reminded: teamReach.Reminded}
	settled := teamCards()["final_team_deploy_by_two"]
	return map[string][]Message{
		"copy_team_dm":               {Announcement(fresh, payments, forBob)},
		"copy_team_dm_one":           {Announcement(one, payments, forBob)},
		"copy_team_dm_you_approved":  {Announcement(one, payments, forAlice)},
		"copy_team_escalated":        {Announcement(one, payments, escalated)},
		"copy_team_settled":          {Announcement(settled, payments, forBob)},
		"reminder_team_dm":           {Reminder(reminded, payments, forBob, 30*time.Minute)},
		"reminder_team_thread":       {Reminder(reminded, payments, o, 30*time.Minute)},
		"escalation_team_thread":     {Escalation(one, payments, o, time.Hour)},
		"reminder_team_you_approved": {Reminder(reminded, payments, forAlice, 30*time.Minute)},
	}
}

func TestGoldenTeamMessages(t *testing.T) {
	for name, ms := range teamMessages() {
		t.Run(name, func(t *testing.T) {
			checkGoldenMessages(t, name, ms)
		})
	}
}

// waitingItems are n requests waiting for bob, of several kinds, sessions
// and ages: some escalated, one he approved already.
func waitingItems(n int) []Waiting {
	web := store.Session{ID: "5e1d0c3b-7a2f-4b9e-8c6d-1f0e2d3c4b5a", Thread: store.MessageRef{Channel: "C0WEB", TS: "1700000000.000500"},
		WorkDir: "/srv/web", StartedBy: "U0ALICE", State: store.SessionRunning}
	var out []Waiting
	for i := range n {
		var r store.Request
		s := payments
		switch i % 4 {
		case 0:
			r = teamDeploy()
		case 1:
			r = longEditRequest()
		case 2:
			r = request("req-web", store.KindTool, "Bash", `{"command":"npm run build && npm publish --access public"}`)
			s = web
		default:
			r = longPlanRequest()
		}
		r.ID = fmt.Sprintf("%s-%02d", r.ID, i)
		r.CreatedAt = t0.Add(-time.Duration(n-i) * 17 * time.Minute)
		r.Deadline = r.CreatedAt.Add(time.Duration(1+i%3) * time.Hour)
		r.SessionID = s.ID
		if i%5 != 0 {
			r.Reach = store.Reach{}
		}
		needs := Needs{}
		if i%4 == 0 {
			needs = twoSREs
			if i%8 == 0 {
				r.Approvals = []store.Approval{aliceApproval}
			}
			if i == 4 {
				r.Approvals = []store.Approval{{By: "U0BOB", ByName: "bob", At: t0}}
			}
		}
		out = append(out, Waiting{Request: r, Session: s, CardLink: fmt.Sprintf("https://acme.slack.com/archives/%s/p17000000000%04d", s.Thread.Channel, i), Needs: needs})
	}
	return out
}

func TestGoldenTeamHome(t *testing.T) {
	for name, n := range map[string]int{"home_waiting_3": 3, "home_waiting_14": 14} {
		t.Run(name, func(t *testing.T) {
			v := HomeView(nil, HomeOptions{CanForget: true, Waiting: HomeWaiting("U0BOB", waitingItems(n))})
			if err := ValidateHomeView(v); err != nil {
				t.Errorf("home view breaks Slack's limits: %v", err)
			}
			checkGolden(t, name, v)
		})
	}
}

func TestTheProgressPhraseReadsTheSameOnEverySurface(t *testing.T) {
	one := teamDeploy()
	one.Approvals = []store.Approval{aliceApproval}
	const want = "*Needs 1 more approval* from <!subteam^S0SRE> · ✓ <@U0ALICE>"
	o := ReachOptions{CardLink: teamLink, Needs: twoSREs, Viewer: "U0BOB"}
	surfaces := map[string]Message{
		"card":       CardWith(one, payments, teamOpts()),
		"copy":       Announcement(one, payments, o),
		"reminder":   Reminder(one, payments, o, time.Hour),
		"escalation": Escalation(one, payments, o, time.Hour),
		"home row":   {Blocks: homeRow("U0BOB", Waiting{Request: one, Session: payments, CardLink: teamLink, Needs: twoSREs})},
	}
	for name, m := range surfaces {
		if lead := leadText(t, m); !strings.Contains(lead, want) {
			t.Errorf("%s leads with %q, want the phrase %q at body size", name, lead, want)
		}
	}
	// Whoever approved reads that they did, on their copy and in their tab.
	o.Viewer = "U0ALICE"
	for name, m := range map[string]Message{
		"copy":     Announcement(one, payments, o),
		"reminder": Reminder(one, payments, o, time.Hour),
		"home row": {Blocks: homeRow("U0ALICE", Waiting{Request: one, Session: payments, CardLink: teamLink, Needs: twoSREs})},
	} {
		lead := leadText(t, m)
		if !strings.Contains(lead, "✓ You approved · waiting for 1 more") || strings.Contains(mustJSON(t, m.Blocks), string(ActionApprove)) {
			t.Errorf("alice's %s reads %q (or still offers Approve)", name, lead)
		}
	}
	if got := notifyText(&card{req: one, sess: payments}, twoSREs); got != "Approve? `kubectl … set image` (+3) · payments · for <@U0LEE> · 1 of 2" {
		t.Errorf("notification %q", got)
	}
}

// leadText is the text of m's first section.
func leadText(t *testing.T, m Message) string {
	t.Helper()
	for _, b := range m.Blocks {
		if s, ok := b.(*slack.SectionBlock); ok && s.Text != nil {
			return s.Text.Text
		}
	}
	t.Fatalf("no section in %+v", m.Blocks)
	return ""
}

func TestHomeListsEscalatedFirstThenByDeadlineAndWhatYouApprovedLast(t *testing.T) {
	at := func(id string, created, deadline time.Duration) store.Request {
		r := request(id, store.KindTool, "Bash", `{"command":"make `+id+`"}`)
		r.CreatedAt, r.Deadline = t0.Add(created), t0.Add(deadline)
		return r
	}
	soon, late, old := at("soon", 0, time.Hour), at("late", -time.Hour, 5*time.Hour), at("old", -3*time.Hour, 3*time.Hour)
	escalated := at("escalated", 0, 8*time.Hour)
	escalated.Reach = store.Reach{Escalated: t0, EscalatedTo: []string{"S0ONCALL"}}
	mine := at("mine", -5*time.Hour, 10*time.Minute)
	mine.Approvals = []store.Approval{{By: "U0BOB", At: t0}}
	var items []Waiting
	for _, r := range []store.Request{soon, late, mine, old, escalated} {
		items = append(items, Waiting{Request: r, Session: session, Needs: twoSREs})
	}
	raw := mustJSON(t, HomeWaiting("U0BOB", items))
	var order []string
	for _, id := range []string{"escalated", "soon", "old", "late", "mine"} {
		order = append(order, id)
		if !strings.Contains(raw, "make "+id) {
			t.Fatalf("%s is not listed: %s", id, raw)
		}
	}
	slices.SortFunc(order, func(a, b string) int { return strings.Index(raw, "make "+a) - strings.Index(raw, "make "+b) })
	if want := []string{"escalated", "soon", "old", "late", "mine"}; !slices.Equal(order, want) {
		t.Errorf("rows in order %v, want %v", order, want)
	}
	if !strings.Contains(raw, "Waiting for you (4)") || !strings.Contains(raw, "🚨 ") {
		t.Errorf("the header does not count what waits for bob, or the escalated row has no marker: %s", raw)
	}
}

// allowPick is a pick of suggestion i on r's "Approve and allow…" menu.
func allowPick(r store.Request, i int) Action {
	return Action{Kind: ActionAllowRules, RequestID: r.ID, Index: i, Digest: store.SuggestionDigest(r.Suggestions[i])}
}

// scopeButtons are a modal's buttons: label → its confirmation's text
// ("" for none).
func scopeButtons(t *testing.T, v slack.ModalViewRequest) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, b := range v.Blocks.BlockSet {
		if s, ok := b.(*slack.SectionBlock); ok && s.Accessory != nil && s.Accessory.ButtonElement != nil {
			btn := s.Accessory.ButtonElement
			out[btn.Text.Text] = ""
			if btn.Confirm != nil {
				out[btn.Text.Text] = btn.Confirm.Text.Text
			}
		}
	}
	return out
}

func TestApproveAndAllowAsksForHowLongInEachScopesOwnWordsAndOffersOnlyWhatApplies(t *testing.T) {
	r := deployRequest()
	v, err := AllowModal(allowPick(r, 1), r, payments, cardRef, CardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateView(v); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "modal_allow_deploy", v)
	js := mustJSON(t, v.Blocks)
	for _, want := range []string{"kubectl --context prod-eu-west-1 -n payments set image:*", "rollout status:*", // every rule, whole
		"For the rest of this session.", "For 1 hour in this session.", "In this repository, until forgotten.", "`/srv/payments`"} {
		if !strings.Contains(js, want) {
			t.Errorf("the second step lacks %q: %s", want, js)
		}
	}
	got := scopeButtons(t, v)
	if len(got) != 3 || got["This session"] != "" || got["1 hour"] != "" || !strings.Contains(got["This repository"], "in /srv/payments for every session") ||
		!strings.Contains(got["This repository"], "until someone forgets them") {
		t.Errorf("scopes %q: want three, only the repository's asking first, in its own words", got)
	}

	// Only choices that will apply: a directory is Claude Code's alone; a
	// card a policy rule matched gets no grants; nothing left, no option.
	if v, _ := AllowModal(allowPick(r, 2), r, payments, cardRef, CardOptions{}); len(scopeButtons(t, v)) != 1 {
		t.Errorf("a directory offers %q, want Claude Code's session rule only", scopeButtons(t, v))
	}
	ruled := CardOptions{NoGrants: true, AskRule: prodRule}
	if v, _ := AllowModal(allowPick(r, 1), r, payments, cardRef, ruled); len(scopeButtons(t, v)) != 1 || scopeButtons(t, v)["This session"] != "" {
		t.Errorf("a card a rule asks for offers %q, want no grants", scopeButtons(t, v))
	}
	ruled.SessionRule = func(store.Suggestion) bool { return false }
	if _, err := AllowModal(allowPick(r, 1), r, payments, cardRef, ruled); !errors.Is(err, ErrMismatch) {
		t.Errorf("a rule set with no scope left opens: %v", err)
	}
	if js := mustJSON(t, CardWith(r, payments, ruled).Blocks); strings.Contains(js, string(ActionAllowRules)) {
		t.Errorf("the card offers rule sets no scope of which applies: %s", js)
	}

	// A pick whose rule set changed in the store since is refused, at
	// either step.
	stale := r
	stale.Suggestions = slices.Clone(r.Suggestions)
	stale.Suggestions[1].Rules = []store.SuggestionRule{{ToolName: "Bash"}}
	if _, err := AllowModal(allowPick(r, 1), stale, payments, cardRef, CardOptions{}); !errors.Is(err, ErrChoiceChanged) {
		t.Errorf("a stale pick opens its second step: %v", err)
	}
	repo := Action{Kind: ActionAlways, RequestID: r.ID, Question: choiceRepo, Index: 1, Digest: store.SuggestionDigest(r.Suggestions[1])}
	if _, _, err := DecideAction(repo, stale, nil, alice, t0); !errors.Is(err, ErrChoiceChanged) {
		t.Errorf("a stale scope choice decides: %v", err)
	}
	if _, _, ok := GrantChoice(repo, stale); ok {
		t.Error("a stale scope choice is a grant")
	}
}

// teamLines are the team's thread lines, status line and audit lines.
func teamLines() map[string][]Message {
	grant := store.Standing{Kind: store.StandingGrant, ID: "grant-0001", Scope: store.Scope{Kind: store.ScopeSession, Value: payments.ID}, Rules: []string{"Bash(npm test:*)"},
		By: "U0ALICE", ByName: "alice", At: t0, Expires: t0.Add(time.Hour)}
	npm := request("req-npm", store.KindTool, "Bash", `{"command":"npm test -- --watch"}`)
	running := payments
	running.Process = "proc-1"
	at := t0.Add(70 * time.Minute)
	twoApproved := settledLine(editedDeploy(), store.Decision{Outcome: store.OutcomeAllow, By: "U0BOB", ByName: "bob", At: at,
		Approvals: []store.Approval{{By: "U0ALICE", ByName: "alice", At: aliceApproval.At}, {By: "U0BOB", ByName: "bob", At: at}}}, 21)
	deniedAfterOne := settledLine(editedDeploy(), store.Decision{Outcome: store.OutcomeDeny, By: "U0BOB", ByName: "bob", At: at,
		Message: "not before the freeze ends"}, 22)
	byGrant := settledLine(npm, store.Decision{Outcome: store.OutcomeAllow, By: "U0ALICE", ByName: "alice", At: at, Grant: grant.ID}, 23)
	return map[string][]Message{
		"status_mode_menu":    {StatusMessage(running, Status{Phase: PhaseWorking, Modes: []string{"default", "acceptEdits", "plan", "bypassPermissions"}})},
		"event_mode_changed":  {ModeChanged(store.Event{Type: store.EventModeChanged, SessionID: payments.ID, Text: "acceptEdits", By: "U0ALICE", At: t0})},
		"event_grant_allowed": {AllowedByGrant(npm, grant)},
		"audit_team":          {AuditMessage([]AuditLine{twoApproved, deniedAfterOne, byGrant})},
	}
}

func TestGoldenTeamLines(t *testing.T) {
	for name, ms := range teamLines() {
		t.Run(name, func(t *testing.T) {
			checkGoldenMessages(t, name, ms)
		})
	}
}

func TestLinesNameGrantAuthorsAndEveryApproverWithoutMentions(t *testing.T) {
	lines := teamLines()
	grantLine := mustJSON(t, lines["event_grant_allowed"][0].Blocks) + lines["event_grant_allowed"][0].Text
	if strings.Contains(grantLine, "\\u003c@") || !strings.Contains(grantLine, "a rule *alice* added") {
		t.Errorf("a grant's run mentions its author, or does not name her: %s", grantLine)
	}
	audit := mustJSON(t, lines["audit_team"][0].Blocks)
	for _, want := range []string{"*Approved* by *alice* (U0ALICE) and *bob* (U0BOB)", "*Denied* by *bob* (U0BOB) after *alice* (U0ALICE) approved",
		"*Allowed* by a rule *alice* (U0ALICE) added (`grant-0001`)"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit lines do not say %q: %s", want, audit)
		}
	}
	denied := CardWith(decided(editedDeploy(), store.Decision{Outcome: store.OutcomeDeny, By: "U0BOB", At: t0.Add(time.Hour)}), payments, teamOpts())
	if lead := leadText(t, denied); !strings.Contains(lead, "after <@U0ALICE> approved") {
		t.Errorf("a deny after one approval drops the first approver: %q", lead)
	}
}
