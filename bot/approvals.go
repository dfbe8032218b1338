package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// askOf is whom a card asks under the policy's verdict v: the rule's ask
// when one asks, else APPROVERS once.
func askOf(v policy.Verdict) policy.AskSpec {
	if v.Action != policy.Ask || v.Ask.Count < 1 {
		// A card for a request the policy now allows or denies (it was
		// reloaded since) still needs a person: APPROVERS once.
		return policy.AskSpec{Count: 1}
	}
	return v.Ask
}

// needs is how a card shows ask.
func (b *Bot) needs(ask policy.AskSpec) blocks.Needs {
	if ask.Count < 2 {
		return blocks.Needs{Count: ask.Count}
	}
	return blocks.Needs{Count: ask.Count, From: b.describePeople(ask.Approvers)}
}

// describePeople names approvers for a card; nil is APPROVERS.
func (b *Bot) describePeople(ids []string) string {
	if ids == nil {
		return b.approvers.describe()
	}
	var parts []string
	for _, id := range ids {
		switch {
		case id == "*":
			return "anyone"
		case strings.HasPrefix(id, "S"):
			parts = append(parts, "<!subteam^"+id+">")
		default:
			parts = append(parts, "<@"+id+">")
		}
	}
	return strings.Join(parts, ", ")
}

// selves are the people a not_self rule never counts for s: its starter,
// and for an approval API session the owner of its token when the
// token's threads go to that person's DM.
func (b *Bot) selves(s store.Session) []string {
	out := []string{s.StartedBy}
	if name := apiTokenOf(s); name != "" {
		for _, t := range b.cfg.APITokens {
			if t.Name == name && t.User != "" {
				out = append(out, t.User)
			}
		}
	}
	return out
}

// mayDecide is the one check of whether user may decide r, a request of
// session s: one of the people the policy's ask names (APPROVERS when it
// names none) and, under not_self, not the session's starter or its
// token's owner. When not, reason is what the person is told.
func (b *Bot) mayDecide(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, user string) (ok bool, reason string) {
	ask := askOf(b.verdict(r, s))
	if ask.NotSelf && slices.Contains(b.selves(s), user) {
		log.Info().Msg("approval by the session's own starter refused (not_self)")
		return false, "You started this session; someone else must approve. Nothing was changed."
	}
	if b.escalatedTo(ctx, log, r, user) {
		return true, "" // reach.go: escalate_to, once escalated
	}
	if ask.Approvers == nil {
		return b.mayAs(ctx, log, user, decideRequest)
	}
	ok, err := b.approvers.among(ctx, ask.Approvers, user)
	switch {
	case ok:
		return true, ""
	case err != nil:
		log.Error().Err(err).Msg("check the rule's approvers")
		return false, "Sorry, I could not check whether you may decide this (Slack did not list the user groups). Please try again."
	}
	log.Info().Msg(decideRequest.refused)
	return false, "Only " + b.describePeople(ask.Approvers) + " can decide this request. Nothing was changed."
}

// mayAs is may with its answer returned rather than told.
func (b *Bot) mayAs(ctx context.Context, log zerolog.Logger, user string, g guarded) (ok bool, reason string) {
	ok = b.may(ctx, log, user, g, func(text string) { reason = text })
	return ok, reason
}

// among reports whether user is one of ids (users, user groups whose
// members are cached like APPROVERS's, or "*"). An error means a group
// could not be resolved and user is not let through on it.
func (a *approvers) among(ctx context.Context, ids []string, user string) (bool, error) {
	var groups []string
	for _, id := range ids {
		switch {
		case id == "*" || id == user:
			return true, nil
		case strings.HasPrefix(id, "S"):
			groups = append(groups, id)
		}
	}
	return a.inGroups(ctx, groups, user)
}

// approveOne records d, an allow by one of several approvers ask needs,
// as a signed partial approval (store.Approvals). It returns the decision
// to settle r with when this approval was the last one, naming every
// approver and running the input they approved; ok false when r waits for
// more (the person is told) or the approval does not count (told why).
func (p *decision) approveOne(ctx context.Context, r store.Request, ask policy.AskSpec, d store.Decision) (store.Decision, bool, error) {
	b := p.b
	if len(d.Permissions) > 0 || p.grantKind != "" {
		p.tell(ctx, "This request needs "+plural(ask.Count, "approval")+": it can be approved this once only, not always. Nothing was changed.")
		return d, false, nil
	}
	r.Approvals = b.countedApprovals(p.log, r)
	if slices.ContainsFunc(r.Approvals, func(a store.Approval) bool { return a.By == d.By }) {
		p.tell(ctx, "You approved this already; each person counts once. "+blocks.ApprovalRecorded(r, b.needs(ask)))
		return d, false, nil
	}
	a := store.Approval{By: d.By, ByName: d.ByName, At: d.At, Input: d.UpdatedInput}
	if len(a.Input) == 0 && len(r.Approvals) > 0 {
		a.Input = r.Approvals[0].Input // the card shows the first approver's edit: that is what this approves
	}
	if err := store.SignApproval(b.cfg.SigningKey, r, &a); err != nil {
		return d, false, err
	}
	now, last, err := b.st.Approve(ctx, r.ID, a, ask.Count)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		p.alreadyDecided(ctx, now)
		return d, false, nil
	case errors.Is(err, store.ErrInputChanged):
		p.tell(ctx, "<@"+now.Approvals[0].By+"> edited the input before approving: approve it as the card shows it, or deny. Nothing was changed.")
		return d, false, nil
	case err != nil:
		return d, false, err
	}
	counted := b.countedApprovals(p.log, now)
	now.Approvals = counted
	if !last {
		p.log.Info().Int("approvals", len(now.Approvals)).Int("need", ask.Count).Msg("approval recorded")
		p.tell(ctx, blocks.ApprovalRecorded(now, b.needs(ask)))
		b.cards.approved(ctx, p.log, now.ID)
		return d, false, nil
	}
	if len(counted) < ask.Count {
		// The store counted an approval no bot signed: the request
		// cannot be approved, and waits for its deadline or a deny.
		p.log.Error().Int("verified", len(counted)).Int("need", ask.Count).Msg("an approval on the request does not verify")
		p.tell(ctx, "An approval recorded on this request does not verify, so it cannot be approved here. It can still be denied.")
		return d, false, nil
	}
	d.UpdatedInput = counted[0].Input
	d.Approvals = make([]store.Approval, len(counted))
	for i, c := range counted {
		d.Approvals[i] = store.Approval{By: c.By, ByName: c.ByName, At: c.At}
	}
	return d, true, nil
}

// countedApprovals are r's approvals that count: signed by this bot's
// key, and of the input the first of those approved. One written into the
// store by anyone else counts for nothing and is never shown.
func (b *Bot) countedApprovals(log zerolog.Logger, r store.Request) []store.Approval {
	if len(r.Approvals) == 0 {
		return nil
	}
	pub := b.cfg.SigningKey.Public().(ed25519.PublicKey)
	var out []store.Approval
	for _, a := range r.Approvals {
		if err := store.VerifyApproval(pub, r, a); err != nil {
			log.Warn().Err(err).Str("claimed_by", a.By).Msg("approval does not verify; not counted")
			continue
		}
		if len(out) > 0 && a.Approves() != out[0].Approves() {
			continue
		}
		out = append(out, a)
	}
	return out
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
