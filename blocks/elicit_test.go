package blocks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// deployForm is a form elicitation with every kind of field the modal asks
// for; its shape is what Claude Code 2.1.330 forwards (property_order
// included).
const deployForm = `{"subtype":"elicitation","mcp_server_name":"deployer","message":"Where should <!channel> deploy go?","mode":"form",
	"requested_schema":{"type":"object","properties":{
		"region":{"type":"string","title":"Region","description":"Where it runs","oneOf":[{"const":"eu-west-1","title":"Europe (Ireland)"},{"const":"us-east-1","title":"US East"}]},
		"replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":5,"default":2},
		"ratio":{"type":"number","title":"Canary ratio","minimum":0,"maximum":1},
		"notify":{"type":"boolean","title":"Notify the team","default":true},
		"owner":{"type":"string","title":"Owner email","format":"email"},
		"note":{"type":"string","title":"Note","minLength":3,"maxLength":40},
		"when":{"type":"string","title":"Day","format":"date"},
		"tags":{"type":"array","title":"Tags","items":{"type":"string","enum":["fast","safe"]},"maxItems":2}},
	"required":["region","replicas","owner"]},
	"property_order":["region","replicas","ratio","notify","owner","note","when","tags"]}`

const loginLink = `{"subtype":"elicitation","mcp_server_name":"github","message":"Sign in to continue","mode":"url","url":"https://github.com/login/device?code=AB12"}`

func elicitRequest(id, input string) store.Request {
	r := request(id, store.KindElicitation, "elicitation", input)
	r.MCPServer = "deployer"
	return r
}

func elicitCards() map[string]store.Request {
	submitted := decided(elicitRequest("req-el-done", deployForm), store.Decision{Outcome: store.OutcomeAllow, By: "U0ALICE", At: t0.Add(time.Minute),
		Content: json.RawMessage(`{"region":"eu-west-1","replicas":3,"notify":false,"owner":"ops@example.com","tags":["fast"]}`)})
	return map[string]store.Request{
		"card_elicit_form":        elicitRequest("req-el", deployForm),
		"card_elicit_url":         elicitRequest("req-el-url", loginLink),
		"card_elicit_url_hostile": elicitRequest("req-el-evil", `{"mcp_server_name":"x","message":"log in","mode":"url","url":"https://github.com@evil.example/login"}`),
		"card_elicit_unshowable":  elicitRequest("req-el-bad", `{"mcp_server_name":"x","message":"nested","requested_schema":{"type":"object","properties":{"a":{"type":"object"}}}}`),
		"final_elicit_submitted":  submitted,
		"final_elicit_declined":   decided(elicitRequest("req-el-no", deployForm), store.Decision{Outcome: store.OutcomeDeny, By: "U0ALICE", At: t0.Add(time.Minute)}),
		"final_elicit_cancelled":  decided(elicitRequest("req-el-x", deployForm), store.Decision{Outcome: store.OutcomeDeny, Skipped: true, By: "U0ALICE", At: t0.Add(time.Minute)}),
		"final_elicit_url_done":   decided(elicitRequest("req-el-url2", loginLink), store.Decision{Outcome: store.OutcomeAllow, By: "U0ALICE", At: t0.Add(time.Minute)}),
	}
}

func TestGoldenElicitationCardsAndModal(t *testing.T) {
	for name, r := range elicitCards() {
		t.Run(name, func(t *testing.T) {
			m := Card(r, session)
			if err := ValidateMessage(m.Text, m.Blocks); err != nil {
				t.Errorf("card breaks Slack's limits: %v", err)
			}
			checkGolden(t, name, messageJSON(t, m))
		})
	}
	v := ElicitModal(elicitRequest("req-el", deployForm), cardRef)
	if err := ValidateView(v); err != nil {
		t.Errorf("modal breaks Slack's limits: %v", err)
	}
	checkGolden(t, "modal_elicit_form", v)
}

func TestElicitationCardOffersItsChoicesAndShowsTheRealHost(t *testing.T) {
	buttons := func(m Message) []string {
		var out []string
		for _, b := range m.Blocks {
			if a, ok := b.(*slack.ActionBlock); ok {
				for _, e := range a.Elements.ElementSet {
					if btn, ok := e.(*slack.ButtonBlockElement); ok {
						out = append(out, btn.Text.Text)
					}
				}
			}
		}
		return out
	}
	cards := elicitCards()
	for name, want := range map[string]string{
		"card_elicit_form":        "Fill in…|Decline|Cancel",
		"card_elicit_url":         "Open github.com|Done|Decline|Cancel",
		"card_elicit_url_hostile": "Done|Decline|Cancel", // user info in the URL: no button that could lie
		"card_elicit_unshowable":  "Decline|Cancel",
	} {
		if got := strings.Join(buttons(Card(cards[name], session)), "|"); got != want {
			t.Errorf("%s buttons = %s, want %s", name, got, want)
		}
	}
	evil, _ := json.Marshal(Card(cards["card_elicit_url_hostile"], session).Blocks)
	if !strings.Contains(string(evil), "evil.example") {
		t.Errorf("the hostile link's real host is not shown: %s", evil)
	}
	form, _ := json.Marshal(Card(cards["card_elicit_form"], session).Blocks)
	if strings.Contains(string(form), "<!channel>") {
		t.Errorf("the server's message is not escaped: %s", form)
	}
}

// formState is what Slack sends for the modal once the person filled it:
// entries by field name, in each element's own state shape.
func formState(t *testing.T, r store.Request, entries map[string]slack.BlockAction) *slack.InteractionCallback {
	t.Helper()
	fields, err := elicitFields(elicitationOf(r))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]map[string]slack.BlockAction{}
	for i, f := range fields {
		if a, ok := entries[f.Name]; ok {
			values[elicitBlockID(i)] = map[string]slack.BlockAction{actionValue: a}
		}
	}
	cb := &slack.InteractionCallback{}
	cb.View.State = &slack.ViewState{Values: values}
	return cb
}

