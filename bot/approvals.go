package bot

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// needs is how a card of r (a request of session s, its approvals those
// that count) shows ask: how many approvals, and who may still give one:
// the ask's approvers (APPROVERS when it names none) but whom not_self
// never counts and who approved already.
func (b *Bot) needs(ask policy.AskSpec, r store.Request, s store.Session) blocks.Needs {
	if ask.Count < 2 {
		return blocks.Needs{Count: ask.Count}
	}
	ids := ask.Approvers
	if ids == nil {
		ids = b.cfg.Approvers.IDs
		if b.cfg.Approvers.Anyone {
			ids = []string{"*"}
		}
	}
	var skip []string
	if ask.NotSelf {
		skip, _ = b.people.Selves(s)
		skip = append(skip, r.TurnBy...)
	}
	for _, a := range r.Approvals {
		skip = append(skip, a.By)
	}
	var from []string
	for _, id := range ids {
		if m := blocks.Mentions([]string{id}); m != "" && !slices.Contains(skip, id) {
			from = append(from, m)
		}
	}
	return blocks.Needs{Count: ask.Count, From: strings.Join(from, " or ")}
}

// needsOf is needs for r as the policy asks it now.
func (b *Bot) needsOf(r store.Request, s store.Session) blocks.Needs {
	return b.needs(decide.Ask(b.verdict(r, s)), r, s)
}

// people answers decide.May's questions about people from the bot's
// configuration and Slack.
type people struct {
	tokens    []approvalapi.Token
	approvers *approvers
	may       func(ctx context.Context, log zerolog.Logger, user string, g guarded, tell func(string)) bool
	reach     *reacher // set once reach is built
}

// Selves implements decide.People.
func (p *people) Selves(s store.Session) (out []string, ok bool) {
	out = []string{s.StartedBy}
	if name := apiTokenOf(s); name != "" {
		for _, t := range p.tokens {
			if t.Name == name {
				if t.Owner == "" {
					return out, false
				}
				out = append(out, t.Owner)
			}
		}
	}
	return out, true
}

// Escalated implements decide.People (reach.go: escalate_to, once escalated).
func (p *people) Escalated(ctx context.Context, log zerolog.Logger, r store.Request, user string) bool {
	return p.reach.escalatedTo(ctx, log, r, user)
}

// Approver implements decide.People: APPROVERS, as every guarded act
// checks it.
func (p *people) Approver(ctx context.Context, log zerolog.Logger, user string) (ok bool, reason string) {
	ok = p.may(ctx, log, user, decideRequest, func(text string) { reason = text })
	return ok, reason
}

// Among implements decide.People.
func (p *people) Among(ctx context.Context, ids []string, user string) (bool, error) {
	return p.approvers.among(ctx, ids, user)
}

// Describe implements decide.People; nil is APPROVERS.
func (p *people) Describe(ids []string) string {
	if ids == nil {
		return p.approvers.describe()
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

// approveOne records d, an allow by one of several approvers ask needs
// (decide.Approve counts it). It returns the decision to settle r with
// when this approval was the last one; ok false when r waits for more
// (the person is told) or the approval does not count (told why).
func (p *decision) approveOne(ctx context.Context, r store.Request, s store.Session, ask policy.AskSpec, d store.Decision) (store.Decision, bool, error) {
	c := p.c
	if len(d.Permissions) > 0 || p.grantKind != "" {
		p.tell(ctx, "This request needs "+plural(ask.Count, "approval")+": it can be approved this once only, not always. Nothing was changed.")
		return d, false, nil
	}
	now, d, tally, err := c.decider.Approve(ctx, p.log, r, ask, d)
	if err != nil {
		return d, false, err
	}
	switch tally {
	case decide.Last:
		return d, true, nil
	case decide.Twice:
		p.tell(ctx, "You approved this already; each person counts once. "+blocks.ApprovalRecorded(now, c.needs(ask, now, s), d.By))
	case decide.Decided:
		p.alreadyDecided(ctx, now)
	case decide.InputChanged:
		p.tell(ctx, "<@"+now.Approvals[0].By+"> edited the input before approving: approve it as the card shows it, or deny. Nothing was changed.")
	case decide.Unverified:
		p.tell(ctx, "The approvals recorded on this request are not "+plural(ask.Count, "approval")+" of different people that verify, "+
			"so it cannot be approved here. It can still be denied.")
	case decide.Recorded:
		p.log.Info().Int("approvals", len(now.Approvals)).Int("need", ask.Count).Msg("approval recorded")
		p.tell(ctx, blocks.ApprovalRecorded(now, c.needs(ask, now, s), d.By))
		c.cards.approved(ctx, p.log, now.ID)
		// The approver's copies and App Home say so at once.
		c.reach.showCopies(ctx, p.log, now, s)
		c.reach.touchHomes(ctx, p.log, now, s)
	}
	return d, false, nil
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
