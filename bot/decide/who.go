package decide

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// People is what May asks about people; the bot answers from its
// configuration and Slack.
type People interface {
	// Selves are the people a not_self rule never counts for s: its
	// starter and, for an approval API session, its token's owner. known
	// is false when s's token names no owner, so nobody can be told apart
	// from its self.
	Selves(s store.Session) (ids []string, known bool)
	// Escalated reports whether r was escalated to user and the
	// escalation's time has come by the bot's own clock.
	Escalated(ctx context.Context, log zerolog.Logger, r store.Request, user string) bool
	// Approver reports whether user is one of APPROVERS; when not, reason
	// is what they are told.
	Approver(ctx context.Context, log zerolog.Logger, user string) (ok bool, reason string)
	// Among reports whether user is one of ids (users, user groups, or
	// "*"); an error means a group could not be listed.
	Among(ctx context.Context, ids []string, user string) (bool, error)
	// Describe names ids to a person.
	Describe(ids []string) string
}

// Ask is whom a card asks under verdict v: the rule's ask when one asks,
// else APPROVERS once. A card for a request the policy now allows or
// denies (it was reloaded since) still needs a person.
func Ask(v policy.Verdict) policy.AskSpec {
	if v.Action != policy.Ask || v.Ask.Count < 1 {
		return policy.AskSpec{Count: 1}
	}
	return v.Ask
}

// May is the one check of whether user may decide r, a request of
// session s: one of the people the policy's ask names (APPROVERS when it
// names none), or one r was escalated to, and, under not_self, not the
// session's starter, its token's owner, nor anyone whose message the turn
// that asked answers (r.TurnBy, which the worker checks with the
// decision). When not, reason is what the person is told.
func (x *Decider) May(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, user string) (ok bool, reason string) {
	v, _ := x.Judge(r, s)
	ask := Ask(v)
	if ask.NotSelf {
		selves, known := x.people.Selves(s)
		switch {
		case !known:
			log.Warn().Msg("not_self: the session's API token names no owner; nobody may approve")
			return false, "This request came through an approval API token that names no owner, so nobody can be told apart from who asked. " +
				"The operator must add its owner to API_TOKENS (C0CI@U0LEE). Nothing was changed."
		case slices.Contains(selves, user):
			log.Info().Msg("approval by the session's own starter refused (not_self)")
			return false, "You started this session; someone else must approve. Nothing was changed."
		case slices.Contains(r.TurnBy, user):
			log.Info().Msg("approval by whom the turn answers refused (not_self)")
			return false, "Your message in the thread is what Claude is acting on; someone else must approve. Nothing was changed."
		}
	}
	if x.people.Escalated(ctx, log, r, user) {
		return true, ""
	}
	if ask.Approvers == nil {
		return x.people.Approver(ctx, log, user)
	}
	ok, err := x.people.Among(ctx, ask.Approvers, user)
	switch {
	case ok:
		return true, ""
	case err != nil:
		log.Error().Err(err).Msg("check the rule's approvers")
		return false, "Sorry, I could not check whether you may decide this (Slack did not list the user groups). Please try again."
	}
	log.Info().Msg("click by a non-approver ignored")
	return false, "Only " + x.people.Describe(ask.Approvers) + " can decide this request. Nothing was changed."
}

// Tally is where one approval left a request that needs several.
type Tally int

const (
	// Recorded: the approval counts and more are needed.
	Recorded Tally = iota
	// Last: it was the last one needed; the request settles with the
	// decision Approve returns.
	Last
	// Twice: this person approved already; each person counts once.
	Twice
	// Decided: the request was settled meanwhile.
	Decided
	// InputChanged: the first approver edited the input, and this
	// approval is of another.
	InputChanged
	// Unverified: the store counted approvals no bot signed, or a person
	// twice, so the request cannot be approved (it can still be denied).
	Unverified
)

// Approve records d, an allow by one of the ask.Count people r needs, as
// a signed partial approval. It returns the request as the store left it
// (its approvals those that count) and, with Last, the decision to settle
// r with: it names every approver and runs the input they approved.
func (x *Decider) Approve(ctx context.Context, log zerolog.Logger, r store.Request, ask policy.AskSpec, d store.Decision) (store.Request, store.Decision, Tally, error) {
	r.Approvals = x.Counted(log, r)
	if slices.ContainsFunc(r.Approvals, func(a store.Approval) bool { return a.By == d.By }) {
		return r, d, Twice, nil
	}
	a := store.Approval{By: d.By, ByName: d.ByName, At: d.At, Input: d.UpdatedInput}
	if len(a.Input) == 0 && len(r.Approvals) > 0 {
		a.Input = r.Approvals[0].Input // the card shows the first approver's edit: that is what this approves
	}
	if err := store.SignApproval(x.key, r, &a); err != nil {
		return r, d, 0, fmt.Errorf("decide: sign an approval of %s: %w", r.ID, err)
	}
	now, last, err := x.st.Approve(ctx, r.ID, a, ask.Count)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		return now, d, Decided, nil
	case errors.Is(err, store.ErrInputChanged):
		return now, d, InputChanged, nil
	case err != nil:
		return r, d, 0, fmt.Errorf("decide: approve %s: %w", r.ID, err)
	}
	now.Approvals = x.Counted(log, now)
	switch {
	case !last:
		return now, d, Recorded, nil
	case len(now.Approvals) < ask.Count:
		log.Error().Int("verified", len(now.Approvals)).Int("need", ask.Count).Msg("the store counted approvals that do not verify, or a person twice")
		return now, d, Unverified, nil
	}
	d.UpdatedInput = now.Approvals[0].Input
	d.Approvals = make([]store.Approval, len(now.Approvals))
	for i, c := range now.Approvals {
		d.Approvals[i] = store.Approval{By: c.By, ByName: c.ByName, At: c.At}
	}
	return now, d, Last, nil
}
