package decide

import (
	"crypto/ed25519"
	"slices"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// Counted are r's approvals that count toward its rule's N: signed by
// the bots' key pub, of the input the first of those approved, each
// person once. One written into the store by anyone else, or a copy of
// one, counts for nothing and is never shown.
func Counted(pub ed25519.PublicKey, log zerolog.Logger, r store.Request) []store.Approval {
	if len(r.Approvals) == 0 {
		return nil
	}
	var out []store.Approval
	for _, a := range r.Approvals {
		if err := store.VerifyApproval(pub, r, a); err != nil {
			log.Warn().Err(err).Str("claimed_by", a.By).Msg("approval does not verify; not counted")
			continue
		}
		if len(out) > 0 && a.Approves() != out[0].Approves() {
			continue
		}
		if slices.ContainsFunc(out, func(c store.Approval) bool { return c.By == a.By }) {
			log.Warn().Str("claimed_by", a.By).Msg("a second approval by the same person; counted once")
			continue
		}
		out = append(out, a)
	}
	return out
}

// Counted is Counted under x's key.
func (x *Decider) Counted(log zerolog.Logger, r store.Request) []store.Approval {
	return Counted(x.key.Public().(ed25519.PublicKey), log, r)
}
