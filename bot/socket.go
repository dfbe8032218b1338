package bot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// zerologOutput adapts zerolog to the Output-style logger slack-go wants;
// its chatter goes to debug level.
type zerologOutput struct{ log zerolog.Logger }

func (z zerologOutput) Output(_ int, s string) error {
	z.log.Debug().Msg(strings.TrimSpace(s))
	return nil
}

// socketMode is the Socket Mode transport: it acks every envelope at once
// and hands the payloads to the same handlers HTTP mode calls, saying
// how the connection is (conn, for SlackReady).
type socketMode struct {
	api           *slack.Client // with the app-level token
	log           zerolog.Logger
	conn          *connState
	work          *tasks
	onEvent       func(slackevents.EventsAPIEvent)
	onInteraction func(*slack.InteractionCallback) any
	onCommand     func(slack.SlashCommand) any
}

// run connects and handles envelopes until ctx ends (nil) or the
// connection fails for good.
func (sm *socketMode) run(ctx context.Context) error {
	client := socketmode.New(sm.api, socketmode.OptionLog(zerologOutput{sm.log.With().Str("component", "socketmode").Logger()}))

	runErr := make(chan error, 1)
	go func() { runErr <- client.RunContext(ctx) }()

	for {
		select {
		case err := <-runErr:
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil
			}
			return errors.Join(errors.New("bot: socket mode (is SLACK_APP_TOKEN right, with connections:write?)"), err)
		case <-ctx.Done():
			// RunContext returns soon after; wait so nothing outlives Run.
			<-runErr
			return nil
		case evt := <-client.Events:
			sm.onSocketEvent(ctx, client, evt)
		}
	}
}

// onSocketEvent acks every envelope at once and leaves the work to
// goroutines owned by the bot's tasks, so the event channel is drained promptly
// (slack-go's reader, and so its ping handling, blocks on it).
func (sm *socketMode) onSocketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	ack := func(payload ...any) {
		if evt.Request == nil {
			return
		}
		if err := client.AckCtx(ctx, evt.Request.EnvelopeID, firstOrNil(payload)); err != nil && ctx.Err() == nil {
			sm.log.Error().Err(err).Str("envelope_id", evt.Request.EnvelopeID).Msg("socket mode ack failed")
		}
	}
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		sm.conn.to(errors.New("socket mode connecting"))
		sm.log.Debug().Msg("socket mode connecting")
	case socketmode.EventTypeConnected:
		sm.conn.to(nil)
		sm.log.Info().Msg("socket mode connected")
	case socketmode.EventTypeHello:
		if evt.Request != nil {
			// Several live connections each get a random share of the
			// events; stale ones from old processes swallow theirs.
			sm.log.Info().Int("num_connections", evt.Request.NumConnections).Msg("socket mode hello")
		}
	case socketmode.EventTypeConnectionError, socketmode.EventTypeIncomingError, socketmode.EventTypeErrorWriteFailed:
		sm.log.Warn().Any("data", evt.Data).Msg("socket mode trouble")
	case socketmode.EventTypeInvalidAuth:
		sm.conn.to(errors.New("socket mode: invalid app token"))
		sm.log.Error().Msg("socket mode: invalid app token")
	case socketmode.EventTypeErrorBadMessage:
		// slack-go could not decode the envelope, so it gave us no Request
		// to ack; ack it by its id anyway, or Slack keeps resending it.
		bad, _ := evt.Data.(*socketmode.ErrorBadMessage)
		if bad == nil {
			return
		}
		var env struct {
			EnvelopeID string `json:"envelope_id"`
		}
		_ = json.Unmarshal(bad.Message, &env)
		sm.log.Warn().Err(bad.Cause).Str("envelope_id", env.EnvelopeID).Int("bytes", len(bad.Message)).Msg("socket mode: undecodable envelope")
		if env.EnvelopeID != "" {
			if err := client.AckCtx(ctx, env.EnvelopeID, nil); err != nil && ctx.Err() == nil {
				sm.log.Error().Err(err).Str("envelope_id", env.EnvelopeID).Msg("socket mode ack failed")
			}
		}
	case socketmode.EventTypeEventsAPI:
		ack()
		if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
			sm.onEvent(ev)
		}
	case socketmode.EventTypeSlashCommand:
		cmd, ok := evt.Data.(slack.SlashCommand)
		if !ok {
			ack()
			return
		}
		ack(sm.onCommand(cmd))
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok {
			ack()
			return
		}
		if cb.Type == slack.InteractionTypeViewSubmission {
			// The ack carries the response_action (validation errors),
			// so it waits for the decision; off the event loop.
			if !sm.work.Go(func(context.Context) { ack(sm.onInteraction(&cb)) }) {
				ack()
			}
			return
		}
		ack(sm.onInteraction(&cb))
	default:
		if evt.Request != nil && evt.Request.EnvelopeID != "" {
			ack()
		}
	}
}

func firstOrNil(xs []any) any {
	if len(xs) == 0 {
		return nil
	}
	return xs[0]
}
