package bot

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"slices"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

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
	g := store.Standing{Kind: store.StandingGrant, ID: "grant-" + uuid.NewString(), Scope: store.Scope{Kind: p.grantKind, Value: s.ID},
		Rules: p.grantRules, By: d.By, ByName: d.ByName, At: d.At, RequestID: r.ID, SessionID: s.ID, Channel: s.Thread.Channel}
	if p.grantKind == store.ScopeSession {
		g.Expires = d.At.Add(blocks.GrantHour)
	} else {
		g.Scope = store.Scope{Kind: store.ScopeRepo, Value: s.WorkDir, Token: apiTokenOf(s)}
	}
	if g.Scope.Value == "" {
		p.tell(ctx, "Approved this once. This session has no repository, so nothing was kept for it.")
		return
	}
	err := store.SignStanding(c.key, &g)
	if err == nil {
		_, err = c.st.Keep(ctx, g)
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
func (b *Bot) grantFor(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.Standing, bool) {
	grants, err := b.st.Kept(ctx, store.StandingGrant)
	if err != nil {
		log.Warn().Err(err).Msg("list grants; a card asks")
		return store.Standing{}, false
	}
	now := b.clock.Now()
	grants = slices.DeleteFunc(grants, func(g store.Standing) bool { return !g.Live(now) || !grantApplies(g, s) })
	if len(grants) == 0 {
		return store.Standing{}, false // most tool calls: no tombstones to read
	}
	forgotten, ok := b.graves.buried(ctx, log, store.StandingGrant)
	if !ok {
		return store.Standing{}, false
	}
	pub := b.cfg.SigningKey.Public().(ed25519.PublicKey)
	for _, g := range grants {
		if forgotten(g.ID) {
			continue
		}
		if err := store.VerifyStanding(pub, g); err != nil {
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
	return store.Standing{}, false
}

// grantApplies reports whether g's scope is s's.
func grantApplies(g store.Standing, s store.Session) bool {
	switch g.Scope.Kind {
	case store.ScopeSession:
		return g.Scope.Value == s.ID
	case store.ScopeRepo:
		return s.WorkDir != "" && g.Scope.Value == s.WorkDir && g.Scope.Token == apiTokenOf(s)
	}
	return false
}

// grantAllows reports whether one of g's rules allows r, matched as a
// policy file's allow rule would match it (package policy): a compound
// command only when every part is allowed, a path only once resolved.
func grantAllows(g store.Standing, r store.Request, s store.Session) bool {
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
