package bot

import (
	"cmp"
	"context"
	"errors"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// modesOffered are the permission modes s's status line offers: none for
// an approval API session (no worker runs it), bypassPermissions only when
// the policy file names who may pick it (modes.bypassPermissions).
func (b *Bot) modesOffered(s store.Session) []string {
	if s.API {
		return nil
	}
	modes := []string{"default", "acceptEdits", "plan"}
	if p := b.Policy(); p != nil && len(p.BypassPermissions()) > 0 {
		modes = append(modes, "bypassPermissions")
	}
	return modes
}

// switchMode guards switching a session's permission mode: approvers only
// (the starter may not widen what Claude does without asking).
var switchMode = guarded{verb: "change Claude's permission mode", can: "change Claude's permission mode",
	refused: "mode switch by a non-approver ignored"}

// onModePick handles a pick on the status line's mode menu: an approver
// asks the worker running the session to switch the live process's
// permission mode. It travels the session's queue as a signed control
// input (store.ControlSetMode), like Stop; the worker answers with an
// EventModeChanged (status line, thread line, audit) or an error in the
// thread. The person hears back privately either way.
func (b *Bot) onModePick(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	user := cb.User.ID
	thread := store.MessageRef{Channel: cmp.Or(cb.Container.ChannelID, cb.Channel.ID), TS: cb.Container.ThreadTs}
	log := b.log.With().Str("session_id", a.SessionID).Str("user", user).Str("channel", thread.Channel).Logger()
	tell := func(text string) { b.tellUser(ctx, thread, user, text) }
	mode, ok := blocks.ModeOf(a)
	if !ok {
		tell("Sorry, I do not know that permission mode. Nothing was changed.")
		return
	}
	log = log.With().Str("mode", mode).Logger()
	s, err := b.st.GetSession(ctx, a.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		tell("This session no longer exists. Nothing was changed.")
		return
	}
	if err != nil {
		log.Error().Err(err).Msg("mode: get session")
		tell(sorry("change the permission mode", err))
		return
	}
	if !b.may(ctx, log, user, switchMode, tell) {
		return
	}
	switch {
	case s.API:
		tell("This session runs outside slackgate; its permission mode is its client's. Nothing was changed.")
		return
	case mode == "bypassPermissions":
		var ids []string
		if p := b.Policy(); p != nil {
			ids = p.BypassPermissions()
		}
		ok, err := b.approvers.among(ctx, ids, user)
		if !ok {
			log.Info().Err(err).Msg("bypassPermissions refused: not named in the policy file")
			tell("Only the people the policy file names under modes.bypassPermissions may switch Claude to bypassPermissions. Nothing was changed.")
			return
		}
	}
	if err := b.queue(ctx, store.Input{SessionID: s.ID, Control: store.ControlSetMode, Mode: mode, User: user}); err != nil {
		log.Error().Err(err).Msg("enqueue mode switch")
		tell(sorry("change the permission mode", err))
		return
	}
	log.Info().Msg("mode switch queued")
	tell("Asked Claude to switch to the " + mode + " permission mode; the thread says when it has.")
}
