package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// allOfBash is the suggestion a store writer swaps in: every Bash command
// for the session.
var allOfBash = []map[string]any{{"type": "addRules", "behavior": "allow", "destination": "localSettings",
	"rules": []map[string]any{{"toolName": "Bash"}}}}

// swapSuggestions rewrites the pending request's permission_suggestions
// straight in Redis, as someone who reached the store but holds no bot's
// key would: the request's record is a hash whose "body" field is its
// JSON. It returns the request as the store held it before.
func (a *app) swapSuggestions(suggestions any) store.Request {
	a.tb.Helper()
	pending, err := a.redisStore().ListPending(a.ctx, "")
	if err != nil || len(pending) != 1 {
		a.tb.Fatalf("the attacker sees pending requests %+v (%v), want one", pending, err)
	}
	opts, err := redis.ParseURL(a.cfg.RedisURL)
	if err != nil {
		a.tb.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer func() { _ = rdb.Close() }()
	key := "{" + a.cfg.RedisKeyPrefix + ":r:" + pending[0].ID + "}:req"
	raw, err := rdb.HGet(a.ctx, key, "body").Result()
	if err != nil {
		a.tb.Fatalf("reading the request's body at %s: %v", key, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		a.tb.Fatal(err)
	}
	body["permission_suggestions"] = suggestions
	swapped, err := json.Marshal(body)
	if err != nil {
		a.tb.Fatal(err)
	}
	if err := rdb.HSet(a.ctx, key, "body", swapped).Err(); err != nil {
		a.tb.Fatal(err)
	}
	return pending[0]
}

// TestAnApproveAndAllowChoiceSwappedAfterTheCardAllowsNothing: with the
// real CLI, Redis and the documented split setup, a store writer swaps a
// pending request's suggestion ("curl --version") for all of Bash after
// the approver picked the rule on its card, before they chose the scope.
// The scope choice is refused, saying why in the modal, and so is a new
// pick; the card stays pending; approved once, the command runs, and the
// same command next time still gets a card: Claude Code received no rule
// at all.
func TestAnApproveAndAllowChoiceSwappedAfterTheCardAllowsNothing(t *testing.T) {
	t.Parallel()
	cmd := bash("curl --version", "Which curl")
	a := startApp(t, options{backend: redisBackend, command: "bot", approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", cmd), relaytest.ToolUse("toolu_2", "Bash", cmd), relaytest.Text("Done."))
	a.launch("worker-1", "worker", withWorkerID("worker-1"))
	thread := a.mention("check curl twice")
	card := a.card(thread, "curl --version")
	if err := a.slack.Select(a.ctx, lee, card.Ref(), "sg_always", "Bash(curl --version)"); err != nil {
		t.Fatal(err)
	}
	a.view(lee)
	a.swapSuggestions(allOfBash)

	if err := a.slack.ClickView(a.ctx, lee, "This session"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitView(a.ctx, lee, func(v fakeslack.View) bool { return v.HasText("not the ones this card showed") }); err != nil {
		t.Fatalf("the approver was not told why the scope did nothing: %v", err)
	}
	if err := a.slack.Select(a.ctx, lee, card.Ref(), "sg_always", "Bash(curl --version)"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.slack.WaitEphemeral(a.ctx, lee, fakeslack.Text("not the ones this card showed")); err != nil {
		t.Fatalf("the approver was not told why the pick did nothing: %v", err)
	}
	if m, _ := a.slack.Message(card.Ref()); len(m.Buttons()) == 0 {
		t.Fatalf("the card lost its buttons: %s", m.AllText())
	}
	if _, answered := a.model.ToolResult("toolu_1"); answered {
		t.Fatal("the command ran on a refused pick")
	}
	a.click(lee, card.Ref(), "Approve")
	if res := a.toolResult("toolu_1"); res.IsError || !strings.Contains(res.Content, "curl") {
		t.Fatalf("approved once, the model got %+v", res)
	}
	a.settled(card.Ref(), "Approved")

	next := a.card(thread, "curl --version") // a card again: no rule reached Claude Code
	if _, answered := a.model.ToolResult("toolu_2"); answered {
		t.Fatal("the same command ran again without a card")
	}
	a.click(lee, next.Ref(), "Approve")
	if res := a.toolResult("toolu_2"); res.IsError {
		t.Fatalf("the second command failed: %+v", res)
	}
}

// TestASessionRuleSwappedInBeforeTheCardNeverReachesClaudeCode: the
// writer swaps the suggestion while no bot runs, so the card itself shows
// the writer's "all of Bash" and the approver picks it. The worker takes
// permission updates only from its own request's suggestions: the
// decision is refused, Claude is told no, the command does not run, and
// the next command still gets a card.
func TestASessionRuleSwappedInBeforeTheCardNeverReachesClaudeCode(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	asked := relaytest.Func(func(relaytest.Request) relaytest.Reply {
		<-gate // held until no bot runs: the request waits in the store alone
		return relaytest.ToolUse("toolu_1", "Bash", bash("curl --version > swapped.txt", "Which curl"))
	})
	a := startApp(t, options{backend: redisBackend, command: "none", approvers: lee},
		asked, relaytest.ToolUse("toolu_2", "Bash", bash("echo second > second.txt", "Second")), relaytest.Text("Done."))
	stopBot := a.launch("bot-1", "bot", nil)
	if err := a.slack.WaitConnected(a.ctx); err != nil {
		t.Fatal(err)
	}
	a.launch("worker-1", "worker", withWorkerID("worker-1"))
	thread := a.mention("check curl")
	if _, err := a.model.WaitRequests(a.ctx, 1); err != nil {
		t.Fatal(err)
	}
	stopBot()
	a.slack.DropConnections()
	close(gate)
	// The request is in the store once its event is: read the log as the
	// attacker, in a consumer group of their own.
	cctx, created := context.WithCancel(a.ctx)
	if err := a.redisStore().Consume(cctx, "mallory", "mallory", func(_ context.Context, e store.Event) error {
		if e.Type == store.EventRequestCreated {
			created()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if a.ctx.Err() != nil {
		t.Fatal("the request never reached the store")
	}
	a.swapSuggestions(allOfBash)
	a.launch("bot-2", "bot", nil)

	card := a.card(thread, "curl --version")
	if err := a.slack.Select(a.ctx, lee, card.Ref(), "sg_always", "Bash"); err != nil {
		t.Fatal(err)
	}
	a.view(lee)
	if err := a.slack.ClickView(a.ctx, lee, "This session"); err != nil {
		t.Fatal(err)
	}
	if res := a.toolResult("toolu_1"); !res.IsError || !strings.Contains(res.Content, relay.RefusedMessage) {
		t.Errorf("the model got %+v, want the refusal", res)
	}
	a.noFile("swapped.txt")
	a.settled(card.Ref(), "🚫 *Refused*")

	next := a.card(thread, "echo second") // all of Bash never reached Claude Code
	if _, answered := a.model.ToolResult("toolu_2"); answered {
		t.Fatal("the next command ran without a card")
	}
	a.click(lee, next.Ref(), "Approve")
	if res := a.toolResult("toolu_2"); res.IsError {
		t.Fatalf("the approved command failed: %+v", res)
	}
	if got := a.file("second.txt"); got != "second\n" {
		t.Errorf("second.txt = %q", got)
	}
}
