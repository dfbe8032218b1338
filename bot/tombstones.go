package bot

import (
	"context"
	"crypto/ed25519"
	"sync"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// A grant or remembered answer an approver forgets is buried before its
// record goes (store.Tombstone, signed by this bot), and one with a
// tombstone that verifies decides nothing: a copy of its signed record
// written back into the store stays forgotten. The bot also keeps every
// tombstone it has seen, so one deleted from the store later still
// counts here.

// graves are the tombstones this bot has seen that verify, by kind and
// id, with what burying one takes: the store's two tombstone calls, the
// bot's key and clock.
type graves struct {
	st    graveStore
	key   ed25519.PrivateKey
	clock store.Clock
	seen  sync.Map
}

// graveStore is where tombstones are kept.
type graveStore interface {
	Bury(ctx context.Context, t store.Tombstone) error
	Tombstones(ctx context.Context, kind store.StandingKind) ([]store.Tombstone, error)
}

func graveKey(kind store.StandingKind, id string) string { return string(kind) + ":" + id }

// bury signs and keeps the tombstone of kind id, forgotten by who.
func (g *graves) bury(ctx context.Context, kind store.StandingKind, id string, who blocks.Who) error {
	t := store.Tombstone{Kind: kind, ID: id, By: who.ID, ByName: who.Name, At: g.clock.Now()}
	if err := store.SignTombstone(g.key, &t); err != nil {
		return err
	}
	if err := g.st.Bury(ctx, t); err != nil {
		return err
	}
	g.seen.Store(graveKey(kind, id), true)
	return nil
}

// buried reports which ids of kind are forgotten: those whose tombstone
// in the store verifies, and those this bot saw buried before. ok is false
// when the store could not list them: then nothing of kind may decide.
func (g *graves) buried(ctx context.Context, log zerolog.Logger, kind store.StandingKind) (isBuried func(id string) bool, ok bool) {
	ts, err := g.st.Tombstones(ctx, kind)
	if err != nil {
		log.Warn().Err(err).Str("kind", string(kind)).Msg("list tombstones; nothing remembered decides")
		return nil, false
	}
	pub := g.key.Public().(ed25519.PublicKey)
	for _, t := range ts {
		if _, known := g.seen.Load(graveKey(kind, t.ID)); known || t.Kind != kind {
			continue // verified before, or not of kind
		}
		if err := store.VerifyTombstone(pub, t); err != nil {
			log.Warn().Err(err).Str("kind", string(kind)).Str("id", t.ID).Msg("a tombstone that does not verify buries nothing")
			continue
		}
		g.seen.Store(graveKey(kind, t.ID), true)
	}
	return func(id string) bool {
		_, ok := g.seen.Load(graveKey(kind, id))
		return ok
	}, true
}
