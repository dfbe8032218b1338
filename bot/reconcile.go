package bot

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// The event consumer acknowledges a request's event once its card is
// handed to the outbox (see handOff), not once Slack has it, so a bot that
// dies in between leaves a pending request without a card: Claude would
// wait for a decision nobody can see. The reconciler closes that gap. At
// start and then every ReconcileInterval it lists the pending requests
// that have no card and are older than reconcileMinAge (younger ones are
// most likely being posted right now) and posts their cards, unless the
// thread shows the card already (its bot died after Slack took it; see
// findcard.go), which it then records.
//
// A card is posted by whoever claims it first in the store (Dedup key
// "card:"+request id), on the event path and in the reconciler alike, so
// replicas reconciling at once, or a reconciler racing the event path, post
// one card. The claim lasts CardClaimTTL: a claim whose holder died lapses,
// and the next pass posts the card. A holder whose card waits in its
// outbox longer than that could race a pass on another replica; within one
// bot the cards being posted are known (cardsPosting) and never claimed
// twice.
//
// Outcomes need no reconciling: showSettled waits until Slack has the edit
// before the settled event is acknowledged (cards and outcomes take the
// outbox's first lane and rarely wait), so a crash leads to a redelivery.
// What is left is a request settled while its lost card was never posted:
// nobody waits on it, and the audit log has it.

const (
	// DefaultReconcileInterval is how often the reconciler looks for
	// pending requests without a card.
	DefaultReconcileInterval = 30 * time.Second
	// DefaultCardClaimTTL bounds how long a claim to post a card stands.
	// It must outlast a card's wait in a busy channel's queue.
	DefaultCardClaimTTL = 60 * time.Second
	// reconcileMinAge leaves a request alone while the event path most
	// likely posts its card.
	reconcileMinAge = 5 * time.Second
)

// cardsPosting is the requests whose card this bot is posting.
type cardsPosting struct {
	mu  sync.Mutex
	ids map[string]bool
}

// start reports false when id is being posted already.
func (c *cardsPosting) start(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids[id] {
		return false
	}
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	c.ids[id] = true
	return true
}

func (c *cardsPosting) done(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ids, id)
}

func (c *cardsPosting) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

// claimCard reports whether this bot may post the card of request id: it
// holds the store's claim on it. When the store cannot tell, the error is
// returned and nobody posts now (the event is redelivered, or the next
// pass tries again): a card posted twice is what the claim exists to avoid.
func (b *Bot) claimCard(ctx context.Context, log zerolog.Logger, id string) (bool, error) {
	if b.posting.has(id) {
		return false, nil
	}
	first, err := b.st.FirstSeen(ctx, "card:"+id, b.cfg.CardClaimTTL)
	if err != nil {
		return false, err
	}
	if !first {
		log.Debug().Msg("card claimed by another poster; the reconciler posts it if that claim lapses")
		return false, nil
	}
	return b.posting.start(id), nil
}

// reconcile runs reconcileOnce at start and every ReconcileInterval until
// ctx ends.
func (b *Bot) reconcile(ctx context.Context) error {
	for {
		b.reconcileOnce(ctx)
		if b.afterReconcile != nil {
			b.afterReconcile()
		}
		if store.Sleep(ctx, b.clock, b.cfg.ReconcileInterval) != nil {
			return nil
		}
	}
}

// reconcileOnce posts the cards of pending requests that have none. Errors
// are logged: the next pass tries again.
func (b *Bot) reconcileOnce(ctx context.Context) {
	pending, err := b.st.ListPending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn().Err(err).Msg("reconcile: list pending requests")
		}
		return
	}
	now := b.clock.Now()
	waiting := map[string]int{} // pending requests by session
	posted := map[string]bool{} // sessions that got a card
	var order []string          // posted, in the order of their first card
	for _, r := range pending {
		waiting[r.SessionID]++
		if !r.Card.IsZero() || now.Sub(r.CreatedAt) < reconcileMinAge || b.posting.has(r.ID) {
			continue
		}
		log := b.log.With().Str("session_id", r.SessionID).Str("request_id", r.ID).Logger()
		log.Info().Msg("reconcile: pending request has no card; posting it")
		if err := b.postCard(ctx, log, r.ID, cardPosting{lookFirst: true}); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("reconcile: card not posted; the next pass tries again")
			continue
		}
		if !posted[r.SessionID] {
			posted[r.SessionID] = true
			order = append(order, r.SessionID)
		}
	}
	// One status refresh per session, from the list in hand: asking the
	// store for each session's pending requests again would cost a
	// listing per card.
	for _, id := range order {
		b.refreshStatusFrom(ctx, id, statusFrom{pending: waiting[id]}, statusKeep)
	}
}
