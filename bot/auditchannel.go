package bot

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"

	"github.com/slackgate/slackgate/bot/auditsink"
)

// The audit channel (Config.AuditChannel) is an auditsink.Channel, which
// posts a line per settled request, refusal and checkpoint; an
// auditsink.Follower drives it from the audit log. This file only wires
// them to the bot's store, outbox and Slack client; auditseal.go gives
// the sealer the Channel's Alarm.

// auditChannelSink is the store's name of the audit channel's sink.
const auditChannelSink = "channel"

// newAuditChannel builds the audit channel's sink and its follower; nil
// when no Config.AuditChannel is set. The follower's holder is the
// consumer name and a random suffix, so a restarted replica's claim is
// never taken for its previous life's.
func (b *Bot) newAuditChannel() (*auditsink.Channel, *auditsink.Follower) {
	if b.cfg.AuditChannel == "" {
		return nil, nil
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	log := b.log.With().Str("component", "audit-channel").Str("audit_channel", b.cfg.AuditChannel).Logger()
	pub := b.cfg.SigningKey.Public().(ed25519.PublicKey)
	c := auditsink.NewChannel(auditsink.ChannelConfig{Store: b.st, Out: b.out, API: b.api, Clock: b.clock, Key: pub,
		Channel: b.cfg.AuditChannel, Log: log})
	return c, &auditsink.Follower{Name: auditChannelSink, Holder: b.cfg.ConsumerName + "/" + hex.EncodeToString(r[:]),
		Store: b.st, Sink: c, Log: log, Clock: b.clock, Every: b.cfg.AuditEvery, Key: pub}
}

// runAuditChannel runs the follower once auth.test named the workspace.
func (b *Bot) runAuditChannel(ctx context.Context, teamURL string) error {
	b.auditLines.Identify(b.botUserID, teamURL)
	return b.auditChannel.Run(ctx)
}

// AuditChannelStatus is what the audit channel's follower last saw; ok is
// false when no audit channel is set.
func (b *Bot) AuditChannelStatus() (s auditsink.Status, ok bool) {
	if b.auditChannel == nil {
		return s, false
	}
	return b.auditChannel.Status(), true
}
