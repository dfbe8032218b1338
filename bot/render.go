package bot

import (
	"crypto/ed25519"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// The bot's only view of how things look: every message it posts for a
// thread is rendered by package blocks through these adapters.

type renderedCard struct {
	msg           outbox.Msg
	fullInput     string
	fullInputName string
	opts          blocks.CardOptions // what it was rendered with
}

// renderCard renders r's card as the policy asks it: the ask rule that is
// why, and how many approvals of whom (with those given so far).
func (b *Bot) renderCard(r store.Request, s store.Session) renderedCard {
	return b.renderCardWith(r, s, blocks.CardOptions{})
}

func (b *Bot) renderCardWith(r store.Request, s store.Session, o blocks.CardOptions) renderedCard {
	if r.Pending() {
		r, o = b.pendingCard(r, s, o)
	} else {
		r.Approvals = b.decider.Counted(b.log, r) // a deny names who approved before
	}
	m := blocks.CardWith(r, s, o)
	return renderedCard{msg: toMsg(m), fullInput: m.FullInput, fullInputName: m.FullInputName, opts: o}
}

// pendingCard is pending r as its card shows it (the approvals that
// count) and o with what the policy says of it now: the ask rule that is
// why, how many approvals of whom, which session rules may be offered,
// and no grants where a rule matches (a grant never stands in for one).
func (b *Bot) pendingCard(r store.Request, s store.Session, o blocks.CardOptions) (store.Request, blocks.CardOptions) {
	v := b.verdict(r, s)
	o.AskRule = askedBy(v).AskRule
	o.SessionRule = sessionRuleOffer(b.Policy(), r, s)
	o.NoGrants = v.Rule != nil
	r.Approvals = b.decider.Counted(b.log, r)
	o.Needs = b.needs(decide.Ask(v), r, s)
	return r, o
}

// askedBy is what a pending card says of the policy's verdict v: the
// ask rule that is why it asks, if one is.
func askedBy(v policy.Verdict) blocks.CardOptions {
	if v.Action != policy.Ask || v.Rule == nil {
		return blocks.CardOptions{}
	}
	return blocks.CardOptions{AskRule: v.Rule.Name}
}

func renderEvent(e store.Event) []outbox.Msg {
	var out []outbox.Msg
	for _, m := range blocks.EventMessages(e) {
		out = append(out, toMsg(m))
	}
	return out
}

// renderStatus shows the phase, except that pending requests turn a
// working (or queued) session into one waiting for approval.
func renderStatus(s store.Session, st blocks.Status) outbox.Msg {
	if st.Pending > 0 && (st.Phase == blocks.PhaseWorking || st.Phase == blocks.PhaseQueued) {
		st.Phase = blocks.PhaseWaiting
	}
	return toMsg(blocks.StatusMessage(s, st))
}

func toMsg(m blocks.Message) outbox.Msg {
	return outbox.Msg{Text: m.Text, Blocks: m.Blocks}
}

// asShown is the request as a card may show it. A person's decision whose
// signature does not verify was written into the store by someone other
// than a bot (the worker refuses it and tells Claude no): it is shown as
// refused at once, never as the approval or the words it claims.
func asShown(pub ed25519.PublicKey, r store.Request) store.Request {
	d := r.Decision
	if d == nil || (d.Outcome != store.OutcomeAllow && d.Outcome != store.OutcomeDeny) {
		return r
	}
	if store.VerifyDecision(pub, r, *d) == nil {
		return r
	}
	r.Decision = &store.Decision{Outcome: store.OutcomeRefused, At: d.At}
	return r
}

// shown is asShown with this bot's own public key.
func (b *Bot) shown(r store.Request) store.Request {
	return asShown(b.cfg.SigningKey.Public().(ed25519.PublicKey), r)
}
