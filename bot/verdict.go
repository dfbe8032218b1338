package bot

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"strings"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
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
	v, _ := b.judged(r, s)
	return v
}

// judged is verdict with the policy that gave it (nil: none), so what
// records the verdict names the file that decided even while a reload
// swaps it.
func (b *Bot) judged(r store.Request, s store.Session) (policy.Verdict, *policy.Policy) {
	pol := b.Policy()
	return pol.Evaluate(policyRequest(r, s), b.clock.Now()), pol
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

// byPolicy settles r when the policy's verdict v allows or denies it
// without a card: a decision signed by this bot that names the rule and
// the policy file's digest (the store's audit entry records both), then
// one line in the thread in the card's place. It reports whether r was
// settled so (false: a card asks, or r was settled already).
//
// A deny rule settles every kind of request. An allow rule settles tool
// calls and plans only: a question or an MCP server's form needs an
// answer no rule can give, so it goes on to a remembered answer or a
// card. When the store refuses the decision, nothing is settled and the
// card asks, so a person still sees the request.
//
// The session's facts (channel, directory, token) are the store's; an
// allow needs the session's signature to verify with this bot's key, so
// a store writer who moves a session into a rule's scope gets a card,
// not a run. The request's own facts are the worker's to check (see
// verdict).
func (c *cards) byPolicy(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, v policy.Verdict, pol *policy.Policy) (bool, error) {
	b := c.b
	if v.Rule == nil || v.Action == policy.Ask || !r.Pending() {
		return false, nil
	}
	if v.Action == policy.Allow && r.Kind != store.KindTool && r.Kind != store.KindPlan {
		return false, nil
	}
	log = log.With().Str("rule", v.Rule.Name).Str("matched", v.Matcher).Logger()
	if err := store.VerifySession(b.cfg.SigningKey.Public().(ed25519.PublicKey), s); v.Action == policy.Allow && err != nil {
		log.Error().Err(err).Msg("a rule would allow it, but its session does not verify; a card asks")
		return false, nil
	}
	d := store.Decision{Outcome: store.OutcomeAllow, At: b.clock.Now(), Rule: v.Rule.Name, PolicyDigest: pol.Digest()}
	if v.Action == policy.Deny {
		d.Outcome = store.OutcomeDeny
		d.Message = cmp.Or(v.Message, "Denied by the team's policy (rule "+v.Rule.Name+").")
	}
	if err := store.SignDecision(b.cfg.SigningKey, r, &d); err != nil {
		log.Error().Err(err).Msg("sign a decision by rule; a card asks")
		return false, nil
	}
	settled, err := b.st.Decide(ctx, r.ID, d)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		return true, nil // settled meanwhile (withdrawn, expired): its own event shows it
	case err != nil:
		log.Error().Err(err).Msg("decide by rule; a card asks")
		return false, nil
	}
	log.Info().Str("outcome", string(d.Outcome)).Str("policy", pol.Digest()).Msg("request settled by the team policy")
	res := b.out.postPending(log, laneCard, s.Thread.Channel, s.Thread.TS, toMsg(blocks.DecidedByRule(settled, d)))
	return true, b.awaitWrite(log, res, func(pr opResult) error { return pr.err })
}
