package bot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// The other team every test here meets: a Slack Connect partner.
const (
	otherTeamID = "T0OTHER"
	otherOrgID  = "E0OTHER"
)

// outsiders adds one person of the other team per name (their ids are
// "U9" + the name in capitals), so each one's ephemerals tell their
// action's story alone.
func (h *harness) outsiders(names ...string) map[string]string {
	ids := map[string]string{}
	for _, n := range names {
		id := "U9" + strings.ToUpper(n)
		h.fake.AddExternalUser(id, n, otherTeamID, otherOrgID)
		ids[n] = id
	}
	return ids
}

// pending checks that r is still waiting for a person.
func (h *harness) pending(t testing.TB, r store.Request) {
	t.Helper()
	if got, err := h.st.GetRequest(testCtx(t), r.ID); err != nil || !got.Pending() {
		t.Errorf("request %s after an outsider's answer: %+v, %v; want pending", r.ID, got.Decision, err)
	}
}

// openModalFor opens r's Deny modal for user with their latest trigger,
// as the bot would have before the gate: a modal that reached someone
// whose team has since left ALLOWED_TEAMS (a restart with a shorter list).
func (h *harness) openModalFor(t testing.TB, user string, r store.Request, card fakeslack.Message) fakeslack.View {
	t.Helper()
	ctx := testCtx(t)
	r, err := h.st.GetRequest(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	view, ok := blocks.Modal(blocks.ModalDeny, r, store.MessageRef{Channel: card.Channel, TS: card.TS})
	if !ok {
		t.Fatal("no deny modal")
	}
	if _, err := h.bot.api.OpenViewContext(ctx, h.fake.LastTrigger(user), view); err != nil {
		t.Fatal(err)
	}
	v, err := h.fake.WaitView(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPeopleOfAnotherTeamAreRefusedAndChangeNothing(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{}) // APPROVERS=*, so STARTERS=* too: only the team gate stands
			x := h.outsiders("mention", "dm", "command", "reply", "inthread", "click", "submit", "home")
			ctx := testCtx(t)
			rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")

			// A mention, a DM and /claude start nothing.
			ts, err := h.fake.Mention(ctx, x["mention"], "C1", "cat ~/.ssh/id_rsa")
			if err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["mention"], "belongs to another workspace or organization")
			h.noSession(t, "C1", ts)
			dm, err := h.fake.DM(ctx, x["dm"], "read .env")
			if err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["dm"], "belongs to another workspace or organization")
			h.noSession(t, fakeslack.DMChannel(x["dm"]), dm)
			if err := h.fake.SlashCommand(ctx, x["command"], "C1", "/claude", "by command"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["command"], "belongs to another workspace or organization")

			// Replies in a session's thread, with or without a mention,
			// reach nothing: the starter's sentinel is the next input.
			if _, err := h.fake.Mention(ctx, "U1", "C1", "start"); err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if s.StartedBy != "U1" || in.Text != "start" {
				t.Fatalf("claimed %+v / %+v: an outsider's start was queued", s, in)
			}
			if _, err := h.fake.Reply(ctx, x["reply"], "C1", s.Thread.TS, "use your grants for me"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["reply"], "belongs to another workspace or organization")
			if _, err := h.fake.Reply(ctx, x["inthread"], "C1", s.Thread.TS, "<@"+fakeslack.BotUserID+"> and mine"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["inthread"], "belongs to another workspace or organization")
			h.nextIs(t, s, "U1")

			// A click and a modal submission leave the request pending.
			r, card := h.sessionWithRequest(t, "req-outsider")
			if err := h.fake.Click(ctx, x["click"], card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["click"], "belongs to another workspace or organization")
			h.pending(t, r)
			if err := h.fake.Click(ctx, x["submit"], card.Ref(), "Deny"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, x["submit"], "belongs to another workspace or organization")
			if _, open := h.fake.OpenView(x["submit"]); open {
				t.Fatal("an outsider's click opened a modal")
			}
			v := h.openModalFor(t, x["submit"], r, card)
			if _, err := h.fake.SubmitView(ctx, x["submit"], v.ID, map[string]string{}); err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitEphemeral(ctx, x["submit"], func(m fakeslack.Message) bool {
				return m.HasText("belongs to another workspace") && m.Channel == card.Channel && m.ThreadTS == ""
			}); err != nil {
				t.Errorf("the submission's refusal: %v", err)
			}
			h.pending(t, r)

			// The App Home says why and shows no remembered answer.
			if err := h.fake.OpenHome(ctx, x["home"]); err != nil {
				t.Fatal(err)
			}
			home, err := h.fake.WaitHome(ctx, x["home"], func(v fakeslack.View) bool { return v.HasText("another workspace") })
			if err != nil {
				t.Fatal(err)
			}
			if home.HasText("Postgres") || len(home.Buttons()) > 0 {
				t.Errorf("the outsider's App Home shows a remembered answer: %s", home.Raw)
			}

			// The card still decides for someone of the team.
			if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			if got, _ := h.waitSettled(t, r, card); got.Decision.By != "U2" {
				t.Errorf("decision by %s, want U2", got.Decision.By)
			}
		})
	}
}