func picked(v string) slack.OptionBlockObject { return slack.OptionBlockObject{Value: v} }

func TestElicitationFormRoundTripTypesValuesAndNamesBadFields(t *testing.T) {
	r := elicitRequest("req-el", deployForm)
	v := ElicitModal(r, cardRef)
	va := ViewAction{Kind: ModalElicit, RequestID: r.ID, Card: cardRef}
	if len(v.Blocks.BlockSet) != 9 {
		t.Fatalf("modal has %d blocks, want the message and 8 fields", len(v.Blocks.BlockSet))
	}
	good := map[string]slack.BlockAction{
		"region": {SelectedOption: picked("0")}, "replicas": {Value: "3"}, "ratio": {Value: "0.25"},
		"notify": {SelectedOption: picked("false")}, "owner": {Value: "ops@example.com"}, "note": {Value: "ship it"},
		"when": {SelectedDate: "2026-12-01"}, "tags": {SelectedOptions: []slack.OptionBlockObject{picked("0"), picked("1")}},
	}
	d, errs, err := DecideView(va, r, formState(t, r, good), alice, t0)
	if err != nil || errs != nil {
		t.Fatalf("a good form: errs %v, err %v", errs, err)
	}
	want := `{"note":"ship it","notify":false,"owner":"ops@example.com","ratio":0.25,"region":"eu-west-1","replicas":3,"tags":["fast","safe"],"when":"2026-12-01"}`
	if d.Outcome != store.OutcomeAllow || string(d.Content) != want || d.By != alice.ID {
		t.Errorf("decision = %s %s by %s, want allow with\n%s", d.Outcome, d.Content, d.By, want)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the decision is not valid: %v", err)
	}

	for _, tc := range []struct {
		name, field, wantErr string
		a                    slack.BlockAction
	}{
		{"integer out of range", "replicas", "at most 5", slack.BlockAction{Value: "9"}},
		{"integer with a fraction", "replicas", "whole number", slack.BlockAction{Value: "2.5"}},
		{"not a number", "ratio", "a number", slack.BlockAction{Value: "lots"}},
		{"below the minimum", "ratio", "at least 0", slack.BlockAction{Value: "-1"}},
		{"not an email", "owner", "email address", slack.BlockAction{Value: "ops at example"}},
		{"too short", "note", "at least 3 characters", slack.BlockAction{Value: "ok"}},
		{"an option that is not there", "region", "options", slack.BlockAction{SelectedOption: picked("7")}},
		{"a boolean that is neither", "notify", "Yes or No", slack.BlockAction{SelectedOption: picked("maybe")}},
		{"too many tags", "tags", "at most 2", slack.BlockAction{SelectedOptions: []slack.OptionBlockObject{picked("0"), picked("1"), picked("0")}}},
		{"missing required", "owner", "required", slack.BlockAction{Value: "  "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := map[string]slack.BlockAction{}
			for k, v := range good {
				entries[k] = v
			}
			entries[tc.field] = tc.a
			d, errs, err := DecideView(va, r, formState(t, r, entries), alice, t0)
			if err != nil || d.Outcome != "" {
				t.Fatalf("decision %+v, err %v; want field errors only", d, err)
			}
			fields, _ := elicitFields(elicitationOf(r))
			for i, f := range fields {
				msg, bad := errs[elicitBlockID(i)]
				if f.Name == tc.field && (!bad || !strings.Contains(msg, tc.wantErr)) {
					t.Errorf("error on %s = %q, want one saying %q (all: %v)", f.Name, msg, tc.wantErr, errs)
				}
				if f.Name != tc.field && bad {
					t.Errorf("unexpected error on %s: %q", f.Name, msg)
				}
			}
		})
	}
}

func TestElicitationClicksDecideOnlyTheirOwnKind(t *testing.T) {
	form, link := elicitRequest("req-el", deployForm), elicitRequest("req-el-url", loginLink)
	for _, tc := range []struct {
		name    string
		r       store.Request
		kind    ActionKind
		next    Next
		outcome store.Outcome
		skipped bool
		bad     bool
	}{
		{"fill opens the form", form, ActionElicitFill, NextElicitModal, "", false, false},
		{"decline", form, ActionElicitDecline, NextDecide, store.OutcomeDeny, false, false},
		{"cancel", form, ActionElicitCancel, NextDecide, store.OutcomeDeny, true, false},
		{"done on a link", link, ActionElicitDone, NextDecide, store.OutcomeAllow, false, false},
		{"the link button decides nothing", link, ActionLink, NextNothing, "", false, false},
		{"done on a form", form, ActionElicitDone, NextDecide, "", false, true},
		{"fill on a link", link, ActionElicitFill, NextDecide, "", false, true},
		{"approve on an elicitation", form, ActionApprove, NextDecide, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, next, err := DecideAction(Action{Kind: tc.kind, RequestID: tc.r.ID}, tc.r, nil, alice, t0)
			if tc.bad {
				if err == nil {
					t.Errorf("decided %+v, want a mismatch", d)
				}
				return
			}
			if err != nil || next != tc.next || d.Outcome != tc.outcome || d.Skipped != tc.skipped {
				t.Errorf("got %+v next %v err %v", d, next, err)
			}
		})
	}
	// The other kinds refuse the elicitation's buttons.
	if _, _, err := DecideAction(Action{Kind: ActionElicitDone, RequestID: "req-x"}, request("req-x", store.KindTool, "Bash", `{"command":"ls"}`), nil, alice, t0); err == nil {
		t.Error("an elicitation button decided a tool request")
	}
}
