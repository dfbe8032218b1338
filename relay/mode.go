package relay

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// NoProcessForMode is what the thread hears when a mode switch reaches a
// session with no running claude process: nothing to switch.
const NoProcessForMode = "The permission mode was not changed: Claude is not running in this session now. " +
	"Send a message, then pick the mode while it runs."

// setMode switches the live process to the permission mode a person
// picked in Slack (a signed store.ControlSetMode input), then records it:
// the session's LiveMode, an EventModeChanged for the status line and an
// AuditModeChanged entry. The CLI refusing it (bypassPermissions without
// the flag it needs) is told in the thread and changes nothing.
func (r *processRun) setMode(ctx context.Context, in store.Input, log zerolog.Logger) {
	log = log.With().Str("mode", in.Mode).Logger()
	mctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := r.proc.SetPermissionMode(mctx, in.Mode); err != nil {
		log.Error().Err(err).Msg("switching claude's permission mode")
		r.bridge.publish(context.WithoutCancel(ctx), store.Event{Type: store.EventError,
			Text: fmt.Sprintf("Could not switch Claude to the %s permission mode: %v", in.Mode, err)})
		return
	}
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer wcancel()
	if _, err := r.worker.st.UpdateSession(wctx, r.sess.ID, func(s *store.Session) error {
		s.LiveMode = in.Mode
		return nil
	}); err != nil {
		log.Error().Err(err).Msg("recording the session's permission mode")
	}
	r.worker.audit(wctx, store.AuditEntry{Action: store.AuditModeChanged, SessionID: r.sess.ID,
		Channel: r.sess.Thread.Channel, ThreadTS: r.sess.Thread.TS, By: in.User, Message: in.Mode}, log)
	r.bridge.publish(wctx, store.Event{Type: store.EventModeChanged, Text: in.Mode, By: in.User})
	log.Info().Msg("permission mode switched")
}
