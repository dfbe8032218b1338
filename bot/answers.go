package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// Remembered answers ("Always answer this way"). An approver remembers an
// answer only together with answering a question card, through the same
// decide pipeline as any answer; the bot signs it as it keeps it. The bot
// answers the same question from a session in the same scope when its
// request_created event arrives, with a decision signed like a person's,
// and puts one line in the thread instead of the card; an answer whose
// signature does not verify is not used (audited; a card asks). The App
// Home lists what is remembered; approvers forget.

// answerScope is the scope of kind that s belongs to; false when s has
// none (a session without a directory has no repository).
func answerScope(s store.Session, kind store.ScopeKind) (store.Scope, bool) {
	switch kind {
	case store.ScopeChannel:
		// A channel's answers answer the sessions slackgate runs there;
		// an API session's questions are its token's word, so it neither
		// meets them nor adds to them (its repository scope is its own).
		if s.Thread.Channel == "" || isAPISession(s.ID) {
			return store.Scope{}, false
		}
		return store.Scope{Kind: kind, Value: s.Thread.Channel}, true
	case store.ScopeRepo:
		if strings.TrimSpace(s.WorkDir) == "" {
			return store.Scope{}, false
		}
		sc := store.Scope{Kind: kind, Value: filepath.Clean(s.WorkDir)}
		if isAPISession(s.ID) {
			// The directory is the client's word: it meets only answers
			// remembered for sessions of the same token.
			sc.Token, _, _ = strings.Cut(strings.TrimPrefix(s.ID, apiSessionPrefix), ".")
		}
		return sc, true
	}
	return store.Scope{}, false
}

// remember keeps the answer d gave r for the scope the approver chose,
// and tells them what it means (or why nothing was remembered). It runs
// after d settled r: the answer went to Claude whatever happens here.
func (p *decision) remember(ctx context.Context, r store.Request, d store.Decision) {
	if p.scope == "" || r.Kind != store.KindQuestion {
		return
	}
	if d.Outcome != store.OutcomeAllow || len(d.Answers) == 0 {
		p.tell(ctx, "Skipping a question is not remembered; the next time it comes, a card asks again.")
		return
	}
	s, err := p.c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		p.log.Error().Err(err).Msg("remember answer: get session")
		p.tell(ctx, notRemembered(err))
		return
	}
	scope, ok := answerScope(s, p.scope)
	fp, qs, ferr := store.QuestionFingerprint(r.ToolName, r.Input)
	if !ok || ferr != nil {
		p.tell(ctx, "Your answer was sent, but there is nothing to remember it for (this session has no repository, a session of the approval API has no channel's answers, or the question has no form).")
		return
	}
	a := store.Standing{Kind: store.StandingAnswer,
		ID: "ans-" + uuid.NewString(), Scope: scope, Fingerprint: fp, Tool: r.ToolName, Questions: qs, Answers: d.Answers,
		By: d.By, ByName: d.ByName, Channel: s.Thread.Channel, RequestID: r.ID, SessionID: r.SessionID, At: d.At,
	}
	err = store.SignStanding(p.c.key, &a)
	if err == nil {
		a, err = p.c.st.Keep(ctx, a)
	}
	switch {
	case errors.Is(err, store.ErrInvalid):
		p.log.Info().Err(err).Msg("answer not remembered")
		p.tell(ctx, "Your answer was sent, but only an answer to every question can be remembered.")
		return
	case err != nil:
		p.log.Error().Err(err).Msg("remember answer")
		p.tell(ctx, notRemembered(err))
		return
	}
	p.log.Info().Str("answer_id", a.ID).Str("scope", scope.Key()).Msg("answer remembered")
	p.reply(ctx, func(ctx context.Context) {
		p.c.ephemerals.postMsg(ctx, p.card.Channel, p.threadTS, p.user, blocks.Remembered(a))
	})
}

