package bot

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// modesOffered are the permission modes s's status line offers: none for
// an approval API session (no worker runs it), bypassPermissions only when
// the policy file names who may pick it (modes.bypassPermissions), and a
// mode that skips prompts only where no deny rule, nor an ask rule of
// several people, could apply to what it runs without asking (modeBlocker).
func (b *Bot) modesOffered(s store.Session) []string {
	if s.API {
		return nil
	}
	pol := b.Policy()
	modes := []string{"default", "plan"}
	if modeBlocker(pol, s, "acceptEdits") == nil {
		modes = []string{"default", "acceptEdits", "plan"}
	}
	if pol != nil && len(pol.BypassPermissions()) > 0 && modeBlocker(pol, s, "bypassPermissions") == nil {
		modes = append(modes, "bypassPermissions")
	}
	return modes
}

// A mode that skips prompts (acceptEdits, bypassPermissions) lets what it
// covers run with no card, so the team policy never sees those requests:
// one person's pick would void the policy's deny rules and its rules that
// ask others, or several people. So a mode is picked only where no rule
// of the policy could apply to what it runs without asking
// (policy.ModeWidens), or where each such rule is an ask whose approvers
// and count the picker alone satisfies: one person, among its approvers,
// not the session's own under not_self.

// modeBlocker is the first rule that keeps anyone from switching s to
// mode: a deny rule, or an ask rule of more than one person; nil when
// none does.
func modeBlocker(pol *policy.Policy, s store.Session, mode string) *policy.Rule {
	for _, r := range pol.ModeWidens(mode, scopeOf(s, nil)) {
		if r.Action == policy.Deny || r.Ask.Count > 1 {
			return r
		}
	}
	return nil
}

// modeRefusal says why user may not switch s to mode under the policy;
// "" when they may.
func (b *Bot) modeRefusal(ctx context.Context, s store.Session, mode, user string) string {
	pol := b.Policy()
	does := "what " + mode + " runs without asking"
	if r := modeBlocker(pol, s, mode); r != nil {
		if r.Action == policy.Deny {
			return "The team policy's rule *" + r.Name + "* denies some of " + does + ", so Claude is not switched to it. Nothing was changed."
		}
		return "The team policy's rule *" + r.Name + "* needs " + plural(r.Ask.Count, "approval") + " for some of " + does +
			", which one person's switch would skip, so Claude is not switched to it. Nothing was changed."
	}
	for _, r := range pol.ModeWidens(mode, scopeOf(s, nil)) {
		if selves, known := b.people.Selves(s); r.Ask.NotSelf && (!known || slices.Contains(selves, user)) {
			return "The team policy's rule *" + r.Name + "* never lets this session's own people approve some of " + does +
				", so you cannot switch it to " + mode + ". Nothing was changed."
		}
		if r.Ask.Approvers == nil {
			continue // APPROVERS: switchMode checked already
		}
		if ok, err := b.approvers.among(ctx, r.Ask.Approvers, user); !ok || err != nil {
			return "Only " + b.people.Describe(r.Ask.Approvers) + " may approve some of " + does + " (the team policy's rule *" +
				r.Name + "*), so only they may switch Claude to " + mode + ". Nothing was changed."
		}
	}
	return ""
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
	tell := func(text string) { b.ephemerals.tell(ctx, thread, user, text) }
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
	if why := b.modeRefusal(ctx, s, mode, user); why != "" {
		log.Info().Msg("mode switch refused: the team policy has rules the mode would skip")
		tell(why)
		return
	}
	if s.Process == "" {
		tell("Claude is not running in this session now, so there is nothing to switch. Send a message, then pick the mode while it runs. Nothing was changed.")
		return
	}
	// Signed for the process running now, which alone takes it.
	if err := b.inputs.queue(ctx, store.Input{SessionID: s.ID, Control: store.ControlSetMode, Mode: mode, User: user, Process: s.Process}); err != nil {
		log.Error().Err(err).Msg("enqueue mode switch")
		tell(sorry("change the permission mode", err))
		return
	}
	log.Info().Msg("mode switch queued")
	tell("Asked Claude to switch to the " + mode + " permission mode; the thread says when it has.")
}
