package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/store"
)

// auditWebhook is the follower that POSTs the audit log to
// AUDIT_WEBHOOK_URL (nil when unset). It runs in every process that runs a
// bot; the sink's claim in the store lets one of them deliver at a time.
func auditWebhook(cfg Config, st store.Store, sign ed25519.PrivateKey, log zerolog.Logger) (*auditsink.Follower, error) {
	if cfg.AuditWebhookURL == "" {
		return nil, nil
	}
	log = log.With().Str("component", "audit-webhook").Logger()
	w, err := auditsink.NewWebhook(auditsink.WebhookConfig{URL: cfg.AuditWebhookURL, Secret: cfg.AuditWebhookSecret, Log: log})
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	host, _ := os.Hostname()
	var r [4]byte
	_, _ = rand.Read(r[:])
	return &auditsink.Follower{Name: "webhook", Holder: "bot-" + host + "/" + hex.EncodeToString(r[:]), Store: st, Sink: w, Log: log,
		Key: sign.Public().(ed25519.PublicKey)}, nil
}

// auditAnchorFile is where a bot keeps its audit anchor (auditsink.Anchor):
// in DATA_DIR when that directory exists (`slackgate run` on the embedded
// store makes it), else nowhere but memory.
func auditAnchorFile(cfg Config) string {
	if fi, err := os.Stat(cfg.DataDir); err != nil || !fi.IsDir() {
		return ""
	}
	return filepath.Join(cfg.DataDir, auditAnchorName)
}

// auditAnchorName is the anchor's file in DATA_DIR.
const auditAnchorName = "audit-anchor.json"

// auditSinks exports the backlog and last delivery of the audit channel
// and the webhook, where set, and returns their readiness notes: a backlog
// past AUDIT_MAX_BACKLOG is noted, and the process stays ready.
func auditSinks(cfg Config, b *bot.Bot, webhook *auditsink.Follower, m *metrics) []healthCheck {
	sinks := map[string]func() auditsink.Status{}
	if _, ok := b.AuditChannelStatus(); ok {
		sinks["channel"] = func() auditsink.Status { s, _ := b.AuditChannelStatus(); return s }
	}
	if webhook != nil {
		sinks["webhook"] = webhook.Status
	}
	if len(sinks) == 0 {
		return nil
	}
	m.watchAuditSinks(sinks)
	var notes []healthCheck
	for _, name := range slices.Sorted(maps.Keys(sinks)) {
		status, bound := sinks[name], uint64(cfg.AuditMaxBacklog)
		notes = append(notes, healthCheck{"audit_" + name + "_backlog", func(context.Context) error {
			if s := status(); s.Looked && s.Backlog > bound {
				return fmt.Errorf("%d audit entries not delivered to the audit %s, more than AUDIT_MAX_BACKLOG=%d (last delivery %s)",
					s.Backlog, name, bound, lastDelivery(s.Delivered))
			}
			return nil
		}})
	}
	return notes
}

func lastDelivery(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339)
}
