package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// otherDBQuestion asks the same as dbQuestion with other options: another
// question, which a remembered answer to dbQuestion must not answer.
var otherDBQuestion = map[string]any{"question": "Which database should we use?", "header": "Database", "multiSelect": false,
	"options": []map[string]any{{"label": "SQLite", "description": "one file"}, {"label": "MySQL", "description": "a server"}}}

// remember chooses scope in the card's "Always answer this way…" menu as user.
func (a *app) remember(user string, card fakeslack.Message, scope string) {
	a.tb.Helper()
	if err := a.slack.Select(a.ctx, user, card.Ref(), blocks.RememberLabel, scope); err != nil {
		a.tb.Fatalf("%s choosing %q: %v", user, scope, err)
	}
}

// noCardIn fails when the thread holds a card asking text.
func (a *app) noCardIn(thread, text string) {
	a.tb.Helper()
	for _, m := range a.slack.Thread(general, thread) {
		if m.FromBot() && m.HasText(text) && len(m.Buttons()) > 0 {
			a.tb.Errorf("a card asked %q although it was answered from memory:\n%s", text, a.dump(thread))
		}
	}
}

// cli runs a slackgate command with the app's configuration (after the app
// stopped: the embedded store takes one process at a time).
func (a *app) cli(args ...string) string {
	a.tb.Helper()
	var out, errs bytes.Buffer
	p := program{environ: a.environ, config: &a.cfg, stdout: &out, stderr: &errs}
	if err := p.run(context.WithoutCancel(a.ctx), args); err != nil {
		a.tb.Fatalf("slackgate %s: %v\n%s", strings.Join(args, " "), err, errs.String())
	}
	return out.String()
}

