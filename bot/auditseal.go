package bot

import (
	"github.com/slackgate/slackgate/bot/auditsink"
)

// newAuditSealer builds the sealer of the store's audit chain
// (auditsink.Sealer), telling the audit channel of a break.
func (b *Bot) newAuditSealer() *auditsink.Sealer {
	cfg := auditsink.SealerConfig{Store: b.st, Key: b.cfg.SigningKey, Clock: b.clock, Every: b.cfg.AuditSealEvery,
		AnchorFile: b.cfg.AuditAnchorFile, Log: b.log.With().Str("component", "audit-sealer").Logger()}
	if b.auditLines != nil {
		cfg.Alarm = b.auditLines.Alarm
	}
	return auditsink.NewSealer(cfg)
}

// AuditChainBroken is why the audit sealer refuses to seal ("": it does
// not, or no sealer runs).
func (b *Bot) AuditChainBroken() string {
	if b.sealer == nil {
		return ""
	}
	return b.sealer.Broken()
}
