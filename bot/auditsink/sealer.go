package auditsink

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// The audit sealer signs checkpoints of the store's audit chain (see
// store's "Audit chain") with the decision signing key, which only bots
// hold: once store.AuditSealEntries entries or store.AuditSealAfter (on
// the bot's clock) have gone unsealed, and at shutdown. Every replica
// runs one; the store takes one checkpoint per head (PutAuditCheckpoint's
// compare-and-set), so the replicas seal once between them, each
// checkpoint naming the one before it.
//
// Whoever can write the store can also delete the chain and let a new one
// grow, so a sealer does not take the store's word for the past. It keeps
// an anchor (Anchor): the newest checkpoint it sealed or checked, and
// the newest head it saw, in memory and in Config.AnchorFile. At
// every look it checks the store against it: the newest checkpoint must
// be the anchor's or follow it, the chain must reach past both, and new
// entries must link on from the head it saw. Before it signs it verifies
// the entries since the last checkpoint. A store that fails any of this
// is never sealed: the sealer says why in the log, on /readyz
// (AuditChainBroken) and in the audit channel, and refuses until an
// operator signs a reset (`slackgate audit reset`) newer than its anchor.

// DefaultSealEvery is how often the sealer looks at the chain's head.
const DefaultSealEvery = time.Second

// auditPage is how many entries one read of the log returns.
const auditPage = 1000

// sealAtShutdown bounds the last seal, made after Run's context ended.
const sealAtShutdown = 5 * time.Second

// SealStore is what the sealer needs of the store.
type SealStore interface {
	AuditHead(ctx context.Context) (store.AuditLink, error)
	LastAuditCheckpoint(ctx context.Context) (store.AuditCheckpoint, error)
	AuditCheckpoints(ctx context.Context, from uint64) ([]store.AuditCheckpoint, error)
	AuditLog(ctx context.Context, after string, limit int) ([]store.AuditEntry, error)
	PutAuditCheckpoint(ctx context.Context, cp store.AuditCheckpoint, prev uint64) error
}

// Anchor is what a bot remembers of the audit chain, so a store that
// lost or rewrote it shows: the newest checkpoint it sealed or checked,
// and the newest head it saw. Its file (Config.AnchorFile) is JSON;
// `slackgate audit verify` holds the store to it too.
type Anchor struct {
	Checkpoint store.AuditCheckpoint `json:"checkpoint,omitzero"`
	Head       store.AuditLink       `json:"head,omitzero"`
}

func (x Anchor) same(y Anchor) bool {
	return x.Head == y.Head && x.Checkpoint.Entry == y.Checkpoint.Entry && x.Checkpoint.Same(y.Checkpoint)
}

// ReadAnchor reads the anchor kept at path; a zero anchor when there
// is no file.
func ReadAnchor(path string) (Anchor, error) {
	var a Anchor
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return a, nil
	}
	if err == nil {
		err = json.Unmarshal(raw, &a)
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("audit anchor %s: %w", path, err)
	}
	return a, nil
}

// writeAnchor replaces the anchor kept at path, whole or not at all.
func writeAnchor(path string, a Anchor) error {
	raw, err := json.Marshal(a)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".audit-anchor-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(raw, '\n'))
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep the audit anchor in %s: %w", path, err)
	}
	return nil
}

// Sealer is the Run(ctx) component that seals the audit chain.
type Sealer struct {
	st    SealStore
	key   ed25519.PrivateKey
	clock store.Clock
	every time.Duration
	log   zerolog.Logger
	// file keeps the anchor ("": memory only); alarm tells the audit
	// channel of a break (nil: there is none).
	file  string
	alarm func(msg string)

	anchor Anchor
	loaded bool

	mu sync.Mutex
	// broken is the break the sealer refuses to seal past ("": none).
	broken string
}

