package bot

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// keepGrant adds the grant an approver asked for with "Approve and
// allow… for 1 hour in this session" or "… in this repository", once d
// (their allow) settled r, a request of session s. Signed by the bot; the
// person is told what it allows where, or why nothing was kept.
func (p *decision) keepGrant(ctx context.Context, r store.Request, s store.Session, d store.Decision) {
	if p.grantKind == "" || d.Outcome != store.OutcomeAllow {
		return
	}
	c := p.c
	g := store.Grant{ID: "grant-" + uuid.NewString(), Scope: store.GrantScope{Kind: p.grantKind, Value: s.ID},
		Rules: p.grantRules, By: d.By, ByName: d.ByName, At: d.At, RequestID: r.ID, SessionID: s.ID, Channel: s.Thread.Channel}
	if p.grantKind == store.GrantSession {
		g.Expires = d.At.Add(blocks.GrantHour)
	} else {
		g.Scope = store.GrantScope{Kind: store.GrantRepo, Value: s.WorkDir, Token: apiTokenOf(s)}
	}
	if g.Scope.Value == "" {
		p.tell(ctx, "Approved this once. This session has no repository, so nothing was kept for it.")
		return
	}
	err := store.SignGrant(c.key, &g)
	if err == nil {
		err = c.st.AddGrant(ctx, g)
	}
	if err != nil {
		p.log.Error().Err(err).Msg("add grant")
		p.tell(ctx, "Approved this once, but I could not keep the rule for later: "+sorry("keep it", err))
		return
	}
	p.log.Info().Str("grant_id", g.ID).Str("scope", g.Scope.Key()).Strs("rules", g.Rules).Msg("grant added")
	p.tell(ctx, blocks.GrantAdded(g))
}

// grantFor is the newest grant that allows r in s now: live, verifies,
// applies to s, one of its rules allows r, and its adder is still an
// approver (bot/decide settles with it only where no policy rule matched).
func (b *Bot) grantFor(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.Grant, bool) {
	grants, err := b.st.ListGrants(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("list grants; a card asks")
		return store.Grant{}, false
	}
	forgotten, ok := b.graves.buried(ctx, log, store.TombGrant)
	if !ok {
		return store.Grant{}, false
	}
	now := b.clock.Now()
	pub := b.cfg.SigningKey.Public().(ed25519.PublicKey)
	for _, g := range grants {
		if !g.Live(now) || !grantApplies(g, s) || forgotten(g.ID) {
			continue
		}
		if err := store.VerifyGrant(pub, g); err != nil {
			log.Warn().Err(err).Str("grant_id", g.ID).Str("claimed_by", g.By).Msg("grant ignored: it does not verify")
			continue
		}
		if !grantAllows(g, r, s) {
			continue
		}
		if ok, err := b.approvers.allowed(ctx, g.By); !ok || err != nil {
			log.Info().Err(err).Str("grant_id", g.ID).Str("by", g.By).Msg("grant not used: who added it is not an approver (now)")
			continue
		}
		return g, true
	}
	return store.Grant{}, false
}

// grantApplies reports whether g's scope is s's.
func grantApplies(g store.Grant, s store.Session) bool {
	switch g.Scope.Kind {
	case store.GrantSession:
		return g.Scope.Value == s.ID
	case store.GrantRepo:
		return s.WorkDir != "" && g.Scope.Value == s.WorkDir && g.Scope.Token == apiTokenOf(s)
	}
	return false
}

// grantAllows reports whether one of g's rules allows r, matched as a
// policy file's allow rule would match it (package policy): a compound
// command only when every part is allowed, a path only once resolved.
func grantAllows(g store.Grant, r store.Request, s store.Session) bool {
	file, err := json.Marshal(map[string]any{"rules": []any{map[string]any{"name": "grant", "match": g.Rules, "allow": map[string]any{}}}})
	if err != nil {
		return false
	}
	p, err := policy.Parse("grant "+g.ID, file, policy.Options{})
	if err != nil {
		return false
	}
	return p.Evaluate(policyRequest(r, s), g.At).Action == policy.Allow
}

// liveGrants are the grants that still apply (live, not forgotten),
// newest first, for the App Home.
func (b *Bot) liveGrants(ctx context.Context) ([]store.Grant, error) {
	all, err := b.st.ListGrants(ctx)
	if err != nil {
		return nil, err
	}
	forgotten, ok := b.graves.buried(ctx, b.log, store.TombGrant)
	if !ok {
		forgotten = func(string) bool { return false } // listed, not used: grantFor decides
	}
	now := b.clock.Now()
	var out []store.Grant
	for _, g := range all {
		if g.Live(now) && !forgotten(g.ID) {
			out = append(out, g)
		}
	}
	return out, nil
}

// forgetGrants guards forgetting a grant: approvers only.
var forgetGrants = guarded{verb: "forget allowed rules", can: "forget allowed rules", refused: "forget of a grant by a non-approver refused"}

// onForgetGrantClick forgets a grant from the App Home, for an approver,
// and shows the tab again saying what happened.
func (b *Bot) onForgetGrantClick(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	user := cb.User.ID
	log := b.log.With().Str("user", user).Str("grant_id", a.GrantID).Logger()
	var notice string
	if !b.may(ctx, log, user, forgetGrants, func(text string) { notice = text }) {
		b.homes.tell(ctx, user, notice)
		return
	}
	who := who(ctx, b.api, cb)
	if err := b.graves.bury(ctx, store.TombGrant, a.GrantID, who); err != nil {
		log.Error().Err(err).Msg("bury grant")
		b.homes.tell(ctx, user, sorry("forget that rule", err))
		return
	}
	gone, err := b.st.ForgetGrant(ctx, a.GrantID, who.ID, who.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notice = "That rule was forgotten already."
	case err != nil:
		log.Error().Err(err).Msg("forget grant")
		notice = sorry("forget that rule", err)
	default:
		log.Info().Str("scope", gone.Scope.Key()).Msg("grant forgotten")
		notice = "✅ Forgotten: requests it allowed get a card again."
	}
	b.homes.tell(ctx, user, notice)
}
