package bot

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// onEvent handles an Events API event after the transport acked it, off
// the transport's path: telling a redelivery apart takes a store call.
func (b *Bot) onEvent(ev slackevents.EventsAPIEvent) {
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent, *slackevents.MessageEvent:
		b.work.Go(func(ctx context.Context) { b.dispatchEvent(ctx, ev) })
	case *slackevents.AppHomeOpenedEvent:
		// Publishing the tab twice shows the same: no redelivery check.
		b.work.Go(func(ctx context.Context) { b.onHomeOpened(ctx, e.User, e.Tab) })
	}
}

// dispatchEvent runs a mention or message unless its delivery was seen
// before, here or on another replica.
func (b *Bot) dispatchEvent(ctx context.Context, ev slackevents.EventsAPIEvent) {
	if !b.firstDelivery(ctx, ev) {
		return
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		b.onMention(ctx, e)
	case *slackevents.MessageEvent:
		b.onMessage(ctx, e)
	}
}

// onMention: an @mention starts a session in its thread (the mention's
// thread when it is a reply, else the mention itself), or continues the
// session already living there.
func (b *Bot) onMention(ctx context.Context, e *slackevents.AppMentionEvent) {
	if e.BotID != "" || e.User == "" || e.User == b.botUserID {
		return
	}
	thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
	if thread.TS == "" {
		thread.TS = e.TimeStamp
	}
	if !b.ofOurTeamIn(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
		return
	}
	b.startOrContinue(ctx, thread, e.User, b.stripMention(e.Text))
}

// onMessage: a DM to the bot starts or continues a session; a person's reply
// in a session's thread continues it. Bot messages, subtypes (edits, joins,
// …) and thread replies that mention the bot (app_mention handles those)
// are ignored, so nothing runs twice.
func (b *Bot) onMessage(ctx context.Context, e *slackevents.MessageEvent) {
	if !personSubtypes[e.SubType] || e.BotID != "" || e.User == "" || e.User == b.botUserID {
		return
	}
	if e.ChannelType == "im" {
		if !b.cfg.AllowDMs {
			b.log.Info().Str("user", e.User).Msg("direct message refused: ALLOW_DMS is off")
			b.ephemeral(ctx, e.Channel, e.ThreadTimeStamp, e.User, dmsOff)
			return
		}
		thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
		if thread.TS == "" {
			thread.TS = e.TimeStamp
		}
		if !b.ofOurTeamIn(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
			return
		}
		b.startOrContinue(ctx, thread, e.User, b.stripMention(e.Text))
		return
	}
	if e.ThreadTimeStamp == "" || b.mentionsBot(e.Text) {
		return
	}
	thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
	s, err := b.st.SessionByThread(ctx, thread)
	if errors.Is(err, store.ErrNotFound) {
		return // an ordinary conversation, not ours
	}
	if err != nil {
		b.log.Error().Err(err).Str("channel", thread.Channel).Msg("look up thread session")
		b.tellUser(ctx, thread, e.User, sorry("pass your message to Claude", err))
		return
	}
	if !b.ofOurTeamIn(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
		return
	}
	b.followUp(ctx, s, e.User, strings.TrimSpace(e.Text))
}

// personSubtypes are the message subtypes that are a person saying
// something new; edits, deletions, joins and the like are not.
var personSubtypes = map[string]bool{
	"":                 true,
	"thread_broadcast": true, // a thread reply also sent to the channel
	"file_share":       true, // a message with a file; its text still counts
}

// onCommand handles `/claude <prompt>`: it acks at once and starts the
// session under a message the bot posts. The returned value is the ack's
// body (an ephemeral usage hint when the prompt is empty).
func (b *Bot) onCommand(cmd slack.SlashCommand) any {
	prompt := strings.TrimSpace(cmd.Text)
	if prompt == "" {
		return map[string]string{"response_type": "ephemeral", "text": "Usage: `" + blocks.Escape(cmd.Command) + " &lt;what Claude should do&gt;` starts a Claude session in this channel."}
	}
	b.work.Go(func(ctx context.Context) {
		log := b.log.With().Str("channel", cmd.ChannelID).Str("user", cmd.UserID).Logger()
		tell := func(text string) { b.ephemeral(ctx, cmd.ChannelID, "", cmd.UserID, text) }
		if !b.ofOurTeam(ctx, log, actor{user: cmd.UserID, team: cmd.TeamID}, tell) {
			return
		}
		defer b.starting.lock(cmd.UserID)()
		if !b.mayStart(ctx, log, cmd.ChannelID, cmd.UserID, prompt, tell) {
			return
		}
		text := fmt.Sprintf("<@%s> started a Claude session: %s", cmd.UserID, blocks.Escape(prompt))
		ts, err := b.out.Post(ctx, log, cmd.ChannelID, "", outMsg{Text: text})
		if err != nil {
			log.Error().Err(err).Msg("post session start message")
			b.ephemeral(ctx, cmd.ChannelID, "", cmd.UserID, "Sorry, I could not start the session: I cannot post in this channel. Is the app invited here?")
			return
		}
		b.createSession(ctx, log, store.MessageRef{Channel: cmd.ChannelID, TS: ts}, cmd.UserID, prompt)
	})
	return nil
}

