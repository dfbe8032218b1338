package bot

import (
	"context"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// tellUser shows user an ephemeral in thread: how bot explains failures
// of work done after the ack.
func (b *Bot) tellUser(ctx context.Context, thread store.MessageRef, user, text string) {
	b.ephemeral(ctx, thread.Channel, thread.TS, user, text)
}

func (b *Bot) ephemeral(ctx context.Context, channel, threadTS, user, text string) {
	b.ephemeralMsg(ctx, channel, threadTS, user, blocks.Ephemeral(text))
}

// ephemeralMsg posts m for user only. Ephemerals skip the outbox: they are
// not part of the thread's order and chat.postEphemeral has its own limit.
func (b *Bot) ephemeralMsg(ctx context.Context, channel, threadTS, user string, m blocks.Message) {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false)}
	if len(m.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.Blocks...))
	}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := b.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		b.log.Error().Err(err).Str("channel", channel).Str("user", user).Msg("post ephemeral")
	}
}
