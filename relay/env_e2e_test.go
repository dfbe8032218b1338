package relay_test

import (
	"strings"
	"testing"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// The worker builds the CLI's environment with its DenyEnv: a name it
// denies never reaches Claude's commands, even one PassEnv lists.
func TestE2EWorkerDeniesWhatDenyEnvNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{bash("toolu_env", "env"), relaytest.Text("done")}, func(c *relay.Config) {
		c.Env = append(c.Env, "SLACKGATE_DENIED=must-not-pass", "SLACKGATE_PASSED=passes")
		c.PassEnv = []string{"SLACKGATE_DENIED", "SLACKGATE_PASSED"}
		c.DenyEnv = func(name string) bool { return name == "SLACKGATE_DENIED" }
	})
	h.startSession("show the environment")
	r := h.waitRequest()
	h.decide(r.ID, with(alice, func(d *store.Decision) { d.Outcome = store.OutcomeAllow }))
	res := h.toolResult("toolu_env")
	if res.IsError || !strings.Contains(res.Content, "SLACKGATE_PASSED=passes") {
		t.Fatalf("env printed %+v, want the passed variable", res)
	}
	if strings.Contains(res.Content, "must-not-pass") {
		t.Errorf("a variable DenyEnv names reached Claude's command:\n%s", res.Content)
	}
}
