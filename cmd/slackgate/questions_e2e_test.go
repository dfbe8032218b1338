package main

// End-to-end tests of questions (AskUserQuestion) answered from their card:
// one tap, menus and Submit, Other… for free text, and Skip.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

func ask(qs ...map[string]any) map[string]any { return map[string]any{"questions": qs} }

func TestQuestionAnsweredWithOneTap(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(dbQuestion)),
		relaytest.Text("SQLite it is"))
	thread := a.mention("start a project")
	card := a.card(thread, "Which database should we use?")

	a.click(dana, card.Ref(), "Postgres")
	res := a.toolResult("toolu_q")
	if res.IsError || !strings.Contains(res.Content, `"Which database should we use?"="Postgres"`) {
		t.Errorf("the model got %q (is_error %v), want the answer Postgres", res.Content, res.IsError)
	}
	a.settled(card.Ref(), "Postgres")
}

func TestMultiSelectQuestion(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(featureQuestion)),
		relaytest.Text("noted"))
	thread := a.mention("plan features")
	card := a.card(thread, "Which features do you want?")

	menus := selectBlocks(t, card)
	if err := a.slack.Select(a.ctx, dana, card.Ref(), menus[0], "Auth", "Audit"); err != nil {
		t.Fatal(err)
	}
	a.click(dana, card.Ref(), "Submit answers")
	res := a.toolResult("toolu_q")
	if !strings.Contains(res.Content, `"Which features do you want?"="Auth, Audit"`) {
		t.Errorf("the model got %q, want both labels joined", res.Content)
	}
	a.settled(card.Ref(), "Auth, Audit")
}

func TestTwoQuestionsAreSubmittedTogether(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(dbQuestion, featureQuestion)),
		relaytest.Text("noted"))
	thread := a.mention("set up")
	card := a.card(thread, "Which features do you want?")

	menus := selectBlocks(t, card)
	if len(menus) != 2 {
		t.Fatalf("want one menu per question, got %d", len(menus))
	}
	// Submitting before everything is answered is refused, privately.
	if err := a.slack.Select(a.ctx, dana, card.Ref(), menus[0], "SQLite"); err != nil {
		t.Fatal(err)
	}
	a.click(dana, card.Ref(), "Submit answers")
	if _, err := a.slack.WaitEphemeral(a.ctx, dana, func(m fakeslack.Message) bool { return m.HasText("Which features do you want?") }); err != nil {
		t.Fatalf("no ephemeral saying which question is unanswered: %v", err)
	}
	if err := a.slack.Select(a.ctx, dana, card.Ref(), menus[1], "Export"); err != nil {
		t.Fatal(err)
	}
	a.click(dana, card.Ref(), "Submit answers")

	res := a.toolResult("toolu_q")
	for _, want := range []string{`"Which database should we use?"="SQLite"`, `"Which features do you want?"="Export"`} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("the model got %q, want %s", res.Content, want)
		}
	}
	a.settled(card.Ref(), "Export")
}

func TestOtherSendsAFreeTextAnswer(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(dbQuestion)),
		relaytest.Text("noted"))
	thread := a.mention("pick a db")
	card := a.card(thread, "Which database should we use?")

	a.click(dana, card.Ref(), "Other…")
	view := a.view(dana)
	if _, err := a.slack.SubmitView(a.ctx, dana, view.ID, map[string]string{"Or answer in your own words": "DuckDB, embedded"}); err != nil {
		t.Fatalf("submitting the Other modal: %v", err)
	}
	if res := a.toolResult("toolu_q"); !strings.Contains(res.Content, `"Which database should we use?"="DuckDB, embedded"`) {
		t.Errorf("the model got %q, want the free text verbatim", res.Content)
	}
	a.settled(card.Ref(), "DuckDB, embedded")
}

func TestOtherStartsFromWhatTheCardAlreadyPicked(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(dbQuestion, featureQuestion)),
		relaytest.Text("noted"))
	thread := a.mention("set up")
	card := a.card(thread, "Which features do you want?")
	if err := a.slack.Select(a.ctx, dana, card.Ref(), selectBlocks(t, card)[0], "SQLite"); err != nil {
		t.Fatal(err)
	}
	a.click(dana, card.Ref(), "Other…")
	view := a.view(dana)
	// The database question's menu in the modal starts on the pick made on
	// the card, so answering the other question in words keeps it.
	var raw struct {
		Blocks []struct {
			BlockID string `json:"block_id"`
			Element struct {
				InitialOption *struct {
					Text struct{ Text string } `json:"text"`
				} `json:"initial_option"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(view.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	var initial []string
	for _, b := range raw.Blocks {
		if o := b.Element.InitialOption; o != nil {
			initial = append(initial, o.Text.Text)
		}
	}
	if len(initial) != 1 || !strings.Contains(initial[0], "SQLite") {
		t.Fatalf("the modal's preset picks = %q, want the card's pick SQLite", initial)
	}
}

func TestSkipDeclinesTheQuestion(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_q", "AskUserQuestion", ask(dbQuestion)),
		relaytest.Text("I'll choose myself"))
	thread := a.mention("pick a db")
	card := a.card(thread, "Which database should we use?")

	a.click(dana, card.Ref(), "Skip")
	res := a.toolResult("toolu_q")
	if !res.IsError || !strings.Contains(res.Content, "User skipped this question") {
		t.Errorf("the model got %q (is_error %v), want the skip message", res.Content, res.IsError)
	}
	a.settled(card.Ref(), "Skipped")
}

// selectBlocks returns the block_ids of the card's blocks that hold a menu or
// choice element, in order, leaving out "Always answer this way…" (which
// answers no question).
func selectBlocks(t *testing.T, m fakeslack.Message) []string {
	t.Helper()
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type string `json:"type"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(m.RawBlocks, &bs); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, b := range bs {
		if b.BlockID == blocks.RememberBlockID {
			continue
		}
		for _, e := range b.Elements {
			switch e.Type {
			case "static_select", "multi_static_select", "checkboxes", "radio_buttons":
				ids = append(ids, b.BlockID)
			}
		}
	}
	if len(ids) == 0 {
		t.Fatalf("the card has no menus: %s", m.RawBlocks)
	}
	return ids
}

// firstOption is the text of the first option of the menu in block blockID.
func firstOption(t *testing.T, m fakeslack.Message, blockID string) string {
	t.Helper()
	var bs []struct {
		BlockID  string `json:"block_id"`
		Elements []struct {
			Options []struct {
				Text struct {
					Text string `json:"text"`
				} `json:"text"`
			} `json:"options"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(m.RawBlocks, &bs); err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.BlockID == blockID && len(b.Elements) > 0 && len(b.Elements[0].Options) > 0 {
			return b.Elements[0].Options[0].Text.Text
		}
	}
	t.Fatalf("the card has no menu %s: %s", blockID, m.RawBlocks)
	return ""
}