// startOrContinue creates the thread's session and enqueues the prompt, or
// enqueues it as a follow-up when the thread already has a session.
func (b *Bot) startOrContinue(ctx context.Context, thread store.MessageRef, user, text string) {
	log := b.log.With().Str("channel", thread.Channel).Str("user", user).Logger()
	if text == "" {
		b.tellUser(ctx, thread, user, "Tell me what Claude should do, e.g. `fix the failing test`.")
		return
	}
	s, err := b.st.SessionByThread(ctx, thread)
	if err == nil {
		b.followUp(ctx, s, user, text)
		return
	}
	if !errors.Is(err, store.ErrNotFound) {
		log.Error().Err(err).Msg("look up thread session")
		b.tellUser(ctx, thread, user, sorry("start a session", err))
		return
	}
	defer b.starting.lock(user)()
	if !b.mayStart(ctx, log, thread.Channel, user, text, func(m string) { b.tellUser(ctx, thread, user, m) }) {
		return
	}
	b.createSession(ctx, log, thread, user, text)
}

// createSession records a new session in thread and enqueues its first
// prompt; the checks of mayStart have passed.
func (b *Bot) createSession(ctx context.Context, log zerolog.Logger, thread store.MessageRef, user, text string) {
	now := b.clock.Now()
	s := store.Session{
		ID:             uuid.NewString(),
		Thread:         thread,
		WorkDir:        b.cfg.workDir(thread.Channel),
		StartedBy:      user,
		PermissionMode: b.cfg.PermissionMode,
		Model:          b.cfg.Model,
		State:          store.SessionQueued,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	// Signed, so a worker runs it as recorded here and nothing written
	// into the store by anyone else.
	if err := store.SignSession(b.cfg.SigningKey, &s); err != nil {
		log.Error().Err(err).Msg("sign session")
		b.tellUser(ctx, thread, user, "Sorry, I could not start a session (it could not be signed). Please tell the operator.")
		return
	}
	if err := b.st.CreateSession(ctx, s); err != nil {
		if errors.Is(err, store.ErrExists) {
			// Another delivery (or replica) created it a moment ago.
			if s2, err2 := b.st.SessionByThread(ctx, thread); err2 == nil {
				b.followUp(ctx, s2, user, text)
				return
			}
		}
		log.Error().Err(err).Msg("create session")
		b.tellUser(ctx, thread, user, sorry("start a session", err))
		return
	}
	log = log.With().Str("session_id", s.ID).Logger()
	log.Info().Str("workdir", s.WorkDir).Msg("session created")
	if err := b.queue(ctx, store.Input{SessionID: s.ID, Text: text, User: user, At: now}); err != nil {
		log.Error().Err(err).Msg("enqueue first prompt")
		b.tellUser(ctx, thread, user, "Sorry, the session was created but your prompt could not be queued. Please send it again in this thread.")
		return
	}
	b.refreshStatus(ctx, s.ID, blocks.PhaseQueued)
}

// followUp queues a message for an existing session; the worker resumes the
// Claude session if its process has ended. A reply that is just "stop"
// interrupts Claude's turn instead (or is refused), and never reaches
// Claude as a prompt.
func (b *Bot) followUp(ctx context.Context, s store.Session, user, text string) {
	if text == "" || b.elsewhere(ctx, s, user) {
		return
	}
	log := b.log.With().Str("session_id", s.ID).Str("channel", s.Thread.Channel).Str("user", user).Logger()
	if isStop(text) {
		b.stop(ctx, log, s, user)
		return
	}
	defer b.queueing.lock(s.ID)()
	if !b.mayQueue(ctx, log, s, user, text, func(m string) { b.tellUser(ctx, s.Thread, user, m) }) {
		return
	}
	if err := b.queue(ctx, store.Input{SessionID: s.ID, Text: text, User: user}); err != nil {
		log.Error().Err(err).Msg("enqueue follow-up")
		b.tellUser(ctx, s.Thread, user, "Sorry, I could not pass your message to Claude. Please try again.")
		return
	}
	log.Debug().Msg("follow-up queued")
}

// queue gives in a new id (and, when it has none, the time), signs it and
// queues it for its session's worker, which delivers only inputs that
// verify.
func (b *Bot) queue(ctx context.Context, in store.Input) error {
	in.ID = uuid.NewString()
	if in.At.IsZero() {
		in.At = b.clock.Now()
	}
	if err := store.SignInput(b.cfg.SigningKey, &in); err != nil {
		return err
	}
	_, err := b.st.Enqueue(ctx, in)
	return err
}

var mentionRE = regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^>]*)?>`)

// stripMention removes the bot's own mention from a prompt; other mentions
// stay (they may matter to the task).
func (b *Bot) stripMention(text string) string {
	out := mentionRE.ReplaceAllStringFunc(text, func(m string) string {
		if mentionRE.FindStringSubmatch(m)[1] == b.botUserID {
			return ""
		}
		return m
	})
	return strings.TrimSpace(out)
}

func (b *Bot) mentionsBot(text string) bool {
	for _, m := range mentionRE.FindAllStringSubmatch(text, -1) {
		if m[1] == b.botUserID {
			return true
		}
	}
	return false
}