// SealerConfig is what a Sealer works with. Every <= 0 is
// DefaultSealEvery; AnchorFile "" keeps the anchor in memory only; Alarm
// (nil: none) is told of a break, for the audit channel.
type SealerConfig struct {
	Store      SealStore
	Key        ed25519.PrivateKey
	Clock      store.Clock
	Every      time.Duration
	AnchorFile string
	Alarm      func(msg string)
	Log        zerolog.Logger
}

// NewSealer returns a sealer of cfg.Store's audit chain.
func NewSealer(cfg SealerConfig) *Sealer {
	every := cfg.Every
	if every <= 0 {
		every = DefaultSealEvery
	}
	return &Sealer{st: cfg.Store, key: cfg.Key, clock: cfg.Clock, every: every, file: cfg.AnchorFile, alarm: cfg.Alarm, log: cfg.Log}
}

// Broken is why the sealer refuses to seal ("": it does not).
func (a *Sealer) Broken() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.broken
}

// Run seals whenever a look at the head finds it due, until ctx ends;
// then it seals what is left unsealed and returns nil.
func (a *Sealer) Run(ctx context.Context) error {
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

// seal checks the store against the anchor and signs a checkpoint of the
// head when one is due (always, when final and anything is unsealed).
// Read errors are logged; the next look tries again.
func (a *Sealer) seal(ctx context.Context, final bool) {
	if !a.loaded {
		a.load()
	}
	if a.refusing() {
		a.awaitReset(ctx)
		return
	}
	head, last, err := a.read(ctx)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn().Err(err).Msg("audit seal: read the chain's head")
		}
		return
	}
	was := a.anchor
	why, err := a.check(ctx, head, last)
	switch {
	case err != nil:
		a.log.Warn().Err(err).Msg("audit seal: check the chain against the anchor")
		return
	case why != "":
		a.refuse(why)
		return
	}
	defer func() {
		if !a.anchor.same(was) {
			a.keep()
		}
	}()
	if !a.due(head, last, final) {
		return
	}
	rep, err := a.verifySince(ctx, last)
	if err != nil {
		a.log.Warn().Err(err).Uint64("from_seq", last.Seq).Msg("audit seal: read the log")
		return
	}
	if rep.Break != nil {
		a.refuse(rep.Break.Error())
		return
	}
	if rep.Head.Seq <= last.Seq {
		return
	}
	cp := store.NextAuditCheckpoint(last, rep.Head, a.clock.Now())
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
		a.anchor.Checkpoint = cp
		a.log.Info().Uint64("seq", cp.Seq).Uint64("entries", cp.Seq-last.Seq).Msg("audit sealed")
	}
}

// read returns the chain's head and its newest checkpoint (zero: none).
func (a *Sealer) read(ctx context.Context) (store.AuditLink, store.AuditCheckpoint, error) {
	head, err := a.st.AuditHead(ctx)
	if err != nil {
		return head, store.AuditCheckpoint{}, err
	}
	last, err := a.st.LastAuditCheckpoint(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return head, store.AuditCheckpoint{}, nil
	}
	return head, last, err
}

// due reports whether a checkpoint is due: entries are unsealed and there
// is no checkpoint yet, enough of them, the last is old enough, or final.
func (a *Sealer) due(head store.AuditLink, last store.AuditCheckpoint, final bool) bool {
	switch {
	case head.Seq <= last.Seq:
		return false
	case last.Seq == 0:
		return true
	}
	return final || head.Seq-last.Seq >= store.AuditSealEntries || a.clock.Now().Sub(last.At) >= store.AuditSealAfter
}