// notRemembered tells an approver their answer went to Claude but was not
// remembered, because the store failed with err.
func notRemembered(err error) string {
	_, reason := storeFailure(err)
	return "Your answer was sent, but it could not be remembered (" + reason + ")."
}

// answerFor is the remembered answer to r, a question of session s, in
// the session's repository or, failing that, its channel, that may
// answer it now: not forgotten, it verifies, and who remembered it is
// still an approver (bot/decide answers in their name). false means the
// card is to be posted as usual (no answer, or anything in the way, which
// is logged).
func (b *Bot) answerFor(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) (store.Standing, bool) {
	if r.Kind != store.KindQuestion || !r.Pending() {
		return store.Standing{}, false
	}
	fp, _, err := store.QuestionFingerprint(r.ToolName, r.Input)
	if err != nil {
		return store.Standing{}, false
	}
	for _, kind := range []store.ScopeKind{store.ScopeRepo, store.ScopeChannel} {
		scope, ok := answerScope(s, kind)
		if !ok {
			continue
		}
		a, err := b.st.LookupAnswer(ctx, scope, fp)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			log.Warn().Err(err).Msg("look up remembered answers; posting the card")
			return a, false
		}
		log = log.With().Str("answer_id", a.ID).Logger()
		forgotten, ok := b.graves.buried(ctx, log, store.StandingAnswer) // read once an answer is found
		if !ok {
			return store.Standing{}, false
		}
		if forgotten(a.ID) {
			log.Warn().Msg("remembered answer not used: it was forgotten (its record was written back)")
			continue
		}
		if err := store.VerifyStanding(b.cfg.SigningKey.Public().(ed25519.PublicKey), a); err != nil {
			b.refuseAnswer(ctx, log, r, a, err)
			continue
		}
		if ok, err := b.approvers.allowed(ctx, a.By); !ok || err != nil {
			log.Info().Err(err).Str("by", a.By).Msg("remembered answer not used: who remembered it is not an approver (now)")
			continue
		}
		return a, true
	}
	return store.Standing{}, false
}

// refuseAnswer logs and audits a remembered answer that did not verify
// (err): remembered before answers were signed, or written into the store
// by someone without a bot's key. It counts as no answer: a card asks.
func (b *Bot) refuseAnswer(ctx context.Context, log zerolog.Logger, r store.Request, a store.Standing, err error) {
	log.Error().Err(err).Str("claimed_by", a.By).Msg("remembered answer not used: it does not verify")
	why := "it does not verify: " + err.Error()
	if errors.Is(err, store.ErrUnsigned) {
		why = "it is not signed (remembered before slackgate signed answers, or written into the store directly); remember it again"
	}
	entry := store.AuditEntry{Action: store.AuditAnswerRefused, AnswerID: bounded(a.ID, 200), RequestID: r.ID, SessionID: r.SessionID,
		Kind: r.Kind, Tool: r.ToolName, By: bounded(a.By, 200), ByName: bounded(a.ByName, 200), At: b.clock.Now(), Message: bounded(why, 2000)}
	if err := b.st.AppendAudit(ctx, entry); err != nil {
		log.Error().Err(err).Msg("auditing a refused remembered answer")
	}
}

// bounded cuts what a record that did not verify says of itself to at
// most n bytes (on a rune boundary) before it reaches the audit trail.
func bounded(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// onHomeOpened publishes the App Home tab for the person who opened it.
func (b *Bot) onHomeOpened(ctx context.Context, user, tab string) {
	if user == "" || (tab != "" && tab != "home") {
		return
	}
	if !b.teams.check(ctx, b.log.With().Str("user", user).Logger(), actor{user: user}, func(m string) { b.teams.closedHome(ctx, user, m) }) {
		return
	}
	b.homes.viewed(user)
	b.homes.show(ctx, user)
}

// publishHome shows user the remembered answers, with Forget buttons when
// they are an approver, and notice first.
func (b *Bot) publishHome(ctx context.Context, user, notice string) {
	log := b.log.With().Str("user", user).Logger()
	if notice == "" {
		notice = b.homes.noteOf(user, b.clock.Now())
	}
	canForget, err := b.approvers.allowed(ctx, user)
	if err != nil {
		log.Warn().Err(err).Msg("home: check approvers")
		notice = strings.TrimSpace(notice + "\nI could not check whether you may forget answers, so no Forget buttons are shown.")
	}
	answers := b.listed(ctx, log, store.StandingAnswer, "The remembered answers", &notice)
	grants := b.listed(ctx, log, store.StandingGrant, "The rules you allowed", &notice)
	view := blocks.HomeView(answers, blocks.HomeOptions{CanForget: canForget, Notice: notice, Grants: grants,
		Waiting: b.homes.waitingFor(ctx, log, user)})
	if _, err := b.api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: user, View: view}); err != nil {
		log.Error().Err(err).Msg("views.publish")
	}
}