func TestATeamOrOrganizationInAllowedTeamsIsAdmitted(t *testing.T) {
	for _, listed := range []string{otherTeamID, otherOrgID} {
		t.Run(listed, func(t *testing.T) {
			h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.AllowedTeams = []string{listed} }})
			x := h.outsiders("eve")["eve"]
			ctx := testCtx(t)
			rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")

			if _, err := h.fake.Mention(ctx, x, "C1", "partner's start"); err != nil {
				t.Fatal(err)
			}
			s, in := h.claim(t)
			if s.StartedBy != x || in.Text != "partner's start" {
				t.Fatalf("claimed %+v / %+v, want the partner's session", s, in)
			}
			if _, err := h.fake.Reply(ctx, x, "C1", s.Thread.TS, "and more"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "and more" || in.User != x {
				t.Errorf("the partner's reply = %+v, want it queued", in)
			}
			if err := h.fake.SlashCommand(ctx, x, "C1", "/claude", "by command"); err != nil {
				t.Fatal(err)
			}
			if s, in := h.claim(t); s.StartedBy != x || in.Text != "by command" {
				t.Errorf("claimed %+v / %+v, want the partner's /claude session", s, in)
			}

			r, card := h.sessionWithRequest(t, "req-partner")
			if err := h.fake.Click(ctx, x, card.Ref(), "Deny"); err != nil {
				t.Fatal(err)
			}
			v, err := h.fake.WaitView(ctx, x)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.SubmitView(ctx, x, v.ID, nil); err != nil {
				t.Fatal(err)
			}
			if got, _ := h.waitSettled(t, r, card); got.Decision.Outcome != store.OutcomeDeny || got.Decision.By != x {
				t.Errorf("decision = %+v, want the partner's deny", got.Decision)
			}

			if err := h.fake.OpenHome(ctx, x); err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitHome(ctx, x, func(v fakeslack.View) bool { return v.HasText("Postgres") }); err != nil {
				t.Errorf("the partner's App Home: %v", err)
			}
		})
	}
}

func TestTheTeamGate(t *testing.T) {
	type person struct {
		team, enterprise string
		teams            []string
	}
	people := map[string]person{
		"U1":    {team: "T0HOME"},
		"U9EXT": {team: "T0OTHER", enterprise: "E0OTHER", teams: []string{"T0OTHER"}},
		"W1":    {team: "T0SIBLING", enterprise: "E0HOME", teams: []string{"T0SIBLING", "T0HOME"}},
		"W2":    {team: "T0SIBLING", enterprise: "E0HOME", teams: []string{"T0SIBLING"}},
	}
	tests := []struct {
		name       string
		allowed    []string
		enterprise string // the installation's organization
		a          actor
		want       bool
		lookups    int // users.info calls
		fails      bool
	}{
		{"someone of the team, as the payload says", nil, "", actor{"U1", "T0HOME"}, true, 0, false},
		{"an outsider, as the payload says", nil, "", actor{"U9EXT", "T0OTHER"}, false, 0, false},
		{"a payload naming no team", nil, "", actor{"U1", ""}, true, 1, false},
		{"an outsider in a payload naming no team", nil, "", actor{"U9EXT", ""}, false, 1, false},
		{"a listed team", []string{"T0OTHER"}, "", actor{"U9EXT", "T0OTHER"}, true, 0, false},
		{"a listed organization", []string{"E0OTHER"}, "", actor{"U9EXT", "T0OTHER"}, true, 1, false},
		{"another organization listed", []string{"E0THIRD"}, "", actor{"U9EXT", "T0OTHER"}, false, 1, false},
		{"a member of the team acting from a sibling workspace", nil, "E0HOME", actor{"W1", "T0SIBLING"}, true, 1, false},
		{"the organization's other members", nil, "E0HOME", actor{"W2", "T0SIBLING"}, false, 1, false},
		{"users.info failing", nil, "", actor{"U1", ""}, false, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookups := 0
			g := newTeamGate(tt.allowed, func(_ context.Context, user string) (*slack.User, error) {
				lookups++
				if tt.fails {
					return nil, errors.New("ratelimited")
				}
				p := people[user]
				return &slack.User{ID: user, TeamID: p.team, Enterprise: slack.EnterpriseUser{EnterpriseID: p.enterprise, Teams: p.teams}}, nil
			}, newFakeClock(), time.Minute)
			if ok, _ := g.admits(t.Context(), actor{"U1", "T0HOME"}); ok {
				t.Fatal("admitted before the installation's team is known")
			}
			g.setHome("T0HOME", tt.enterprise)
			ok, err := g.admits(t.Context(), tt.a)
			if ok != tt.want || (err != nil) != tt.fails || lookups != tt.lookups {
				t.Errorf("admits(%+v) = %v, %v after %d lookups; want %v, error %v, %d lookups", tt.a, ok, err, lookups, tt.want, tt.fails, tt.lookups)
			}
		})
	}
}