// check holds the store's newest checkpoint and head to the anchor, and
// moves the anchor on to them when they follow it. It returns why the
// store does not ("": it does).
func (a *Sealer) check(ctx context.Context, head store.AuditLink, last store.AuditCheckpoint) (string, error) {
	if why, err := a.checkCheckpoint(ctx, last); why != "" || err != nil {
		return why, err
	}
	known, seen := a.anchor.Checkpoint, a.anchor.Head
	switch {
	case head.Seq < known.Seq:
		return fmt.Sprintf("the audit chain ends at seq %d, before the checkpoint at seq %d: sealed entries were removed", head.Seq, known.Seq), nil
	case head.Seq < seen.Seq:
		return fmt.Sprintf("the audit chain ends at seq %d; this bot saw it reach seq %d: its newest entries were removed", head.Seq, seen.Seq), nil
	case head.Seq == seen.Seq && head.Hash != seen.Hash:
		return fmt.Sprintf("the audit chain's entry at seq %d is not the one this bot saw there: the chain was rewritten", head.Seq), nil
	case head.Seq > seen.Seq && seen.Seq > 0:
		if why, err := a.linksOn(ctx, seen, head); why != "" || err != nil {
			return why, err
		}
	}
	a.anchor.Head = head
	return "", nil
}

// checkCheckpoint holds the store's newest checkpoint (zero: none) to the
// anchor's: the same one, or later ones each naming the one before, or a
// reset signed after it.
func (a *Sealer) checkCheckpoint(ctx context.Context, last store.AuditCheckpoint) (string, error) {
	known := a.anchor.Checkpoint
	pub := a.key.Public().(ed25519.PublicKey)
	switch {
	case last.Seq == 0 && known.Seq == 0:
		return "", nil
	case last.Seq == 0:
		return fmt.Sprintf("the store holds no audit checkpoint; this bot sealed or checked one at seq %d: the checkpoints were removed", known.Seq), nil
	case store.VerifyAuditCheckpoint(pub, last) != nil:
		return fmt.Sprintf("the newest audit checkpoint in the store, at seq %d, is forged: its signature does not verify", last.Seq), nil
	case known.Seq == 0 || last.Same(known) || a.resets(last):
		a.adopt(last)
		return "", nil
	case last.Seq < known.Seq:
		return fmt.Sprintf("the newest audit checkpoint in the store is at seq %d; this bot sealed or checked one at seq %d: newer checkpoints were removed", last.Seq, known.Seq), nil
	}
	cps, err := a.st.AuditCheckpoints(ctx, known.Seq)
	if err != nil {
		return "", err
	}
	if len(cps) == 0 || !cps[0].Same(known) {
		return fmt.Sprintf("the audit checkpoint at seq %d this bot sealed or checked is no longer in the store, or was replaced", known.Seq), nil
	}
	for i, cp := range cps[1:] {
		prev := cps[i]
		switch {
		case store.VerifyAuditCheckpoint(pub, cp) != nil:
			return fmt.Sprintf("the audit checkpoint at seq %d is forged: its signature does not verify", cp.Seq), nil
		case a.resets(cp):
			a.adopt(cp)
		case !cp.Follows(prev) && cp.V >= store.AuditCheckpointV2:
			return fmt.Sprintf("the audit checkpoint at seq %d does not follow the one at seq %d: a checkpoint was removed or the checkpoints started over", cp.Seq, prev.Seq), nil
		}
	}
	a.adopt(last)
	return "", nil
}

// resets reports whether cp is an operator's reset signed after the
// anchor's checkpoint: one from before it (replayed by a store writer)
// acknowledges nothing new.
func (a *Sealer) resets(cp store.AuditCheckpoint) bool {
	return cp.Reset && cp.At.After(a.anchor.Checkpoint.At)
}

// adopt makes cp the anchor's checkpoint; after a reset the head seen
// before it no longer binds.
func (a *Sealer) adopt(cp store.AuditCheckpoint) {
	if cp.Reset && !cp.Same(a.anchor.Checkpoint) {
		a.anchor.Head = store.AuditLink{}
		a.log.Warn().Uint64("seq", cp.Seq).Uint64("supersedes_seq", cp.PrevSeq).Time("signed", cp.At).
			Msg("audit chain reset by an operator: sealing from it on")
	}
	a.anchor.Checkpoint = cp
}

