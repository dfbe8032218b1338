package bot

import (
	"context"
	"errors"
	"strings"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// stopWord is the thread reply that stops Claude's turn instead of being
// sent to it as a prompt.
const stopWord = "stop"

// isStop reports whether a thread reply (the bot's mention already
// stripped) asks to stop Claude.
func isStop(text string) bool { return strings.EqualFold(strings.TrimSpace(text), stopWord) }

// stopper stops Claude's turn in a session, for whoever may (Bot.may,
// as a func), through the session's signed input queue.
type stopper struct {
	st     sessionGetter
	log    zerolog.Logger
	tell   *ephemerals
	inputs *inputs
	may    func(ctx context.Context, log zerolog.Logger, user string, g guarded, tell func(string)) bool
}

// sessionGetter reads a session (Store.GetSession).
type sessionGetter interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// onClick handles the Stop button of a session's status message.
func (p *stopper) onClick(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	user := cb.User.ID
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	thread := store.MessageRef{Channel: channel, TS: cb.Container.ThreadTs}
	log := p.log.With().Str("session_id", a.SessionID).Str("user", user).Str("channel", channel).Logger()
	s, err := p.st.GetSession(ctx, a.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		p.tell.tell(ctx, thread, user, "This session no longer exists, so there is nothing to stop.")
		return
	}
	if err != nil {
		log.Error().Err(err).Msg("stop: get session")
		p.tell.tell(ctx, thread, user, sorry("stop Claude", err))
		return
	}
	p.stop(ctx, log, s, user)
}

// stop asks the worker that owns s to interrupt Claude's running turn, if
// user may: an approver or the person who started the session. The
// interrupt travels the session's input queue, so it reaches whichever
// worker runs the process, after anything queued before it. The person
// hears back ephemerally; the thread says "Stopped by" once the turn ends.
func (p *stopper) stop(ctx context.Context, log zerolog.Logger, s store.Session, user string) {
	tell := func(text string) { p.tell.tell(ctx, s.Thread, user, text) }
	if !p.may(ctx, log, user, stopSession(s), tell) {
		return
	}
	switch s.State {
	case store.SessionIdle, store.SessionFailed:
		// No process: the worker would only drop the interrupt.
		tell("Claude is not working on anything in this thread, so there is nothing to stop.")
		return
	}
	if err := p.inputs.queue(ctx, store.Input{SessionID: s.ID, Control: store.ControlInterrupt, User: user}); err != nil {
		log.Error().Err(err).Msg("enqueue interrupt")
		tell(sorry("stop Claude", err))
		return
	}
	log.Info().Msg("interrupt queued")
	tell("Stopping Claude's current turn. Requests still waiting for a decision will be cancelled.")
}
