package bot

import (
	"context"
	"time"

	"github.com/slackgate/slackgate/store"
)

// The reconciler posts the cards lost in a crash: an event acknowledged
// once its card was handed to the outbox (see cards) leaves a pending
// request without a card if its bot dies before Slack has the card, and
// Claude would wait for a decision nobody can see. At start and then every
// ReconcileInterval it lists the pending requests that have no card and are
// older than reconcileMinAge (younger ones are most likely being posted
// right now) and posts each as a lost card: unless the thread shows it
// already, then recorded. The card's claim keeps replicas, and a
// reconciler racing the event path, to one card. What is left is a request
// settled while its lost card was never posted: nobody waits on it, and
// the audit log has it.

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
	for _, r := range pending {
		if !r.Card.IsZero() || now.Sub(r.CreatedAt) < reconcileMinAge || b.cards.busy(r.ID) {
			continue
		}
		log := b.log.With().Str("session_id", r.SessionID).Str("request_id", r.ID).Logger()
		log.Info().Msg("reconcile: pending request has no card; posting it")
		if err := b.cards.post(ctx, log, r.ID, lostCard); err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("reconcile: card not posted; the next pass tries again")
		}
	}
}
