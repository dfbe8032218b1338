package bot

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// Slack has no idempotent chat.postMessage: a post whose answer was lost
// (a timeout, a dropped connection, a 5xx after Slack acted) may be in the
// thread, and so may a card whose bot died between Slack taking it and
// SetCard. Posting again would show two cards for one request. So where a
// card may already be there without the store knowing, the bot first reads
// the thread (conversations.replies, which the *:history scopes it has for
// thread replies allow) for a message of its own carrying the request's
// buttons, and records that one instead. It reads only there, never on the
// usual path: a retried card post, and the reconciler's posts.

// maxFindPages bounds the thread pages one look reads (200 messages each).
const maxFindPages = 5

// findCard returns the ts of the bot's card for request id in the thread
// (channel, threadTS), if the thread holds one.
func (b *Bot) findCard(ctx context.Context, channel, threadTS, id string) (string, bool, error) {
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: threadTS, Limit: 200}
	for range maxFindPages {
		msgs, more, next, err := b.api.GetConversationRepliesContext(ctx, params)
		if slackErrCode(err) == "thread_not_found" {
			return "", false, nil // nothing there, so no card either
		}
		if err != nil {
			return "", false, fmt.Errorf("bot: read thread %s/%s: %w", channel, threadTS, err)
		}
		for _, m := range msgs {
			if m.User == b.botUserID && cardOf(m.Blocks) == id {
				return m.Timestamp, true, nil
			}
		}
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	return "", false, nil
}

// cardOf is the request whose buttons the blocks carry ("" when none).
func cardOf(bs slack.Blocks) string {
	for _, bl := range bs.BlockSet {
		var els []slack.BlockElement
		switch bl := bl.(type) {
		case *slack.ActionBlock:
			if bl.Elements != nil {
				els = bl.Elements.ElementSet
			}
		case *slack.SectionBlock:
			if bl.Accessory != nil && bl.Accessory.ButtonElement != nil {
				els = []slack.BlockElement{bl.Accessory.ButtonElement}
			}
		}
		for _, el := range els {
			btn, ok := el.(*slack.ButtonBlockElement)
			if !ok {
				continue
			}
			if a, ok := blocks.ParseAction(&slack.BlockAction{ActionID: btn.ActionID, Value: btn.Value}); ok && a.RequestID != "" {
				return a.RequestID
			}
		}
	}
	return ""
}

// cardFinder is what a card's post looks for before it is sent again.
func (b *Bot) cardFinder(s store.Session, id string) func(context.Context) (string, bool, error) {
	return func(ctx context.Context) (string, bool, error) {
		return b.findCard(ctx, s.Thread.Channel, s.Thread.TS, id)
	}
}

// postedBefore reports the card of r already in its thread, for the
// reconciler. A thread that cannot be read now (Slack unreachable) is an
// error: the next pass tries again rather than risk a second card. One
// Slack refuses to show (a permanent error) is logged and reported as no
// card, so the card is posted.
func (b *Bot) postedBefore(ctx context.Context, log zerolog.Logger, s store.Session, r store.Request) (string, bool, error) {
	ts, found, err := b.findCard(ctx, s.Thread.Channel, s.Thread.TS, r.ID)
	switch {
	case err != nil && permanent(err):
		log.Warn().Err(err).Msg("reconcile: cannot read the thread for a card posted before; posting one")
		return "", false, nil
	case err != nil:
		return "", false, err
	case found:
		log.Info().Str("card_ts", ts).Msg("reconcile: the card is in the thread already; recording it")
	}
	return ts, found, nil
}