func TestARememberedAnswerAnswersTheSameQuestionUntilForgotten(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{approvers: "S0LEADS", configure: func(c *Config) { c.MaxSessionsPerUser = 10 }},
		relaytest.ToolUse("toolu_q1", "AskUserQuestion", ask(dbQuestion)), relaytest.Text("first done"),
		relaytest.ToolUse("toolu_q2", "AskUserQuestion", ask(dbQuestion)), relaytest.Text("second done"),
		relaytest.ToolUse("toolu_q3", "AskUserQuestion", ask(otherDBQuestion)), relaytest.Text("third done"),
		relaytest.ToolUse("toolu_q4", "AskUserQuestion", ask(dbQuestion)), relaytest.Text("fourth done"))

	// dana may not decide, so may not remember either.
	first := a.mention("start a project")
	card := a.card(first, "Which database should we use?")
	a.remember(dana, card, "Always, in this repository")
	a.click(dana, card.Ref(), "Postgres")
	a.told(dana, "can decide Claude's requests")
	// lee answers and remembers it for the repository.
	a.remember(lee, card, "Always, in this repository")
	a.click(lee, card.Ref(), "Postgres")
	if res := a.toolResult("toolu_q1"); !strings.Contains(res.Content, `"Which database should we use?"="Postgres"`) {
		t.Errorf("the model got %q, want Postgres", res.Content)
	}
	a.told(lee, "Remembered")
	a.threadText(first, "first done")

	// The same question in a new session in the same repository: no card,
	// the model gets the remembered answer, the thread says so in one line.
	second := a.mention("another project")
	line := a.threadText(second, "Answered from memory")
	if !line.HasText("Postgres") || !line.HasText("lee") {
		t.Errorf("the thread line does not say what was answered and who remembered it: %s", line.AllText())
	}
	if res := a.toolResult("toolu_q2"); res.IsError || !strings.Contains(res.Content, `"Which database should we use?"="Postgres"`) {
		t.Errorf("the model got %q (is_error %v), want the remembered Postgres", res.Content, res.IsError)
	}
	a.threadText(second, "second done")
	a.noCardIn(second, "Which database should we use?")
	_, metrics := get(t, a.ops+"/metrics")
	if v := metricValue(t, metrics, "slackgate_decisions_total", `decider="memory",outcome="allow"`); v != 1 {
		t.Errorf("decisions by memory = %v, want 1", v)
	}

	// Other options make another question: a card asks.
	third := a.mention("a third project")
	other := a.card(third, "Which database should we use?")
	if !slices.Contains(other.Buttons(), "MySQL") {
		t.Fatalf("not the card of the other question: %q", other.Buttons())
	}
	a.click(lee, other.Ref(), "MySQL")
	a.threadText(third, "third done")

	// The App Home lists it; only approvers get Forget.
	if err := a.slack.OpenHome(a.ctx, dana); err != nil {
		t.Fatal(err)
	}
	home, err := a.slack.WaitHome(a.ctx, dana, func(v fakeslack.View) bool { return v.HasText("Postgres") })
	if err != nil {
		t.Fatalf("dana's home never listed the answer: %v", err)
	}
	if slices.Contains(home.Buttons(), "Forget") {
		t.Error("a non-approver's home offers Forget")
	}
	if err := a.slack.OpenHome(a.ctx, lee); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitHome(a.ctx, lee, func(v fakeslack.View) bool { return slices.Contains(v.Buttons(), "Forget") }); err != nil {
		t.Fatalf("lee's home offers no Forget: %v", err)
	}
	if err := a.slack.ClickHome(a.ctx, lee, "Forget", "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitHome(a.ctx, lee, func(v fakeslack.View) bool { return v.HasText("Forgotten") && !v.HasText("→ Postgres") }); err != nil {
		t.Fatalf("lee's home never said the answer was forgotten: %v", err)
	}

	// Forgotten: the next time a card asks again.
	fourth := a.mention("a fourth project")
	again := a.card(fourth, "Which database should we use?")
	a.click(lee, again.Ref(), "SQLite")
	a.threadText(fourth, "fourth done")

	a.stop()
	var actions []store.AuditAction
	var fromMemory, forgotten store.AuditEntry
	for l := range strings.Lines(a.cli("audit")) {
		var e store.AuditEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		actions = append(actions, e.Action)
		switch e.Action {
		case store.AuditAnsweredFromMemory:
			fromMemory = e
		case store.AuditAnswerForgotten:
			forgotten = e
		}
	}
	for _, want := range []store.AuditAction{store.AuditAnswerRemembered, store.AuditAnsweredFromMemory, store.AuditAnswerForgotten} {
		if n := len(slices.DeleteFunc(slices.Clone(actions), func(x store.AuditAction) bool { return x != want })); n != 1 {
			t.Errorf("the audit log has %d %s entries, want 1 (all: %v)", n, want, actions)
		}
	}
	if fromMemory.By != lee || fromMemory.AnswerID == "" || fromMemory.Outcome != store.OutcomeAllow {
		t.Errorf("answered_from_memory entry = %+v, want lee's answer allowed", fromMemory)
	}
	if forgotten.By != lee || forgotten.AnswerID != fromMemory.AnswerID {
		t.Errorf("answer_forgotten entry = %+v, want lee forgetting %s", forgotten, fromMemory.AnswerID)
	}
	if out := a.cli("answers", "list", "-json"); strings.TrimSpace(out) != "" {
		t.Errorf("answers list after forgetting = %q, want nothing", out)
	}
}

func TestHookQuestionAnsweredFromMemoryReachesTheModel(t *testing.T) {
	t.Parallel()
	a, base := startHookApp(t,
		relaytest.ToolUse("toolu_hq1", "AskUserQuestion", ask(dbQuestion)), relaytest.Text("first done"),
		relaytest.ToolUse("toolu_hq2", "AskUserQuestion", ask(dbQuestion)), relaytest.Text("second done"))
	run := runTerminal(t, a, base, "60s", true, "start a project")
	_, card := apiCard(t, a, "SQLite")
	a.remember(dana, card, "Always, in this repository")
	a.click(dana, card.Ref(), "SQLite")
	run.wait(t, a)
	a.settled(card.Ref(), "SQLite")

	// A second terminal session in the same directory: answered at once.
	again := runTerminal(t, a, base, "60s", true, "another project")
	again.wait(t, a)
	if res := a.toolResult("toolu_hq2"); res.IsError || !strings.Contains(res.Content, `"Which database should we use?"="SQLite"`) {
		t.Errorf("the model got %q (is_error %v), want the remembered SQLite", res.Content, res.IsError)
	}
	if _, err := a.slack.WaitMessage(a.ctx, fakeslack.Text("Answered from memory")); err != nil {
		t.Errorf("no thread line says the question was answered from memory: %v", err)
	}
}