// linksOn checks that the entries after seen, up to head, link on from it.
func (a *Sealer) linksOn(ctx context.Context, seen, head store.AuditLink) (string, error) {
	at, after := seen, seen.Entry
	for at.Seq < head.Seq {
		page, err := a.st.AuditLog(ctx, after, auditPage)
		if err != nil {
			return "", err
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			d, err := store.AuditDigest(e)
			if err != nil {
				return "", err
			}
			h, err := store.AuditLinkHash(e.Seq, e.Prev, d)
			if err != nil || h != e.Hash || e.Seq != at.Seq+1 || e.Prev != at.Hash {
				return fmt.Sprintf("the audit entry %s (seq %d) does not link on from the head this bot saw at seq %d: the chain was rewritten", e.ID, e.Seq, seen.Seq), nil
			}
			at = store.AuditLink{Seq: e.Seq, Hash: e.Hash, Entry: e.ID}
			if at.Seq == head.Seq {
				break
			}
		}
		after = page[len(page)-1].ID
	}
	if at != head {
		return fmt.Sprintf("the audit chain's head at seq %d is not where its entries after seq %d lead", head.Seq, seen.Seq), nil
	}
	return "", nil
}

// verifySince walks the entries after checkpoint last (from the start
// when it is zero) and returns the verifier's report: its Head is what
// may be sealed.
func (a *Sealer) verifySince(ctx context.Context, last store.AuditCheckpoint) (store.AuditReport, error) {
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

func (a *Sealer) refusing() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.broken != ""
}

// refuse stops sealing for why, and says so once: in the log and the
// audit channel (/readyz asks AuditChainBroken).
func (a *Sealer) refuse(why string) {
	a.mu.Lock()
	a.broken = why
	a.mu.Unlock()
	a.log.Error().Uint64("anchor_seq", a.anchor.Checkpoint.Seq).Uint64("seen_seq", a.anchor.Head.Seq).
		Msgf("audit chain broken, not sealed: %s (slackgate audit verify names it; once an operator has looked, slackgate audit reset lets sealing go on)", why)
	if a.alarm != nil {
		a.alarm(why)
	}
}

// awaitReset looks, while refusing, for an operator's reset newer than
// the anchor, and seals on from it once there is one.
func (a *Sealer) awaitReset(ctx context.Context) {
	last, err := a.st.LastAuditCheckpoint(ctx)
	if err != nil || !a.resets(last) || store.VerifyAuditCheckpoint(a.key.Public().(ed25519.PublicKey), last) != nil {
		return
	}
	a.adopt(last)
	a.keep()
	a.mu.Lock()
	a.broken = ""
	a.mu.Unlock()
}

// load reads the anchor kept in the file, once; one that cannot be read
// or does not verify is a break: the sealer cannot tell what it held.
func (a *Sealer) load() {
	a.loaded = true
	if a.file == "" {
		a.log.Info().Msg("the audit anchor is kept in memory only: after a restart, a store that lost what this bot sealed shows in the audit channel and to `slackgate audit verify`, not to the bot")
		return
	}
	anchor, err := ReadAnchor(a.file)
	if err == nil && anchor.Checkpoint.Seq > 0 {
		err = store.VerifyAuditCheckpoint(a.key.Public().(ed25519.PublicKey), anchor.Checkpoint)
	}
	if err != nil {
		a.refuse(fmt.Sprintf("the audit anchor this bot keeps cannot be used (%v), so a store that lost entries would not show", err))
		return
	}
	a.anchor = anchor
}

// keep writes the anchor to its file, when there is one.
func (a *Sealer) keep() {
	if a.file == "" {
		return
	}
	if err := writeAnchor(a.file, a.anchor); err != nil {
		a.log.Warn().Err(err).Msg("audit seal: the anchor is kept in memory only until the next write succeeds")
	}
}
