package bot

import (
	"strings"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// SetPolicy makes p the policy every request evaluated from now on meets;
// nil means none (every request asks APPROVERS once). Safe while the bot
// runs.
func (b *Bot) SetPolicy(p *policy.Policy) { b.policy.Store(p) }

// Policy is the policy the bot applies now (nil: none).
func (b *Bot) Policy() *policy.Policy { return b.policy.Load() }

// verdict is what the current policy does with r, a request of session s.
// The facts come from the records: the tool and its input as they will
// run, the session's channel and working directory (for an API session,
// its client's directory), the approval API token's name for an API
// session, and the home and resolved paths the side beside Claude
// recorded on r. The decision the bot signs covers those last two, so
// that side refuses it when a store writer changed them.
func (b *Bot) verdict(r store.Request, s store.Session) policy.Verdict {
	v, _ := b.decider.Judge(r, s)
	return v
}

// policyRequest is r, a request of session s, as the policy reads it.
func policyRequest(r store.Request, s store.Session) policy.Request {
	return policy.Request{
		Tool: r.ToolName, Input: r.Input, Cwd: s.WorkDir, Home: r.Home,
		Channel: s.Thread.Channel, Token: apiTokenOf(s), Resolved: r.Resolved,
	}
}

// apiTokenOf is the name of the approval API token whose session s is
// ("" for a session started in Slack).
func apiTokenOf(s store.Session) string {
	if !s.API || !isAPISession(s.ID) {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(s.ID, apiSessionPrefix), ".")
	return name
}
