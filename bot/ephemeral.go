package bot

import (
	"context"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// ephemerals posts messages only one person sees: how the bot explains a
// refusal, or a failure of work done after the ack. They skip the outbox:
// they are not part of the thread's order and chat.postEphemeral has its
// own limit.
type ephemerals struct {
	api ephemeralPoster
	log zerolog.Logger
}

// ephemeralPoster posts an ephemeral message (a *slack.Client).
type ephemeralPoster interface {
	PostEphemeralContext(ctx context.Context, channel, user string, options ...slack.MsgOption) (string, error)
}

// tell shows user an ephemeral in thread.
func (e *ephemerals) tell(ctx context.Context, thread store.MessageRef, user, text string) {
	e.post(ctx, thread.Channel, thread.TS, user, text)
}

// post shows user text in channel (in threadTS's thread when set).
func (e *ephemerals) post(ctx context.Context, channel, threadTS, user, text string) {
	e.postMsg(ctx, channel, threadTS, user, blocks.Ephemeral(text))
}

// postMsg posts m for user only.
func (e *ephemerals) postMsg(ctx context.Context, channel, threadTS, user string, m blocks.Message) {
	opts := []slack.MsgOption{slack.MsgOptionText(m.Text, false)}
	if len(m.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(m.Blocks...))
	}
	if threadTS != "" {
		opts = append(opts, slack.MsgOptionTS(threadTS))
	}
	if _, err := e.api.PostEphemeralContext(ctx, channel, user, opts...); err != nil {
		e.log.Error().Err(err).Str("channel", channel).Str("user", user).Msg("post ephemeral")
	}
}
