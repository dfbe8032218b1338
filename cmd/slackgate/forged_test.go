package main

import (
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
)

// envValue is the value of name in environ ("" when unset).
func envValue(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// TestDecisionWrittenIntoRedisIsRefused plays an attacker who can reach the
// deployment's Redis (what an approved command with REDIS_URL in its reach
// could do) but holds no bot's signing key: they approve a pending request
// by writing the decision straight into the store, in an approver's name.
// The worker refuses it, Claude is told no, the card says refused, and the
// session's next request still shows a card and waits for a person.
func TestDecisionWrittenIntoRedisIsRefused(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{backend: redisBackend, command: "bot", approvers: lee},
		relaytest.ToolUse("toolu_1", "Bash", bash("echo forged > forged.txt", "Forged")),
		relaytest.ToolUse("toolu_2", "Bash", bash("echo second > second.txt", "Second")),
		relaytest.Text("Done."))
	a.launch("worker-1", "worker", "WORKER_ID=worker-1")
	thread := a.mention("write the files")
	card := a.card(thread, "echo forged")

	attacker, err := redisstore.New(a.ctx, envValue(a.prog.environ, "REDIS_URL"),
		redisstore.WithPrefix(envValue(a.prog.environ, "REDIS_KEY_PREFIX")))
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	pending, err := attacker.ListPending(a.ctx, "")
	if err != nil || len(pending) != 1 {
		t.Fatalf("the attacker sees pending requests %+v (%v), want the one on the card", pending, err)
	}
	if _, err := attacker.Decide(a.ctx, pending[0].ID, store.Decision{Outcome: store.OutcomeAllow, By: lee, ByName: "lee", At: time.Now()}); err != nil {
		t.Fatalf("writing the forged decision: %v", err)
	}

	a.settled(card.Ref(), "🚫 *Refused*") // the workdir holds the test name, so match the markup
	if res := a.toolResult("toolu_1"); !res.IsError || !strings.Contains(res.Content, relay.RefusedMessage) {
		t.Errorf("the model got %+v, want the refusal", res)
	}
	a.noFile("forged.txt")
	entries, err := attacker.AuditLog(a.ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, e := range entries {
		refused = refused || (e.RequestID == pending[0].ID && e.Action == store.AuditRefused && e.By == lee)
	}
	if !refused {
		t.Errorf("no refused audit entry naming %s: %+v", lee, entries)
	}

	next := a.card(thread, "echo second") // buttons: it waits for a person
	if _, answered := a.model.ToolResult("toolu_2"); answered {
		t.Fatal("the next request was answered before anyone clicked")
	}
	a.click(lee, next.Ref(), "Approve")
	if res := a.toolResult("toolu_2"); res.IsError {
		t.Fatalf("the approved command failed: %q", res.Content)
	}
	if got := a.file("second.txt"); got != "second\n" {
		t.Errorf("second.txt = %q, want the approved command's output", got)
	}
	a.settled(next.Ref(), "Approved")
	a.noFile("forged.txt")
}
