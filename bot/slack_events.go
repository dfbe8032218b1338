package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// slackEvents is what people say to the bot in Slack: a mention, a DM, a
// reply in a session's thread or /claude starts or continues a session,
// once each checks (the team gate, admission) have passed. Socket Mode
// and HTTP mode hand it the same payloads after their ack.
type slackEvents struct {
	st    sessionStore
	log   zerolog.Logger
	clock store.Clock
	key   ed25519.PrivateKey // signs each new session
	out   *outbox.Outbox
	work  *tasks

	teams      *teamGate
	admission  *admission
	ephemerals *ephemerals
	inputs     *inputs
	stops      *stopper
	status     *statusLines
	// onHomeOpened publishes a person's App Home; elsewhere answers a
	// reply in a thread an approval API client owns (api.go).
	onHomeOpened func(ctx context.Context, user, tab string)
	elsewhere    func(ctx context.Context, s store.Session, user string) bool

	// What Config says of new sessions.
	allowDMs              bool
	workDir               func(channel string) string
	permissionMode, model string

	// starting and queueing serialise the session-count and backlog
	// checks with the writes they admit (see stripes); two sets, so a
	// start that turns into a follow-up never waits on itself.
	starting, queueing stripes
	// botUser is the bot's own user id, from auth.test at the start of
	// Run, before any event is handled.
	botUser string
}

// sessionStore is what starting and continuing sessions reads and writes
// in the store, with the Events API deliveries seen once (dedup.go).
type sessionStore interface {
	CreateSession(ctx context.Context, s store.Session) error
	SessionByThread(ctx context.Context, thread store.MessageRef) (store.Session, error)
	FirstSeen(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// newSlackEvents takes cfg's words on new sessions; the rest wireParts
// sets.
func newSlackEvents(cfg Config, st sessionStore, log zerolog.Logger) *slackEvents {
	return &slackEvents{st: st, log: log, clock: cfg.Clock, key: cfg.SigningKey, allowDMs: cfg.AllowDMs,
		workDir: cfg.workDir, permissionMode: cfg.PermissionMode, model: cfg.Model}
}

// onEvent handles an Events API event after the transport acked it, off
// the transport's path: telling a redelivery apart takes a store call.
func (se *slackEvents) onEvent(ev slackevents.EventsAPIEvent) {
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent, *slackevents.MessageEvent:
		se.work.Go(func(ctx context.Context) { se.dispatch(ctx, ev) })
	case *slackevents.AppHomeOpenedEvent:
		// Publishing the tab twice shows the same: no redelivery check.
		se.work.Go(func(ctx context.Context) { se.onHomeOpened(ctx, e.User, e.Tab) })
	}
}

// dispatch runs a mention or message unless its delivery was seen
// before, here or on another replica.
func (se *slackEvents) dispatch(ctx context.Context, ev slackevents.EventsAPIEvent) {
	if !se.firstDelivery(ctx, ev) {
		return
	}
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		se.onMention(ctx, e)
	case *slackevents.MessageEvent:
		se.onMessage(ctx, e)
	}
}

// onMention: an @mention starts a session in its thread (the mention's
// thread when it is a reply, else the mention itself), or continues the
// session already living there.
func (se *slackEvents) onMention(ctx context.Context, e *slackevents.AppMentionEvent) {
	if e.BotID != "" || e.User == "" || e.User == se.botUser {
		return
	}
	thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
	if thread.TS == "" {
		thread.TS = e.TimeStamp
	}
	if !se.teams.inThread(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
		return
	}
	se.startOrContinue(ctx, thread, e.User, stripMention(se.botUser, e.Text))
}

