package bot

import (
	"crypto/ed25519"
	"crypto/sha256"
	"sync"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// The bot's only view of how things look: every message it posts for a
// thread is rendered by package blocks through these adapters.

type renderedCard struct {
	msg           outMsg
	fullInput     string
	fullInputName string
}

func renderCard(r store.Request, s store.Session) renderedCard {
	return renderCardWith(r, s, blocks.CardOptions{})
}

func renderCardWith(r store.Request, s store.Session, o blocks.CardOptions) renderedCard {
	m := blocks.CardWith(r, s, o)
	return renderedCard{msg: toMsg(m), fullInput: m.FullInput, fullInputName: m.FullInputName}
}

func renderEvent(e store.Event) []outMsg {
	var out []outMsg
	for _, m := range blocks.EventMessages(e) {
		out = append(out, toMsg(m))
	}
	return out
}

// renderStatus shows the phase, except that pending requests turn a
// working (or queued) session into one waiting for approval.
func renderStatus(s store.Session, st blocks.Status) outMsg {
	if st.Pending > 0 && (st.Phase == blocks.PhaseWorking || st.Phase == blocks.PhaseQueued) {
		st.Phase = blocks.PhaseWaiting
	}
	return toMsg(blocks.StatusMessage(s, st))
}

func toMsg(m blocks.Message) outMsg {
	return outMsg{Text: m.Text, Blocks: m.Blocks, blocksJSON: m.BlocksJSON}
}

// asShown is the request as a card may show it. A person's decision whose
// signature does not verify was written into the store by someone other
// than a bot (the worker refuses it and tells Claude no): it is shown as
// refused at once, never as the approval or the words it claims.
func asShown(pub ed25519.PublicKey, r store.Request) store.Request {
	d := r.Decision
	if d == nil || (d.Outcome != store.OutcomeAllow && d.Outcome != store.OutcomeDeny) {
		return r
	}
	if verified(pub, r, *d) {
		return r
	}
	r.Decision = &store.Decision{Outcome: store.OutcomeRefused, At: d.At}
	return r
}

// verifiedSigs remembers the decisions whose signatures verified, by a
// digest of all that was verified: the key, the signature and the signed
// payload. A settled card is rendered on the click and again for every
// delivery of its settled event, and an ed25519 verification costs more
// than the rest of the render. The set is emptied when full.
var verifiedSigs struct {
	sync.Mutex
	m map[[sha256.Size]byte]struct{}
}

const maxVerifiedSigs = 4096

// verified is store.VerifyDecision(pub, r, d) == nil, remembered.
func verified(pub ed25519.PublicKey, r store.Request, d store.Decision) bool {
	if len(pub) != ed25519.PublicKeySize || len(d.Signature) != ed25519.SignatureSize {
		return store.VerifyDecision(pub, r, d) == nil // fails, and says why in one place
	}
	payload, err := store.DecisionPayload(r, d)
	if err != nil {
		return false
	}
	// Fixed sizes for the key and the signature: no two inputs share bytes.
	h := sha256.New()
	h.Write(pub)
	h.Write(d.Signature)
	h.Write(payload)
	var k [sha256.Size]byte
	h.Sum(k[:0])
	verifiedSigs.Lock()
	_, ok := verifiedSigs.m[k]
	verifiedSigs.Unlock()
	if ok {
		return true
	}
	if store.VerifyDecision(pub, r, d) != nil {
		return false
	}
	verifiedSigs.Lock()
	defer verifiedSigs.Unlock()
	if verifiedSigs.m == nil || len(verifiedSigs.m) >= maxVerifiedSigs {
		verifiedSigs.m = make(map[[sha256.Size]byte]struct{})
	}
	verifiedSigs.m[k] = struct{}{}
	return true
}

// shown is asShown with this bot's own public key.
func (b *Bot) shown(r store.Request) store.Request {
	return asShown(b.cfg.SigningKey.Public().(ed25519.PublicKey), r)
}
