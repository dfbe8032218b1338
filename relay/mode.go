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

// Why a mode switch was not carried out, as the thread is told: it names
// another process of the session than the one running (an earlier one, a
// copy queued again), or it was queued more than store.ModeSwitchTTL ago.
const (
	ModeForAnotherProcess = "The permission mode was not changed: the switch was meant for another Claude process of " +
		"this session than the one running now. Pick the mode again."
	ModeSwitchExpired = "The permission mode was not changed: the switch was asked for too long ago. Pick the mode again."
)

// setMode switches the live process to the permission mode a person
// picked in Slack (a signed store.ControlSetMode input), then records it:
// the session's LiveMode, an EventModeChanged for the status line and an
// AuditModeChanged entry. The CLI refusing it (bypassPermissions without
// the flag it needs) is told in the thread (EventRefused: the session
// runs on) and changes nothing. A switch signed for another process than
// this one, or queued more than store.ModeSwitchTTL ago by this worker's
// clock, is refused (told, logged and audited): a signed switch captured
// from the store replays into no later process.
func (r *processRun) setMode(ctx context.Context, in store.Input, log zerolog.Logger) {
	log = log.With().Str("mode", in.Mode).Logger()
	why := ""
	switch {
	case in.Process != r.id:
		why = ModeForAnotherProcess
	case r.worker.clock.Now().Sub(in.At) > store.ModeSwitchTTL:
		why = ModeSwitchExpired
	}
	if why != "" {
		log.Error().Str("input_id", in.ID).Str("meant_for", claimed(in.Process)).Time("asked_at", in.At).Msg("refusing a mode switch")
		r.worker.audit(ctx, store.AuditEntry{Action: store.AuditInputRefused, SessionID: r.sess.ID, By: claimed(in.User),
			Message: fmt.Sprintf("input %q: switch to %s: %s", claimed(in.ID), claimed(in.Mode), why)}, log)
		r.bridge.publish(context.WithoutCancel(ctx), store.Event{Type: store.EventRefused, Text: why})
		return
	}
	mctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	defer cancel()
	if err := r.proc.SetPermissionMode(mctx, in.Mode); err != nil {
		log.Error().Err(err).Msg("switching claude's permission mode")
		// Refused, not an error: the process runs on in its mode.
		r.bridge.publish(context.WithoutCancel(ctx), store.Event{Type: store.EventRefused,
			Text: fmt.Sprintf("Claude was not switched to the %s permission mode: %v", in.Mode, err)})
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
