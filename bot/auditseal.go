package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// The audit sealer signs checkpoints of the store's audit chain (see
// store's "Audit chain") with the decision signing key, which only bots
// hold: once store.AuditSealEntries entries or store.AuditSealAfter (on
// the bot's clock) have gone unsealed, and at shutdown. Before it signs it
// verifies the entries since the last checkpoint, so it never seals a
// chain someone broke; it logs the break instead and seals nothing until
// an operator has looked. Every replica runs one; the store takes one
// checkpoint per head (PutAuditCheckpoint's compare-and-set), so the
// replicas seal once between them.

// DefaultAuditSealEvery is how often the sealer looks at the chain's head.
const DefaultAuditSealEvery = time.Second

// auditPage is how many entries one read of the log returns.
const auditPage = 1000

// sealAtShutdown bounds the last seal, made after Run's context ended.
const sealAtShutdown = 5 * time.Second

// auditSealStore is what the sealer needs of the store.
type auditSealStore interface {
	AuditHead(ctx context.Context) (store.AuditLink, error)
	LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error)
	AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error)
	PutAuditCheckpoint(ctx context.Context, cp store.AuditCheckpoint, prev uint64) error
}

// auditSealer is the Run(ctx) component that seals the audit chain.
type auditSealer struct {
	st    auditSealStore
	key   ed25519.PrivateKey
	clock store.Clock
	every time.Duration
	log   zerolog.Logger
	// broken is the last break logged, so one break is logged once.
	broken string
}

func (b *Bot) auditSealer() *auditSealer {
	every := b.cfg.AuditSealEvery
	if every <= 0 {
		every = DefaultAuditSealEvery
	}
	return &auditSealer{st: b.st, key: b.cfg.SigningKey, clock: b.clock, every: every,
		log: b.log.With().Str("component", "audit-sealer").Logger()}
}

// Run seals whenever a look at the head finds it due, until ctx ends;
// then it seals what is left unsealed and returns nil.
func (a *auditSealer) Run(ctx context.Context) error {
	for {
		a.seal(ctx, false)
		if store.Sleep(ctx, a.clock, a.every) != nil {
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), sealAtShutdown)
			a.seal(final, true)
			cancel()
			return nil
		}
	}
}

// seal signs a checkpoint of the head when one is due (always, when
// final and anything is unsealed). Errors are logged; the next look tries
// again.
func (a *auditSealer) seal(ctx context.Context, final bool) {
	last, due, err := a.due(ctx, final)
	if err != nil || !due {
		if err != nil && ctx.Err() == nil {
			a.log.Warn().Err(err).Msg("audit seal: read the chain's head")
		}
		return
	}
	rep, err := a.verifySince(ctx, last)
	if err != nil {
		a.log.Warn().Err(err).Uint64("from_seq", last.Seq).Msg("audit seal: read the log")
		return
	}
	if rep.Break != nil {
		if msg := rep.Break.Error(); msg != a.broken {
			a.broken = msg
			a.log.Error().Str("break", string(rep.Break.Kind)).Uint64("seq", rep.Break.Seq).Str("entry", rep.Break.Entry).
				Msgf("audit chain broken, not sealed: %s (slackgate audit verify names it too)", msg)
		}
		return
	}
	a.broken = ""
	if rep.Head.Seq <= last.Seq {
		return
	}
	cp := store.AuditCheckpoint{Seq: rep.Head.Seq, Hash: rep.Head.Hash, At: a.clock.Now(), Entry: rep.Head.Entry}
	if err := store.SignAuditCheckpoint(a.key, &cp); err != nil {
		a.log.Error().Err(err).Msg("audit seal: sign")
		return
	}
	err = a.st.PutAuditCheckpoint(ctx, cp, last.Seq)
	switch {
	case errors.Is(err, store.ErrExists):
		a.log.Debug().Uint64("seq", cp.Seq).Msg("audit seal: another bot sealed first")
	case err != nil:
		a.log.Warn().Err(err).Uint64("seq", cp.Seq).Msg("audit seal: store the checkpoint")
	default:
		a.log.Info().Uint64("seq", cp.Seq).Uint64("entries", cp.Seq-last.Seq).Msg("audit sealed")
	}
}

// due reads the newest checkpoint (zero when none) and whether a new one
// is due: entries are unsealed and there is no checkpoint yet, enough of
// them, the last is old enough, or final.
func (a *auditSealer) due(ctx context.Context, final bool) (store.AuditCheckpoint, bool, error) {
	head, err := a.st.AuditHead(ctx)
	if err != nil || head.Seq == 0 {
		return store.AuditCheckpoint{}, false, err
	}
	last, err := a.st.LastAuditCheckpoint(ctx)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.AuditCheckpoint{}, true, nil
	case err != nil:
		return last, false, err
	case head.Seq <= last.Seq:
		return last, false, nil
	}
	return last, final || head.Seq-last.Seq >= store.AuditSealEntries || a.clock.Now().Sub(last.At) >= store.AuditSealAfter, nil
}

// verifySince walks the entries after checkpoint last (from the start
// when it is zero) and returns the verifier's report: its Head is what
// may be sealed.
func (a *auditSealer) verifySince(ctx context.Context, last store.AuditCheckpoint) (store.AuditReport, error) {
	var cps []store.AuditCheckpoint
	if last.Seq > 0 {
		cps = append(cps, last)
	}
	v := store.NewAuditVerifier(a.key.Public().(ed25519.PublicKey), cps)
	after := last.Entry
	for {
		page, err := a.st.AuditLog(ctx, after, auditPage)
		if err != nil {
			return store.AuditReport{}, err
		}
		for _, e := range page {
			if !v.Entry(e) {
				return v.Finish(), nil
			}
		}
		if len(page) < auditPage {
			return v.Finish(), nil
		}
		after = page[len(page)-1].ID
	}
}