// onMessage: a DM to the bot starts or continues a session; a person's reply
// in a session's thread continues it. Bot messages, subtypes (edits, joins,
// …) and thread replies that mention the bot (app_mention handles those)
// are ignored, so nothing runs twice.
func (se *slackEvents) onMessage(ctx context.Context, e *slackevents.MessageEvent) {
	if !personSubtypes[e.SubType] || e.BotID != "" || e.User == "" || e.User == se.botUser {
		return
	}
	if e.ChannelType == "im" {
		if !se.allowDMs {
			se.log.Info().Str("user", e.User).Msg("direct message refused: ALLOW_DMS is off")
			se.ephemerals.post(ctx, e.Channel, e.ThreadTimeStamp, e.User, dmsOff)
			return
		}
		thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
		if thread.TS == "" {
			thread.TS = e.TimeStamp
		}
		if !se.teams.inThread(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
			return
		}
		se.startOrContinue(ctx, thread, e.User, stripMention(se.botUser, e.Text))
		return
	}
	if e.ThreadTimeStamp == "" || mentionsBot(se.botUser, e.Text) {
		return
	}
	thread := store.MessageRef{Channel: e.Channel, TS: e.ThreadTimeStamp}
	s, err := se.st.SessionByThread(ctx, thread)
	if errors.Is(err, store.ErrNotFound) {
		return // an ordinary conversation, not ours
	}
	if err != nil {
		se.log.Error().Err(err).Str("channel", thread.Channel).Msg("look up thread session")
		se.ephemerals.tell(ctx, thread, e.User, sorry("pass your message to Claude", err))
		return
	}
	if !se.teams.inThread(ctx, thread, actor{user: e.User, team: e.UserTeam}) {
		return
	}
	se.followUp(ctx, s, e.User, strings.TrimSpace(e.Text))
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
func (se *slackEvents) onCommand(cmd slack.SlashCommand) any {
	prompt := strings.TrimSpace(cmd.Text)
	if prompt == "" {
		return map[string]string{"response_type": "ephemeral", "text": "Usage: `" + blocks.Escape(cmd.Command) + " &lt;what Claude should do&gt;` starts a Claude session in this channel."}
	}
	se.work.Go(func(ctx context.Context) {
		log := se.log.With().Str("channel", cmd.ChannelID).Str("user", cmd.UserID).Logger()
		tell := func(text string) { se.ephemerals.post(ctx, cmd.ChannelID, "", cmd.UserID, text) }
		if !se.teams.check(ctx, log, actor{user: cmd.UserID, team: cmd.TeamID}, tell) {
			return
		}
		defer se.starting.lock(cmd.UserID)()
		if !se.admission.mayStart(ctx, log, cmd.ChannelID, cmd.UserID, prompt, tell) {
			return
		}
		text := fmt.Sprintf("<@%s> started a Claude session: %s", cmd.UserID, blocks.Escape(prompt))
		ts, err := se.out.Post(log, outbox.LaneResult, cmd.ChannelID, "", outbox.Msg{Text: text}).Outcome()
		if err != nil {
			log.Error().Err(err).Msg("post session start message")
			se.ephemerals.post(ctx, cmd.ChannelID, "", cmd.UserID, "Sorry, I could not start the session: I cannot post in this channel. Is the app invited here?")
			return
		}
		se.createSession(ctx, log, store.MessageRef{Channel: cmd.ChannelID, TS: ts}, cmd.UserID, prompt)
	})
	return nil
}

// startOrContinue creates the thread's session and enqueues the prompt, or
// enqueues it as a follow-up when the thread already has a session.
func (se *slackEvents) startOrContinue(ctx context.Context, thread store.MessageRef, user, text string) {
	log := se.log.With().Str("channel", thread.Channel).Str("user", user).Logger()
	if text == "" {
		se.ephemerals.tell(ctx, thread, user, "Tell me what Claude should do, e.g. `fix the failing test`.")
		return
	}
	s, err := se.st.SessionByThread(ctx, thread)
	if err == nil {
		se.followUp(ctx, s, user, text)
		return
	}
	if !errors.Is(err, store.ErrNotFound) {
		log.Error().Err(err).Msg("look up thread session")
		se.ephemerals.tell(ctx, thread, user, sorry("start a session", err))
		return
	}
	defer se.starting.lock(user)()
	if !se.admission.mayStart(ctx, log, thread.Channel, user, text, func(m string) { se.ephemerals.tell(ctx, thread, user, m) }) {
		return
	}
	se.createSession(ctx, log, thread, user, text)
}

// createSession records a new session in thread and enqueues its first
// prompt; the checks of mayStart have passed.
func (se *slackEvents) createSession(ctx context.Context, log zerolog.Logger, thread store.MessageRef, user, text string) {
	now := se.clock.Now()
	s := store.Session{
		ID:             uuid.NewString(),
		Thread:         thread,
		WorkDir:        se.workDir(thread.Channel),
		StartedBy:      user,
		PermissionMode: se.permissionMode,
		Model:          se.model,
		State:          store.SessionQueued,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	// Signed, so a worker runs it as recorded here and nothing written
	// into the store by anyone else.
	if err := store.SignSession(se.key, &s); err != nil {
		log.Error().Err(err).Msg("sign session")
		se.ephemerals.tell(ctx, thread, user, "Sorry, I could not start a session (it could not be signed). Please tell the operator.")
		return
	}
	if err := se.st.CreateSession(ctx, s); err != nil {
		if errors.Is(err, store.ErrExists) {
			// Another delivery (or replica) created it a moment ago.
			if s2, err2 := se.st.SessionByThread(ctx, thread); err2 == nil {
				se.followUp(ctx, s2, user, text)
				return
			}
		}
		log.Error().Err(err).Msg("create session")
		se.ephemerals.tell(ctx, thread, user, sorry("start a session", err))
		return
	}
	log = log.With().Str("session_id", s.ID).Logger()
	log.Info().Str("workdir", s.WorkDir).Msg("session created")
	if err := se.inputs.queue(ctx, store.Input{SessionID: s.ID, Text: text, User: user, At: now}); err != nil {
		log.Error().Err(err).Msg("enqueue first prompt")
		se.ephemerals.tell(ctx, thread, user, "Sorry, the session was created but your prompt could not be queued. Please send it again in this thread.")
		return
	}
	se.status.refresh(ctx, s.ID, blocks.PhaseQueued)
}

// followUp queues a message for an existing session; the worker resumes the
// Claude session if its process has ended. A reply that is just "stop"
// interrupts Claude's turn instead (or is refused), and never reaches
// Claude as a prompt.
func (se *slackEvents) followUp(ctx context.Context, s store.Session, user, text string) {
	if text == "" || se.elsewhere(ctx, s, user) {
		return
	}
	log := se.log.With().Str("session_id", s.ID).Str("channel", s.Thread.Channel).Str("user", user).Logger()
	if isStop(text) {
		se.stops.stop(ctx, log, s, user)
		return
	}
	defer se.queueing.lock(s.ID)()
	if !se.admission.mayQueue(ctx, log, s, user, text, func(m string) { se.ephemerals.tell(ctx, s.Thread, user, m) }) {
		return
	}
	if err := se.inputs.queue(ctx, store.Input{SessionID: s.ID, Text: text, User: user}); err != nil {
		log.Error().Err(err).Msg("enqueue follow-up")
		se.ephemerals.tell(ctx, s.Thread, user, "Sorry, I could not pass your message to Claude. Please try again.")
		return
	}
	log.Debug().Msg("follow-up queued")
}

// inputs signs what people send a session and queues it for the
// session's worker, which delivers only inputs that verify.
type inputs struct {
	st    enqueuer
	key   ed25519.PrivateKey
	clock store.Clock
}

// enqueuer is where inputs wait for a session's worker (Store.Enqueue).
type enqueuer interface {
	Enqueue(ctx context.Context, in store.Input) (store.Input, error)
}

// queue gives in a new id (and, when it has none, the time), signs it and
// queues it.
func (q *inputs) queue(ctx context.Context, in store.Input) error {
	in.ID = uuid.NewString()
	if in.At.IsZero() {
		in.At = q.clock.Now()
	}
	if err := store.SignInput(q.key, &in); err != nil {
		return err
	}
	_, err := q.st.Enqueue(ctx, in)
	return err
}

var mentionRE = regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^>]*)?>`)

// stripMention removes the bot's own mention (botUser's) from a prompt;
// other mentions stay (they may matter to the task).
func stripMention(botUser, text string) string {
	out := mentionRE.ReplaceAllStringFunc(text, func(m string) string {
		if mentionRE.FindStringSubmatch(m)[1] == botUser {
			return ""
		}
		return m
	})
	return strings.TrimSpace(out)
}

// mentionsBot reports whether text mentions botUser.
func mentionsBot(botUser, text string) bool {
	for _, m := range mentionRE.FindAllStringSubmatch(text, -1) {
		if m[1] == botUser {
			return true
		}
	}
	return false
}
