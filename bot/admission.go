package bot

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// admission is every check in front of a new session or a message for
// one, given only what those checks read: the limits and places of
// Config, two counts in the store, and who may do what (Bot.may, as a
// func).
type admission struct {
	st              admissionStore
	may             func(ctx context.Context, log zerolog.Logger, user string, g guarded, tell func(string)) bool
	allowDMs        bool
	allowedChannels []string
	maxSessions     int // MAX_SESSIONS_PER_USER (0: no bound)
	maxQueued       int // MAX_QUEUED_INPUTS (0: no bound)
	maxPrompt       int // MAX_PROMPT_BYTES (0: no bound)
}

// admissionStore is what the checks count in the store.
type admissionStore interface {
	ActiveSessionsBy(ctx context.Context, user string) (int, error)
	QueuedInputs(ctx context.Context, sessionID string) (int, error)
}

// newAdmission takes cfg's limits and places; may is who may do what.
func newAdmission(cfg Config, st admissionStore, may func(ctx context.Context, log zerolog.Logger, user string, g guarded, tell func(string)) bool) *admission {
	return &admission{st: st, may: may, allowDMs: cfg.AllowDMs, allowedChannels: cfg.AllowedChannels,
		maxSessions: cfg.MaxSessionsPerUser, maxQueued: cfg.MaxQueuedInputs, maxPrompt: cfg.MaxPromptBytes}
}

// mayStart is every check in front of a new session: the prompt's size,
// where it was asked (DMs, ALLOWED_CHANNELS), who asks (STARTERS) and how
// many sessions they already have. A refused person is told why; nothing is
// created.
func (a *admission) mayStart(ctx context.Context, log zerolog.Logger, channel, user, text string, tell func(string)) bool {
	if !a.promptFits(log, text, tell) {
		return false
	}
	if isDM(channel) && !a.allowDMs {
		log.Info().Msg("direct message refused: ALLOW_DMS is off")
		tell(dmsOff)
		return false
	}
	if !isDM(channel) && len(a.allowedChannels) > 0 && !slices.Contains(a.allowedChannels, channel) {
		log.Info().Msg("start refused: channel not in ALLOWED_CHANNELS")
		tell("Claude sessions cannot be started in this channel (it is not in ALLOWED_CHANNELS). Nothing was started.")
		return false
	}
	if !a.may(ctx, log, user, startSession, tell) {
		return false
	}
	return a.underSessionQuota(ctx, log, user, tell)
}

// dmsOff is what a direct message gets while ALLOW_DMS is off.
const dmsOff = "Direct messages to me are turned off in this workspace (ALLOW_DMS), so nothing was started. Mention me in a channel instead."

// underSessionQuota reports whether user may have one more active session.
// The count comes from the store, so every bot replica sees the same one;
// a store that cannot count refuses, rather than let a person past it. The
// caller holds the user's stripe until the session exists.
func (a *admission) underSessionQuota(ctx context.Context, log zerolog.Logger, user string, tell func(string)) bool {
	limit := a.maxSessions
	if limit == 0 {
		return true
	}
	n, err := a.st.ActiveSessionsBy(ctx, user)
	if err != nil {
		log.Error().Err(err).Msg("count the user's active sessions")
		tell(sorry("start a session", err))
		return false
	}
	if n >= limit {
		log.Info().Int("active", n).Int("limit", limit).Msg("start refused: MAX_SESSIONS_PER_USER")
		tell(fmt.Sprintf("You already have %d Claude sessions queued or running, the most one person may have (MAX_SESSIONS_PER_USER=%d). Nothing was started: wait for one to finish or stop one, then try again.", n, limit))
		return false
	}
	return true
}

// mayQueue is every check in front of a message for an existing session:
// who sends it (the starter or an approver), its size and the session's
// backlog. A refused person is told why; nothing is queued.
func (a *admission) mayQueue(ctx context.Context, log zerolog.Logger, s store.Session, user, text string, tell func(string)) bool {
	if !a.may(ctx, log, user, replyTo(s), tell) || !a.promptFits(log, text, tell) {
		return false
	}
	limit := a.maxQueued
	if limit == 0 {
		return true
	}
	// The caller holds the session's stripe until it has queued the
	// message; replicas racing past the count add at most one each.
	n, err := a.st.QueuedInputs(ctx, s.ID)
	if err != nil {
		log.Error().Err(err).Msg("count queued inputs")
		tell(sorry("pass your message to Claude", err))
		return false
	}
	if n >= limit {
		log.Info().Int("queued", n).Int("limit", limit).Msg("follow-up refused: MAX_QUEUED_INPUTS")
		tell(fmt.Sprintf("Claude already has %d messages waiting in this thread (MAX_QUEUED_INPUTS=%d). Yours was not queued: send it again once Claude has caught up.", n, limit))
		return false
	}
	return true
}

// promptFits reports whether text is within MAX_PROMPT_BYTES.
func (a *admission) promptFits(log zerolog.Logger, text string, tell func(string)) bool {
	limit := a.maxPrompt
	if limit == 0 || len(text) <= limit {
		return true
	}
	log.Info().Int("bytes", len(text)).Int("limit", limit).Msg("message refused: MAX_PROMPT_BYTES")
	tell(fmt.Sprintf("Your message is %d bytes; Claude takes at most %d bytes per message (MAX_PROMPT_BYTES). Nothing was sent: shorten it or split it.", len(text), limit))
	return false
}

// stripes serialise, within this bot, a check against a bound with the
// write it admits (a count of a person's sessions and the session it
// creates; a session's backlog and the message it queues), so requests
// handled at the same moment cannot all pass one count. Bot replicas can
// still each pass one, which a bound against floods tolerates. Keys share
// one of a fixed number of locks: unrelated keys rarely wait on each other,
// and memory stays bounded.
type stripes [64]sync.Mutex

// lock takes key's lock and returns its unlock.
func (s *stripes) lock(key string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	m := &s[h.Sum32()%uint32(len(s))]
	m.Lock()
	return m.Unlock
}
