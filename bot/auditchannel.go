package bot

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/store"
)

// The audit channel (Config.AuditChannel) gets one line per settled
// request and per refused record, rendered by blocks.AuditMessage, a few
// lines to a post when a backlog waits. An auditsink.Follower drives it
// from the audit log: one replica posts at a time, in order, and the
// sink's cursor moves only once Slack took the post, so a restart resumes
// where the last one stopped. It starts, the first time, at the log's
// head (older history is `slackgate audit export`'s). Posts take the
// outbox's last lane, behind cards, outcomes and progress, within the
// channel's post budget.
//
// Slack's chat.postMessage is not idempotent, so a holder that dies
// between Slack taking a post and its cursor write would post the lines
// again. Each line's block_id names its entry (blocks.AuditLineMarker), and
// the cursor keeps the ts of the last post: a new holder first reads the
// channel after that ts (conversations.history) for the bot's lines and
// does not post those again; so does a holder whose post failed after
// Slack may have acted. What remains is a duplicate when that read is
// refused for good (it is logged, and the lines are posted), or when a
// holder loses its claim while its post waits in the outbox and the next
// holder reads the channel before that post lands.

// auditChannelSink is the store's name of the audit channel's sink.
const auditChannelSink = "channel"

// auditChannelStore is what the audit channel needs of the store.
type auditChannelStore interface {
	auditsink.Store
	GetRequest(ctx context.Context, id string) (store.Request, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// auditChannel is the auditsink.Sink that posts to the audit channel.
type auditChannel struct {
	b       *Bot
	st      auditChannelStore
	channel string
	teamURL string // auth.test's url, which card links are built on
	log     zerolog.Logger
	// lastTS is the ts of the last post (the cursor's note); posted are
	// the markers of the bot's lines found after it, and look asks for a
	// new read before the next post.
	lastTS string
	posted map[string]bool
	look   bool
	// keep renews the claim while a post waits (set per Deliver).
	keep func(context.Context) error
}

// newAuditChannel builds the follower of Config.AuditChannel; nil when
// none is set. Its holder is the consumer name and a random suffix, so a
// restarted replica's claim is never taken for its previous life's.
func (b *Bot) newAuditChannel() *auditsink.Follower {
	if b.cfg.AuditChannel == "" {
		return nil
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	log := b.log.With().Str("component", "audit-channel").Str("audit_channel", b.cfg.AuditChannel).Logger()
	c := &auditChannel{b: b, st: b.st, channel: b.cfg.AuditChannel, log: log}
	return &auditsink.Follower{Name: auditChannelSink, Holder: b.cfg.ConsumerName + "/" + hex.EncodeToString(r[:]),
		Store: b.st, Sink: c, Log: log, Clock: b.clock, Every: b.cfg.AuditEvery}
}

// runAuditChannel runs the follower once auth.test named the workspace.
func (b *Bot) runAuditChannel(ctx context.Context, teamURL string) error {
	b.auditChannel.Sink.(*auditChannel).teamURL = teamURL
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

// Begin implements auditsink.Sink.
func (c *auditChannel) Begin(ctx context.Context, s store.AuditSink) (store.AuditCursor, error) {
	if !s.Started {
		head, err := c.st.AuditHead(ctx)
		if err != nil {
			return store.AuditCursor{}, fmt.Errorf("read the log's head: %w", err)
		}
		// Nothing was posted for it yet: no look before the first post.
		c.lastTS, c.posted, c.look = "", nil, false
		return store.AuditCursor{Entry: head.Entry, Seq: head.Seq}, nil
	}
	c.lastTS, c.look = s.Cursor.Note, true
	return s.Cursor, nil
}

// Deliver implements auditsink.Sink: one post of the next lines of page.
func (c *auditChannel) Deliver(ctx context.Context, page []store.AuditEntry, keep func(context.Context) error) (int, string, error) {
	if c.look {
		posted, err := c.postedAfter(ctx, c.lastTS)
		if err != nil {
			return 0, "", err
		}
		c.posted, c.look = posted, false
	}
	lines, n, err := c.lines(ctx, page)
	if err != nil || len(lines) == 0 {
		return n, c.lastTS, err
	}
	c.keep = keep
	ts, err := c.post(ctx, lines)
	if err != nil {
		c.look = true // it may be in Slack all the same
		return 0, "", err
	}
	// Should the cursor's write fail, the next try skips these lines.
	c.lastTS, c.posted = ts, map[string]bool{}
	for _, l := range lines {
		c.posted[blocks.AuditLineMarker(l.Entry)] = true
	}
	return n, ts, nil
}

// lines builds the lines of the entries at the start of page, up to
// blocks.AuditLinesPerMessage shown and not posted already, and says how
// many entries they cover.
func (c *auditChannel) lines(ctx context.Context, page []store.AuditEntry) ([]blocks.AuditLine, int, error) {
	var out []blocks.AuditLine
	for i, e := range page {
		if !blocks.AuditShown(e.Action) || c.posted[blocks.AuditLineMarker(e)] {
			continue
		}
		l, err := c.line(ctx, e)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, l)
		if len(out) == blocks.AuditLinesPerMessage {
			return out, i + 1, nil
		}
	}
	return out, len(page), nil
}

// line is e with what the store says of its request and session now.
func (c *auditChannel) line(ctx context.Context, e store.AuditEntry) (blocks.AuditLine, error) {
	l := blocks.AuditLine{Entry: e, TeamURL: c.teamURL}
	if e.RequestID != "" {
		r, err := c.st.GetRequest(ctx, e.RequestID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return l, fmt.Errorf("read request %s: %w", e.RequestID, err)
		default:
			l.Request = &r
			l.Verified = c.verified(e, r)
		}
	}
	if e.SessionID != "" {
		s, err := c.st.GetSession(ctx, e.SessionID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return l, fmt.Errorf("read session %s: %w", e.SessionID, err)
		default:
			l.WorkDir = s.WorkDir
		}
	}
	return l, nil
}

// verified reports whether e records r's decision as the store holds it,
// signed by a bot: only then does a line name a person as who decided.
func (c *auditChannel) verified(e store.AuditEntry, r store.Request) bool {
	d := r.Decision
	if d == nil || (d.Outcome != store.OutcomeAllow && d.Outcome != store.OutcomeDeny) ||
		e.Action == store.AuditRefused || d.Outcome != e.Outcome || d.By != e.By || !d.At.Equal(e.At) {
		return false
	}
	return store.VerifyDecision(c.b.cfg.SigningKey.Public().(ed25519.PublicKey), r, *d) == nil
}

// post sends one message of lines in the audit lane and returns its ts
// once Slack has it. While it waits, the claim is renewed; a claim lost
// meanwhile is reported once the post's outcome is known.
func (c *auditChannel) post(ctx context.Context, lines []blocks.AuditLine) (string, error) {
	first := blocks.AuditLineMarker(lines[0].Entry)
	p := &op{kind: opPost, lane: laneAudit, channel: c.channel, msg: toMsg(blocks.AuditMessage(lines)),
		log:  c.log.With().Uint64("seq", lines[0].Entry.Seq).Int("lines", len(lines)).Logger(),
		find: func(ctx context.Context) (string, bool, error) { return c.find(ctx, first) }}
	res := c.b.out.enqueuePending(p).res
	var lost error
	for {
		renew := c.b.clock.NewTimer(time.Second)
		select {
		case r := <-res:
			renew.Stop()
			if r.err == nil && lost != nil {
				return "", lost
			}
			return r.ts, r.err
		case <-renew.C():
			if lost == nil {
				if err := c.keep(ctx); errors.Is(err, auditsink.ErrClaimLost) {
					lost = err
				}
			}
		}
	}
}

// find looks, after a failed post, for the one Slack may have taken.
func (c *auditChannel) find(ctx context.Context, marker string) (string, bool, error) {
	var ts string
	err := c.history(ctx, c.lastTS, func(m slack.Message, markers []string) {
		for _, id := range markers {
			if id == marker && ts == "" {
				ts = m.Timestamp
			}
		}
	})
	return ts, ts != "", err
}

// postedAfter reads the channel after ts ("": its newest messages) for the
// bot's audit lines and returns their markers. A read Slack refuses for
// good (a missing scope) is logged and finds nothing: a line twice beats
// a line never posted.
func (c *auditChannel) postedAfter(ctx context.Context, ts string) (map[string]bool, error) {
	found := map[string]bool{}
	err := c.history(ctx, ts, func(_ slack.Message, markers []string) {
		for _, id := range markers {
			found[id] = true
		}
	})
	switch {
	case err != nil && permanent(err):
		c.log.Warn().Err(err).Msg("audit channel: cannot read the channel for lines posted before; posting without looking")
		return nil, nil
	case err != nil:
		return nil, err
	case len(found) > 0:
		c.log.Info().Int("lines", len(found)).Str("after_ts", ts).Msg("audit channel: lines in the channel already; not posting them again")
	}
	return found, nil
}

// history calls fn with each of the bot's messages in the channel after
// ts (its newest page when ts is ""), and the audit markers they carry.
func (c *auditChannel) history(ctx context.Context, ts string, fn func(slack.Message, []string)) error {
	params := &slack.GetConversationHistoryParameters{ChannelID: c.channel, Oldest: ts, Limit: 200}
	for range maxFindPages {
		resp, err := c.b.api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return fmt.Errorf("bot: read the audit channel %s: %w", c.channel, err)
		}
		for _, m := range resp.Messages {
			if m.User != c.b.botUserID {
				continue
			}
			var markers []string
			for _, bl := range m.Blocks.BlockSet {
				if id := bl.ID(); strings.HasPrefix(id, blocks.Prefix+"audit.") {
					markers = append(markers, id)
				}
			}
			fn(m, markers)
		}
		if ts == "" || !resp.HasMore || resp.ResponseMetaData.NextCursor == "" {
			return nil
		}
		params.Cursor = resp.ResponseMetaData.NextCursor
	}
	return nil
}
