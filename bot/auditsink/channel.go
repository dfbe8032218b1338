package auditsink

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// The audit channel (AUDIT_CHANNEL) gets one line per settled request and
// per refused record, rendered by blocks.AuditMessage, a few lines to a
// post when a backlog waits; and one line per checkpoint, which carries
// the signed checkpoint whole (blocks.AuditCheckpointMessage), so the
// channel is an anchor of the chain a store writer cannot reach. (The
// Sealer's alarm, when it stops sealing, is posted there too: Alarm.)
// A Follower drives the Channel from the audit log: one replica posts at a
// time, in order, and the sink's cursor moves only once Slack took the
// post, so a restart resumes where the last one stopped. It starts, the
// first time, at the log's head (older history is `slackgate audit
// export`'s). Posts take the outbox's last lane, behind cards, outcomes
// and progress, within the channel's post budget.
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

// maxHistoryPages bounds the pages of the channel one look reads (200
// messages each).
const maxHistoryPages = 5

// ChannelStore is what a Channel needs of the store.
type ChannelStore interface {
	Store
	GetRequest(ctx context.Context, id string) (store.Request, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// ChannelPoster is what a Channel needs of the outbox.
type ChannelPoster interface {
	PostOnce(log zerolog.Logger, l outbox.Lane, channel, threadTS string, m outbox.Msg, find func(context.Context) (string, bool, error)) outbox.Pending
}

// ChannelHistory reads a channel's history (conversations.history).
type ChannelHistory interface {
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
}

// ChannelConfig configures a Channel.
type ChannelConfig struct {
	Store ChannelStore
	Out   ChannelPoster
	API   ChannelHistory
	Clock store.Clock
	// Key is the bots' public signing key: it verifies what the lines say
	// was decided.
	Key ed25519.PublicKey
	// Channel is the audit channel's id.
	Channel string
	Log     zerolog.Logger
}

// Channel is the Sink that posts the audit log's lines to a Slack channel.
type Channel struct {
	st      ChannelStore
	out     ChannelPoster
	api     ChannelHistory
	clock   store.Clock
	pub     ed25519.PublicKey // verifies what the lines say was decided
	botUser string            // whose messages are the bot's (Identify)
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

// NewChannel returns the Channel of cfg. Identify must name the bot
// before its Follower runs.
func NewChannel(cfg ChannelConfig) *Channel {
	return &Channel{st: cfg.Store, out: cfg.Out, api: cfg.API, clock: cfg.Clock, pub: cfg.Key, channel: cfg.Channel, log: cfg.Log}
}

// Identify sets what auth.test said of the bot: its user, whose messages
// in the channel are the bot's, and the workspace's URL, which card links
// are built on. It is called before the Channel's Follower runs.
func (c *Channel) Identify(botUser, teamURL string) {
	c.botUser, c.teamURL = botUser, teamURL
}

// Alarm posts msg, the Sealer's word that it stopped sealing, to the
// channel: it is a SealerConfig.Alarm. The outbox logs a failure.
func (c *Channel) Alarm(msg string) {
	m := blocks.AuditAlarm(msg)
	_ = c.out.PostOnce(c.log, outbox.LaneAudit, c.channel, "", outbox.Msg{Text: m.Text, Blocks: m.Blocks}, nil)
}

// Begin implements Sink.
// A channel that has posted no checkpoint yet starts with the newest: it
// names the ones before it, and the channel needs no history.
func (c *Channel) Begin(ctx context.Context, s store.AuditSink) (store.AuditCursor, error) {
	cur := s.Cursor
	if !s.Started {
		head, err := c.st.AuditHead(ctx)
		if err != nil {
			return store.AuditCursor{}, fmt.Errorf("read the log's head: %w", err)
		}
		// Nothing was posted for it yet: no look before the first post.
		c.lastTS, c.posted, c.look = "", nil, false
		cur = store.AuditCursor{Entry: head.Entry, Seq: head.Seq}
	} else {
		c.lastTS, c.look = s.Cursor.Note, true
	}
	if cur.Sealed == 0 {
		last, err := c.st.LastAuditCheckpoint(ctx)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return store.AuditCursor{}, fmt.Errorf("read the newest checkpoint: %w", err)
		default:
			cur.Sealed = last.Seq - 1
		}
	}
	return cur, nil
}

// lookBack reads what the channel holds after the last post known, when
// a post's fate is unknown.
func (c *Channel) lookBack(ctx context.Context) error {
	if !c.look {
		return nil
	}
	posted, err := c.postedAfter(ctx, c.lastTS)
	if err != nil {
		return err
	}
	c.posted, c.look = posted, false
	return nil
}

// Deliver implements Sink: one post of the next lines of page.
func (c *Channel) Deliver(ctx context.Context, page []store.AuditEntry, keep func(context.Context) error) (int, string, error) {
	if err := c.lookBack(ctx); err != nil {
		return 0, "", err
	}
	lines, n, err := c.lines(ctx, page)
	if err != nil || len(lines) == 0 {
		return n, c.lastTS, err
	}
	c.keep = keep
	markers := make([]string, len(lines))
	for i, l := range lines {
		markers[i] = blocks.AuditLineMarker(l.Entry)
	}
	log := c.log.With().Uint64("seq", lines[0].Entry.Seq).Int("lines", len(lines)).Logger()
	ts, err := c.post(ctx, blocks.AuditMessage(lines), markers, log)
	return n, ts, err
}

// Seal implements Sink: the checkpoint's line, once.
func (c *Channel) Seal(ctx context.Context, cp store.AuditCheckpoint, keep func(context.Context) error) (string, error) {
	if err := c.lookBack(ctx); err != nil {
		return "", err
	}
	marker := blocks.AuditCheckpointMarker(cp)
	if c.posted[marker] {
		return c.lastTS, nil
	}
	c.keep = keep
	return c.post(ctx, blocks.AuditCheckpointMessage(cp), []string{marker}, c.log.With().Uint64("checkpoint_seq", cp.Seq).Logger())
}

// lines builds the lines of the entries at the start of page, up to
// blocks.AuditLinesPerMessage shown and not posted already, and says how
// many entries they cover.
func (c *Channel) lines(ctx context.Context, page []store.AuditEntry) ([]blocks.AuditLine, int, error) {
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
func (c *Channel) line(ctx context.Context, e store.AuditEntry) (blocks.AuditLine, error) {
	l := blocks.AuditLine{Entry: e, TeamURL: c.teamURL}
	if e.RequestID != "" {
		r, err := c.st.GetRequest(ctx, e.RequestID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return l, fmt.Errorf("read request %s: %w", e.RequestID, err)
		default:
			l.Verified = c.verified(e, r)
			r.Approvals = decide.Counted(c.pub, c.log, r) // only those a bot signed are named
			l.Request = &r
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
func (c *Channel) verified(e store.AuditEntry, r store.Request) bool {
	d := r.Decision
	if d == nil || (d.Outcome != store.OutcomeAllow && d.Outcome != store.OutcomeDeny) ||
		e.Action == store.AuditRefused || d.Outcome != e.Outcome || d.By != e.By || !d.At.Equal(e.At) {
		return false
	}
	return store.VerifyDecision(c.pub, r, *d) == nil
}

// post sends m, whose blocks carry markers, in the audit lane and
// returns its ts once Slack has it. While it waits, the claim is renewed;
// a claim lost meanwhile is reported once the post's outcome is known.
func (c *Channel) post(ctx context.Context, m blocks.Message, markers []string, log zerolog.Logger) (string, error) {
	msg := outbox.Msg{Text: m.Text, Blocks: m.Blocks}
	res := c.out.PostOnce(log, outbox.LaneAudit, c.channel, "", msg, func(ctx context.Context) (string, bool, error) {
		return c.find(ctx, markers[0])
	}).Done()
	var lost error
	for {
		renew := c.clock.NewTimer(time.Second)
		select {
		case r := <-res:
			renew.Stop()
			switch {
			case r.Err != nil:
				c.look = true // it may be in Slack all the same
				return "", r.Err
			case lost != nil:
				c.look = true
				return "", lost
			}
			// Should the cursor's write fail, the next try skips these.
			c.lastTS, c.posted = r.TS, map[string]bool{}
			for _, id := range markers {
				c.posted[id] = true
			}
			return r.TS, nil
		case <-renew.C():
			if lost == nil {
				if err := c.keep(ctx); errors.Is(err, ErrClaimLost) {
					lost = err
				}
			}
		}
	}
}

// find looks, after a failed post, for the one Slack may have taken.
func (c *Channel) find(ctx context.Context, marker string) (string, bool, error) {
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
func (c *Channel) postedAfter(ctx context.Context, ts string) (map[string]bool, error) {
	found := map[string]bool{}
	err := c.history(ctx, ts, func(_ slack.Message, markers []string) {
		for _, id := range markers {
			found[id] = true
		}
	})
	switch {
	case err != nil && outbox.Permanent(err):
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
func (c *Channel) history(ctx context.Context, ts string, fn func(slack.Message, []string)) error {
	params := &slack.GetConversationHistoryParameters{ChannelID: c.channel, Oldest: ts, Limit: 200}
	for range maxHistoryPages {
		resp, err := c.api.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return fmt.Errorf("auditsink: read the audit channel %s: %w", c.channel, err)
		}
		for _, m := range resp.Messages {
			if m.User != c.botUser {
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

// ChannelLine is one of the bot's lines in the audit channel, as
// ReadChannel reads it back: a checkpoint's, or an entry's seq and the
// first 16 hex digits of its hash.
type ChannelLine struct {
	TS         string
	Checkpoint *store.AuditCheckpoint
	Seq        uint64
	HashPrefix string
}

// ChannelReader is what ReadChannel needs of Slack's client: who the bot
// is (auth.test) and the channel's history.
type ChannelReader interface {
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
	ChannelHistory
}

// ReadChannel reads the whole history of the audit channel through api,
// a client with the bot's token, and returns the bot's audit lines,
// oldest first: what `slackgate audit verify` holds the store to. It
// waits out Slack's rate limits; progress, when set, is told how many
// messages it read so far.
func ReadChannel(ctx context.Context, api ChannelReader, channel string, progress func(int)) ([]ChannelLine, error) {
	auth, err := api.AuthTestContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("auditsink: auth.test (is SLACK_BOT_TOKEN right?): %w", err)
	}
	var out []ChannelLine
	params := &slack.GetConversationHistoryParameters{ChannelID: channel, Limit: 200}
	read := 0
	for {
		resp, err := api.GetConversationHistoryContext(ctx, params)
		var limited *slack.RateLimitedError
		if errors.As(err, &limited) {
			if err := store.Sleep(ctx, store.WallClock{}, limited.RetryAfter); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("auditsink: read the audit channel %s: %w", channel, err)
		}
		for _, m := range resp.Messages {
			if m.User != auth.UserID {
				continue
			}
			// Newest first: a message's lines go in backwards, and the
			// whole is reversed at the end.
			bs := m.Blocks.BlockSet
			for i := len(bs) - 1; i >= 0; i-- {
				if l, ok := channelLine(bs[i]); ok {
					l.TS = m.Timestamp
					out = append(out, l)
				}
			}
		}
		if read += len(resp.Messages); progress != nil {
			progress(read)
		}
		if !resp.HasMore || resp.ResponseMetaData.NextCursor == "" {
			slices.Reverse(out)
			return out, nil
		}
		params.Cursor = resp.ResponseMetaData.NextCursor
	}
}

// channelLine reads one block of the bot's as an audit line.
func channelLine(b slack.Block) (ChannelLine, bool) {
	id := b.ID()
	if seq, h, ok := blocks.ParseAuditLineMarker(id); ok {
		return ChannelLine{Seq: seq, HashPrefix: h}, true
	}
	sec, ok := b.(*slack.SectionBlock)
	if !ok || sec.Text == nil {
		return ChannelLine{}, false
	}
	cp, ok := blocks.ParseAuditCheckpointLine(id, sec.Text.Text)
	if !ok {
		return ChannelLine{}, false
	}
	return ChannelLine{Checkpoint: &cp, Seq: cp.Seq}, true
}