// listed are the standing rules of kind the App Home lists: those that
// still apply (live, not forgotten), newest first. When they cannot be
// read, notice says so, naming them as what.
func (b *Bot) listed(ctx context.Context, log zerolog.Logger, kind store.StandingKind, what string, notice *string) []store.Standing {
	all, err := b.st.Kept(ctx, kind)
	if err != nil {
		log.Error().Err(err).Msg("home: list " + string(kind) + "s")
		_, reason := storeFailure(err)
		*notice = strings.TrimSpace(*notice + "\n⚠️ " + what + " could not be read (" + reason + "). Open the tab again later.")
		return nil
	}
	forgotten, ok := b.graves.buried(ctx, log, kind)
	if !ok {
		forgotten = func(string) bool { return false } // listed, not used: deciding checks again
	}
	now := b.clock.Now()
	return slices.DeleteFunc(all, func(s store.Standing) bool { return !s.Live(now) || forgotten(s.ID) })
}

// forgetting is what forgetting each kind of standing rule from the App
// Home says: approvers only.
var forgetting = map[store.StandingKind]struct {
	guard guarded
	what  string
	again func(store.Scope) string // what forgetting one from scope means
}{
	store.StandingAnswer: {
		guard: guarded{verb: "forget remembered answers", can: "forget remembered answers", refused: "forget by a non-approver refused"},
		what:  "answer",
		again: func(sc store.Scope) string {
			return "the next time that question comes " + blocks.ScopeWords(sc) + ", a card asks a person again"
		},
	},
	store.StandingGrant: {
		guard: guarded{verb: "forget allowed rules", can: "forget allowed rules", refused: "forget of a grant by a non-approver refused"},
		what:  "rule",
		again: func(store.Scope) string { return "requests it allowed get a card again" },
	},
}

// onForgetClick forgets a grant or a remembered answer from the App Home,
// for an approver, and shows the tab again saying what happened.
func (b *Bot) onForgetClick(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	user, kind := cb.User.ID, a.Forget
	say, ok := forgetting[kind]
	if !ok {
		return
	}
	log := b.log.With().Str("user", user).Str(string(kind)+"_id", a.StandingID).Logger()
	var notice string
	if !b.may(ctx, log, user, say.guard, func(text string) { notice = text }) {
		b.homes.tell(ctx, user, notice)
		return
	}
	who := who(ctx, b.api, cb)
	if err := b.graves.bury(ctx, kind, a.StandingID, who); err != nil {
		log.Error().Err(err).Msg("bury " + string(kind))
		b.homes.tell(ctx, user, sorry("forget that "+say.what, err))
		return
	}
	gone, err := b.st.Forget(ctx, kind, a.StandingID, who.ID, who.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		notice = "That " + say.what + " was forgotten already."
	case err != nil:
		log.Error().Err(err).Msg("forget " + string(kind))
		notice = sorry("forget that "+say.what, err)
	default:
		log.Info().Str("scope", gone.Scope.Key()).Msg(string(kind) + " forgotten")
		notice = "✅ Forgotten: " + say.again(gone.Scope) + "."
	}
	b.homes.tell(ctx, user, notice)
}
