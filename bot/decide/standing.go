package decide

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// A request some deciders settle before any card is posted: they stand
// for a person's tap, so nobody is asked. Standing tries them in this
// order, deliberately:
//
//  1. a deny rule, which wins over everything slackgate could answer
//     with (a grant, a remembered answer, a card);
//  2. an allow rule, for tool calls and plans (a question or an MCP form
//     needs an answer no rule can give);
//  3. a live grant, for a tool call no policy rule matched (a grant
//     stands in for APPROVERS' one tap, never for a rule's approvers);
//  4. a remembered answer, for a question.
//
// Otherwise a card asks. Each settles with a decision Settle signs that
// names it, and the bot puts one line in the thread in the card's place.

// By is the standing decider that settled a request.
type By int

const (
	// Nobody here: the request was settled by someone else first (a
	// replica, a withdrawal, an expiry). Nothing is shown for it: its own
	// event does that.
	Nobody By = iota
	ByRule
	ByGrant
	ByAnswer
)

// Records finds what approvers kept for later and still stands: the
// newest live grant that allows a request, a remembered answer to it.
// The bot supplies both, since whether who kept one is still an
// approver is Slack's to say; false means none (anything in the way is
// theirs to log).
type Records struct {
	Grant  func(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.Standing, bool)
	Answer func(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.Standing, bool)
}

// Settled is a request a standing decider settled.
type Settled struct {
	By       By
	Request  store.Request  // as settled
	Decision store.Decision // as made (unsigned)
	Kept     store.Standing // the grant (ByGrant) or remembered answer (ByAnswer)
}

// Judge is what the policy applied now does with r, a request of session
// s, and that policy (nil: none), so what records the verdict names the
// file that decided even while a reload swaps it.
func (x *Decider) Judge(r store.Request, s store.Session) (policy.Verdict, *policy.Policy) {
	pol := x.policy()
	return pol.Evaluate(x.facts(r, s), x.clock.Now()), pol
}

// Standing settles r, a request of session s, with the first standing
// decider that applies (see the order above), before any card. It
// reports false when a card is to ask: none applies, or the store refused
// the decision (logged), so a person still sees the request. A request
// settled already needs no card when a standing decider settled it (its
// line is in the thread); any other outcome is shown on one.
func (x *Decider) Standing(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, rec Records) (Settled, bool) {
	if !r.Pending() {
		return Settled{Request: r}, withoutCard(r.Decision)
	}
	v, pol := x.Judge(r, s)
	if out, ok := x.byRule(ctx, log, r, s, v, pol); ok {
		return out, true
	}
	if out, ok := x.byGrant(ctx, log, r, s, v, rec.Grant); ok {
		return out, true
	}
	return x.byAnswer(ctx, log, r, s, rec.Answer)
}

// withoutCard reports whether d was made by a standing decider, which
// settles a request in place of its card.
func withoutCard(d *store.Decision) bool {
	return d != nil && d.Decider().Kind.Standing()
}

// byRule settles r when the policy's verdict v allows or denies it: a
// decision naming the rule and the policy file's digest (the store's
// audit entry records both). A deny rule settles every kind of request;
// an allow rule tool calls and plans only.
//
// The session's facts (channel, directory, token) are the store's; an
// allow needs the session's signature to verify with this bot's key, so
// a store writer who moves a session into a rule's scope gets a card, not
// a run. The request's own facts are the worker's to check: the decision
// covers them.
func (x *Decider) byRule(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, v policy.Verdict, pol *policy.Policy) (Settled, bool) {
	if v.Rule == nil || v.Action == policy.Ask {
		return Settled{}, false
	}
	if v.Action == policy.Allow && r.Kind != store.KindTool && r.Kind != store.KindPlan {
		return Settled{}, false
	}
	log = log.With().Str("rule", v.Rule.Name).Str("matched", v.Matcher).Logger()
	if err := store.VerifySession(x.key.Public().(ed25519.PublicKey), s); v.Action == policy.Allow && err != nil {
		log.Error().Err(err).Msg("a rule would allow it, but its session does not verify; a card asks")
		return Settled{}, false
	}
	d := store.Decision{Outcome: store.OutcomeAllow, At: x.clock.Now(), Rule: v.Rule.Name, PolicyDigest: pol.Digest()}
	if v.Action == policy.Deny {
		d.Outcome = store.OutcomeDeny
		d.Message = cmp.Or(v.Message, "Denied by the team's policy (rule "+v.Rule.Name+").")
	}
	out, ok := x.settleStanding(ctx, log, r, d, "decide by rule; a card asks")
	if ok && out.By == ByRule {
		log.Info().Str("outcome", string(d.Outcome)).Str("policy", pol.Digest()).Msg("request settled by the team policy")
	}
	return out, ok
}

// byGrant settles r with a grant that allows it: a signed allow naming the
// grant, its adder as who decided. Only a tool call, and only where no
// policy rule matched (v): a deny rule always wins, and a rule's approvers
// are never stood in for.
func (x *Decider) byGrant(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, v policy.Verdict, find func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool)) (Settled, bool) {
	if v.Rule != nil || v.Action != policy.Ask || r.Kind != store.KindTool || find == nil {
		return Settled{}, false
	}
	g, ok := find(ctx, log, r, s)
	if !ok {
		return Settled{}, false
	}
	log = log.With().Str("grant_id", g.ID).Logger()
	d := store.Decision{Outcome: store.OutcomeAllow, By: g.By, ByName: g.ByName, At: x.clock.Now(), Grant: g.ID}
	out, ok := x.settleStanding(ctx, log, r, d, "decide by grant; a card asks")
	if ok && out.By == ByGrant {
		out.Kept = g
		log.Info().Msg("request allowed by a grant")
	}
	return out, ok
}

// byAnswer answers r, a question, with a remembered answer: signed and
// decided like a person's answer, in the name of the approver who
// remembered it. When the store says r was settled first, a card still
// shows the outcome unless a standing decider settled it.
func (x *Decider) byAnswer(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, find func(context.Context, zerolog.Logger, store.Request, store.Session) (store.Standing, bool)) (Settled, bool) {
	if r.Kind != store.KindQuestion || find == nil {
		return Settled{}, false
	}
	a, ok := find(ctx, log, r, s)
	if !ok {
		return Settled{}, false
	}
	log = log.With().Str("answer_id", a.ID).Logger()
	d := store.Decision{Outcome: store.OutcomeAllow, By: a.By, ByName: a.ByName, At: x.clock.Now(), Answers: a.Answers, Remembered: a.ID}
	out, ok := x.settleStanding(ctx, log, r, d, "decide from memory; posting the card")
	switch {
	case !ok:
		return out, false
	case out.By == Nobody:
		return out, withoutCard(out.Request.Decision)
	}
	out.Kept = a
	log.Info().Msg("question answered from memory")
	return out, true
}

// settleStanding settles r with d, made by the standing decider d names.
// A request settled first counts as settled (By Nobody); any other
// failure as not settled, logged with failed.
func (x *Decider) settleStanding(ctx context.Context, log zerolog.Logger, r store.Request, d store.Decision, failed string) (Settled, bool) {
	settled, err := x.Settle(ctx, r, d, nil)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		return Settled{Request: settled}, true
	case err != nil:
		log.Error().Err(err).Msg(failed)
		return Settled{}, false
	}
	by := map[store.DeciderKind]By{store.DecidedByRule: ByRule, store.DecidedByGrant: ByGrant, store.DecidedByAnswer: ByAnswer}
	return Settled{By: by[d.Decider().Kind], Request: settled, Decision: d}, true
}
