package blocks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

func TestRememberChoiceReadsTheCardsMenu(t *testing.T) {
	r := questionRequest(oneQuestion)
	state := func(v string) *slack.InteractionCallback {
		return &slack.InteractionCallback{BlockActionState: &slack.BlockActionStates{Values: map[string]map[string]slack.BlockAction{
			blockRemember: {string(ActionRemember): {SelectedOption: slack.OptionBlockObject{Value: v}}},
		}}}
	}
	for _, tc := range []struct {
		name  string
		cb    *slack.InteractionCallback
		scope store.ScopeKind
	}{
		{"Repository", state(value(0, rememberRepo, r.ID)), store.ScopeRepo},
		{"Channel", state(value(0, rememberChannel, r.ID)), store.ScopeChannel},
		{"OnlyThisTime", state(value(0, rememberOnce, r.ID)), ""},
		{"NothingChosen", &slack.InteractionCallback{}, ""},
		{"AnotherRequestsMenu", state(value(0, rememberRepo, "req-other")), ""},
		{"Garbage", state("x"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RememberChoice(r, tc.cb); got != tc.scope {
				t.Errorf("RememberChoice = %q, want %q", got, tc.scope)
			}
		})
	}
	// Choosing in the menu decides nothing.
	a, ok := ParseAction(&slack.BlockAction{ActionID: string(ActionRemember), SelectedOption: slack.OptionBlockObject{Value: value(0, rememberRepo, r.ID)}})
	if !ok || a.Kind != ActionRemember || a.RequestID != r.ID {
		t.Fatalf("ParseAction(remember) = %+v, %v", a, ok)
	}
	if _, next, err := DecideAction(a, r, nil, alice, t0); err != nil || next != NextNothing {
		t.Errorf("DecideAction(remember) = %v, %v; want nothing to decide", next, err)
	}
	tool := bashRequest()
	if _, _, err := DecideAction(Action{Kind: ActionRemember, RequestID: tool.ID}, tool, nil, alice, t0); err == nil {
		t.Error("a remember choice on a tool card was accepted")
	}
}

func TestOnlyQuestionCardsOfferToRemember(t *testing.T) {
	for name, r := range map[string]store.Request{"bash": bashRequest(), "plan": planRequest(), "write": writeRequest()} {
		if m := Card(r, session); strings.Contains(mustMarshal(m.Blocks), string(ActionRemember)) {
			t.Errorf("%s card offers to remember its answer", name)
		}
	}
	if m := Card(questionRequest(oneQuestion), session); !strings.Contains(mustMarshal(m.Blocks), string(ActionRemember)) {
		t.Error("a question card does not offer to remember its answer")
	}
	// A session without a directory has no repository to remember for.
	noDir := session
	noDir.WorkDir = ""
	m := Card(questionRequest(oneQuestion), noDir)
	if raw := mustMarshal(m.Blocks); strings.Contains(raw, "in this repository") || !strings.Contains(raw, "in this channel") {
		t.Error("a session without a directory offers its repository")
	}
}

func TestTheAnswerModalCarriesTheRememberChoice(t *testing.T) {
	r := questionRequest(severalQuestions)
	cb := &slack.InteractionCallback{BlockActionState: &slack.BlockActionStates{Values: map[string]map[string]slack.BlockAction{
		blockRemember: {string(ActionRemember): {SelectedOption: slack.OptionBlockObject{Value: value(0, rememberChannel, r.ID)}}},
	}}}
	mv, ok := ModalFor(ModalOther, r, cardRef, cb)
	if !ok {
		t.Fatal("no modal")
	}
	if err := ValidateView(mv); err != nil {
		t.Fatal(err)
	}
	sub := &slack.InteractionCallback{View: slack.View{CallbackID: mv.CallbackID, PrivateMetadata: mv.PrivateMetadata}}
	v, err := ParseViewSubmission(sub)
	if err != nil || v.Remember != store.ScopeChannel {
		t.Errorf("ParseViewSubmission = %+v, %v; want the channel scope", v, err)
	}
	plainModal, _ := ModalFor(ModalOther, r, cardRef, nil)
	sub.View.PrivateMetadata = plainModal.PrivateMetadata
	if v, _ := ParseViewSubmission(sub); v.Remember != "" {
		t.Errorf("a modal opened without a choice remembers for %q", v.Remember)
	}
}

func TestHomeViewStaysWithinLimitsWithManyAnswers(t *testing.T) {
	var answers []store.Standing
	for i := range 500 {
		a := rememberedChannel()
		a.ID = fmt.Sprintf("ans-%04d", i)
		a.Answers["Which database should we use?"] = strings.Repeat("<!channel> x", 400)
		answers = append(answers, a)
	}
	v := HomeView(answers, HomeOptions{CanForget: true, Notice: strings.Repeat("n", 5000)})
	if err := ValidateHomeView(v); err != nil {
		t.Fatal(err)
	}
	raw := mustMarshal(v)
	if !strings.Contains(raw, "460 more") {
		t.Error("the view does not say how many answers it left out")
	}
	if strings.Contains(raw, "<!channel>") {
		t.Error("an answer's text pings the channel")
	}
	// A viewer who may not forget sees no Forget button.
	if strings.Contains(mustMarshal(HomeView(answers[:3], HomeOptions{})), string(ActionForget)) {
		t.Error("the view offers Forget to someone who may not forget")
	}
	a, ok := ParseAction(&slack.BlockAction{ActionID: string(ActionForget), Value: value(0, 0, "ans-0001")})
	if !ok || a.Kind != ActionForget || a.StandingID != "ans-0001" || a.Forget != store.StandingAnswer {
		t.Errorf("ParseAction(forget) = %+v, %v", a, ok)
	}
}

func TestAnsweredFromMemoryEscapesTheQuestion(t *testing.T) {
	a := rememberedRepo()
	a.Questions[0].Header = "<!here> `x`"
	a.Answers["Which database should we use?"] = "<https://evil.example|ok> \u202e"
	a.ByName = "<@U0BOSS>"
	m := AnsweredFromMemory(a)
	if err := ValidateMessage(m.Text, m.Blocks); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	for _, bad := range []string{"<!here>", "<https://evil", "<@U0BOSS>", "\u202e"} {
		if strings.Contains(string(raw), bad) || strings.Contains(m.Text, bad) {
			t.Errorf("%q reaches Slack unescaped", bad)
		}
	}
}
