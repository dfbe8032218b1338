package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// ReachDefaults say how a request that needs someone other than its
// starter reaches the people who may decide it, where no policy rule says
// otherwise: NotifyChannel gets a copy of each card; NotifyDM sends one to
// each approver by DM; after RemindAfter (0: never) the card's thread and
// every copy get one reminder; after EscalateAfter (0: never) EscalateTo
// (user and user group ids) get a copy and may decide it too.
type ReachDefaults struct {
	NotifyChannel string
	NotifyDM      bool
	RemindAfter   time.Duration
	EscalateAfter time.Duration
	EscalateTo    []string
}

func (d ReachDefaults) validate() error {
	if d.NotifyChannel != "" && !isChannelID(d.NotifyChannel) {
		return fmt.Errorf("%w: NOTIFY_CHANNEL %q is not a Slack channel id (C…, G…)", ErrConfig, d.NotifyChannel)
	}
	if d.RemindAfter < 0 || d.EscalateAfter < 0 {
		return fmt.Errorf("%w: REMIND_AFTER and ESCALATE_AFTER must not be negative", ErrConfig)
	}
	for _, id := range d.EscalateTo {
		if !isApproverID(id) {
			return fmt.Errorf("%w: ESCALATE_TO entry %q is not a Slack user (U…, W…) or user group (S…) id", ErrConfig, id)
		}
	}
	if (d.EscalateAfter > 0) != (len(d.EscalateTo) > 0) {
		return fmt.Errorf("%w: ESCALATE_AFTER and ESCALATE_TO go together: whom to escalate to, and when", ErrConfig)
	}
	return nil
}

// reachPlan is how one request reaches people beyond its card.
type reachPlan struct {
	deciders      []string // user and user group ids who may decide; "*": anyone
	notify        []string // channels, people and user groups that get a copy
	dm            bool     // each decider gets a copy by DM
	remindAfter   time.Duration
	escalateAfter time.Duration
	escalateTo    []string
}

// plan is the plan of a request no policy rule speaks for.
func (d ReachDefaults) plan(approvers People) reachPlan {
	p := reachPlan{dm: d.NotifyDM, remindAfter: d.RemindAfter, escalateAfter: d.EscalateAfter, escalateTo: d.EscalateTo}
	if approvers.Anyone {
		p.deciders = []string{"*"}
	} else {
		p.deciders = approvers.IDs
	}
	if d.NotifyChannel != "" {
		p.notify = []string{d.NotifyChannel}
	}
	return p
}

// reachAsk is what a policy rule's ask: says of reaching people (the
// fields of policy.AskSpec that are reach's); nil and zero: not said.
type reachAsk struct {
	approvers, notify, escalateTo []string
	remindAfter, escalateAfter    time.Duration
}

// with is p as a policy rule's ask: overrides it: each key the rule sets
// replaces the default; a rule's notify: replaces NOTIFY_CHANNEL and
// NOTIFY=dm both, so a rule sends its copies exactly where it says.
func (p reachPlan) with(a reachAsk) reachPlan {
	if a.approvers != nil {
		p.deciders = a.approvers
	}
	if a.notify != nil {
		p.notify, p.dm = a.notify, false
	}
	if a.remindAfter > 0 {
		p.remindAfter = a.remindAfter
	}
	if a.escalateAfter > 0 || len(a.escalateTo) > 0 {
		p.escalateAfter, p.escalateTo = a.escalateAfter, a.escalateTo
	}
	return p
}

// planFor is r's plan: the defaults, as the ask of the policy rule that
// matches r overrides them.
func (b *Bot) planFor(r store.Request, s store.Session) reachPlan {
	p := b.cfg.Reach.plan(b.cfg.Approvers)
	if v := b.verdict(r, s); v.Action == policy.Ask && v.Rule != nil {
		a := v.Ask
		p = p.with(reachAsk{approvers: a.Approvers, notify: a.Notify, escalateTo: a.EscalateTo,
			remindAfter: a.RemindAfter, escalateAfter: a.EscalateAfter})
	}
	return p
}

// reachSteps reports whether a step may ever fall due: a default says
// when, or a policy (whose rules, reloaded, may) is in force.
func (b *Bot) reachSteps() bool {
	return b.cfg.Reach.RemindAfter > 0 || b.cfg.Reach.EscalateAfter > 0 || b.cfg.Policy != nil
}

// people expands ids (users, user groups and "*") to the users they name,
// sorted, and whether "*" was among them. A group Slack does not list is
// an error; the users of the others are still returned.
func (b *Bot) people(ctx context.Context, ids []string) (users []string, anyone bool, err error) {
	seen := map[string]bool{}
	for _, id := range ids {
		switch {
		case id == "*":
			anyone = true
		case strings.HasPrefix(id, "S"):
			m, gerr := b.approvers.members(ctx, id)
			if gerr != nil {
				err = errors.Join(err, gerr)
				continue
			}
			for u := range m {
				seen[u] = true
			}
		default:
			seen[id] = true
		}
	}
	for u := range seen {
		users = append(users, u)
	}
	slices.Sort(users)
	return users, anyone, err
}

// escalatedTo reports whether user may decide r because r was escalated
// to them: they are among its escalate_to, the store says it was
// escalated, and the escalation's time has come by the bot's own clock (a
// store writer who marks a request escalated early gains nothing).
func (b *Bot) escalatedTo(ctx context.Context, log zerolog.Logger, r store.Request, user string) bool {
	if r.Reach.Escalated.IsZero() {
		return false
	}
	s, err := b.st.GetSession(ctx, r.SessionID)
	if err != nil {
		log.Warn().Err(err).Msg("escalation: get session")
		return false
	}
	p := b.planFor(r, s)
	if p.escalateAfter <= 0 || b.clock.Now().Before(r.CreatedAt.Add(p.escalateAfter)) {
		return false
	}
	ok, err := b.approvers.among(ctx, p.escalateTo, user)
	if err != nil && !ok {
		log.Warn().Err(err).Msg("escalation: list escalate_to")
	}
	return ok
}

// reached takes r, whose card was just recorded, where else it must go:
// its copies, and the App Homes of who may decide it.
func (b *Bot) reached(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	select {
	case b.reachWake <- struct{}{}: // its steps fall due from now
	default:
	}
	b.announce(ctx, log, r, s)
	b.touchHomesOf(ctx, log, r, s)
}

// settled shows r's outcome on its copies and takes it off the App Homes.
func (b *Bot) settled(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	b.showReach(ctx, log, r.ID)
	b.touchHomesOf(ctx, log, r, s)
}

// maxCopies bounds the copies one request gets (a notify channel and a
// large user group's DMs).
const maxCopies = 50

// announceClaimTTL outlasts every redelivery and reconciler pass that can
// record a card, so a request is announced once.
const announceClaimTTL = 7 * 24 * time.Hour

// announce posts r's copies once its card is recorded: to the plan's
// notify channels and people, and by DM to each decider when the plan says
// so, never to the starter, and only when someone other than the starter
// may decide it. Store: FirstSeen("announce:"+id), so one bot announces.
func (b *Bot) announce(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	p := b.planFor(r, s)
	if len(p.notify) == 0 && !p.dm {
		return
	}
	deciders, anyone, err := b.people(ctx, p.deciders)
	if err != nil {
		log.Warn().Err(err).Msg("announce: list who may decide")
	}
	if !anyone && err == nil && !slices.ContainsFunc(deciders, func(u string) bool { return u != s.StartedBy }) {
		return // only the starter may decide: their thread is where they look
	}
	targets := p.notify
	if p.dm {
		targets = append(slices.Clone(targets), deciders...)
	}
	first, err := b.st.FirstSeen(ctx, "announce:"+r.ID, announceClaimTTL)
	if err != nil || !first {
		if err != nil {
			log.Warn().Err(err).Msg("announce: claim")
		}
		return
	}
	b.postCopies(ctx, log, r, s, targets, false)
}

// postCopies posts a copy of r to each target (a channel; a user gets it
// by DM; a user group's members each by DM), never to s's starter, and
// records each in the store (AddCopy). A copy posted after r was settled
// is shown settled at once.
func (b *Bot) postCopies(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, targets []string, escalated bool) {
	var chans []string
	var users []string
	for _, t := range targets {
		if isChannelID(t) {
			chans = append(chans, t)
		} else {
			users = append(users, t)
		}
	}
	people, _, err := b.people(ctx, users)
	if err != nil {
		log.Warn().Err(err).Msg("announce: list user groups; their members get no copy")
	}
	for _, u := range people {
		if u == s.StartedBy {
			continue
		}
		ch, err := b.dmChannel(ctx, u)
		if err != nil {
			log.Warn().Err(err).Str("to", u).Msg("announce: open a DM")
			continue
		}
		chans = append(chans, ch)
	}
	slices.Sort(chans)
	chans = slices.Compact(chans)
	if len(chans) > maxCopies {
		log.Warn().Int("targets", len(chans)).Int("max", maxCopies).Msg("announce: too many copies; the first are sent")
		chans = chans[:maxCopies]
	}
	msg := toMsg(blocks.Announcement(b.shown(r), s, blocks.ReachOptions{CardLink: b.cardLink(r.Card, s), Escalated: escalated}))
	results := make([]<-chan opResult, len(chans))
	for i, ch := range chans {
		results[i] = b.out.post(log, laneReach, ch, "", msg)
	}
	for i, res := range results {
		ts, err := wait(ctx, res)
		if err != nil {
			log.Warn().Err(err).Str("to", chans[i]).Msg("announce: copy not posted")
			continue
		}
		ref := store.MessageRef{Channel: chans[i], TS: ts}
		pending, err := b.st.AddCopy(context.WithoutCancel(ctx), r.ID, ref)
		if err != nil {
			log.Error().Err(err).Str("to", chans[i]).Msg("announce: record the copy")
			continue
		}
		if !pending {
			b.showReach(ctx, log, r.ID)
		}
	}
	log.Info().Int("copies", len(chans)).Bool("escalated", escalated).Msg("request announced")
}

// dmChannel is the bot's DM channel with user (conversations.open).
func (b *Bot) dmChannel(ctx context.Context, user string) (string, error) {
	if ch, ok := b.dms.Load(user); ok {
		return ch.(string), nil
	}
	c, _, _, err := b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
	if err != nil {
		return "", fmt.Errorf("bot: conversations.open %s: %w", user, err)
	}
	b.dms.Store(user, c.ID)
	return c.ID, nil
}

// cardLink is the permalink of a card in s's thread ("" when unknown).
func (b *Bot) cardLink(card store.MessageRef, s store.Session) string {
	link, _ := blocks.Permalink(b.teamURL, card, s.Thread.TS)
	return link
}

// showCopies queues edits of r's copies to show r as given. Failures
// are logged: a click on a stale copy says who decided and refreshes it.
func (b *Bot) showCopies(log zerolog.Logger, r store.Request, s store.Session) {
	msg := toMsg(blocks.Announcement(b.shown(r), s, blocks.ReachOptions{CardLink: b.cardLink(r.Card, s)}))
	for _, ref := range r.Reach.Copies {
		b.out.enqueue(&op{kind: opUpdate, lane: laneReach, channel: ref.Channel, ts: ref.TS, msg: msg, log: log}, false)
	}
}

// runReach takes the reminders and escalations that are due, at start, when
// this bot records a card, when the next step falls due, and every
// ReconcileInterval (which finds the cards of other replicas), until ctx
// ends (nil).
func (b *Bot) runReach(ctx context.Context) error {
	for {
		next := b.reachDue(ctx)
		now := b.clock.Now()
		wait := b.cfg.ReconcileInterval
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		timer := b.clock.NewTimer(wait)
		if b.reachArmed != nil {
			b.reachArmed(now.Add(wait))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		case <-b.reachWake:
			timer.Stop()
		}
	}
}

// reachDue reminds and escalates the pending requests whose time has come
// and returns when the next one falls due (zero: none). Store: ListPending,
// GetSession per session, MarkReach per step (one replica takes it).
// Errors are logged; the next pass tries again.
func (b *Bot) reachDue(ctx context.Context) time.Time {
	pending, err := b.st.ListPending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn().Err(err).Msg("reach: list pending requests")
		}
		return time.Time{}
	}
	sessions := map[string]store.Session{}
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, r := range pending {
		if r.Card.IsZero() {
			continue // the reconciler posts it first
		}
		s, ok := sessions[r.SessionID]
		if !ok {
			if s, err = b.st.GetSession(ctx, r.SessionID); err != nil {
				continue
			}
			sessions[r.SessionID] = s
		}
		log := b.log.With().Str("request_id", r.ID).Str("session_id", r.SessionID).Logger()
		p := b.planFor(r, s)
		for _, step := range []store.ReachStep{store.StepReminded, store.StepEscalated} {
			after := p.remindAfter
			if step == store.StepEscalated {
				after = p.escalateAfter
			}
			if after <= 0 || !r.Reach.Done(step).IsZero() {
				continue
			}
			if due := r.CreatedAt.Add(after); b.clock.Now().Before(due) {
				later(due)
				continue
			}
			b.takeStep(ctx, log, r, s, p, step)
		}
	}
	return next
}

// takeStep reminds or escalates r once: MarkReach claims the step for
// this bot, the audit log records it, and then Slack hears of it.
func (b *Bot) takeStep(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, p reachPlan, step store.ReachStep) {
	now := b.clock.Now()
	m := store.ReachMark{Step: step, At: now}
	if step == store.StepEscalated {
		m.To = p.escalateTo
	}
	took, err := b.st.MarkReach(ctx, r.ID, m)
	if err != nil || !took {
		if err != nil {
			log.Warn().Err(err).Str("step", string(step)).Msg("reach: claim the step")
		}
		return
	}
	action := store.AuditReminded
	if step == store.StepEscalated {
		action = store.AuditEscalated
	}
	entry := store.AuditEntry{Action: action, RequestID: r.ID, SessionID: r.SessionID, Kind: r.Kind, Tool: r.ToolName, At: now,
		By: strings.Join(m.To, ","), Message: "who may decide: " + strings.Join(append(slices.Clone(p.deciders), m.To...), ",")}
	if err := b.st.AppendAudit(ctx, entry); err != nil {
		log.Error().Err(err).Str("step", string(step)).Msg("reach: audit the step")
	}
	waited := now.Sub(r.CreatedAt)
	if fresh, err := b.st.GetRequest(ctx, r.ID); err == nil {
		r = fresh // the copies recorded since the list was read
	} else {
		r.Reach.Apply(m)
	}
	if step == store.StepReminded {
		deciders := p.deciders
		if !r.Reach.Escalated.IsZero() {
			deciders = append(slices.Clone(deciders), r.Reach.EscalatedTo...)
		}
		msg := toMsg(blocks.Reminder(b.shown(r), deciders, waited, b.cardLink(r.Card, s)))
		b.reachPost(log, s.Thread.Channel, s.Thread.TS, msg)
		for _, c := range r.Reach.Copies {
			b.reachPost(log, c.Channel, c.TS, msg)
		}
		log.Info().Msg("request reminded")
	} else {
		b.reachPost(log, s.Thread.Channel, s.Thread.TS, toMsg(blocks.Escalation(b.shown(r), m.To, waited)))
		log.Info().Strs("to", m.To).Msg("request escalated")
		b.postCopies(ctx, log, r, s, m.To, true)
	}
	b.showReach(ctx, log, r.ID)
	b.touchHomesOf(ctx, log, r, s)
}

// showReach brings request id's card and copies up to date with the
// store: a step taken ("reminded 10:42"), or its outcome. Store:
// GetRequest and GetSession, GetRequest again after queueing a pending request's edits: edits of one
// message coalesce to the newest, so a settlement read after the first
// read is queued after it and wins, and one that came before is caught.
func (b *Bot) showReach(ctx context.Context, log zerolog.Logger, id string) {
	for range 2 {
		r, err := b.st.GetRequest(ctx, id)
		if err != nil {
			log.Warn().Err(err).Msg("reach: get request")
			return
		}
		s, err := b.st.GetSession(ctx, r.SessionID)
		if err != nil {
			log.Warn().Err(err).Msg("reach: get session")
			return
		}
		b.cards.reach(log, r, s)
		b.showCopies(log, r, s)
		if !r.Pending() {
			return
		}
		if again, err := b.st.GetRequest(ctx, id); err != nil || again.Pending() {
			return
		}
	}
}

// reachPost queues a post in the reach lane; failures are logged.
func (b *Bot) reachPost(log zerolog.Logger, channel, threadTS string, m outMsg) {
	b.out.enqueue(&op{kind: opPost, lane: laneReach, channel: channel, threadTS: threadTS, msg: m, log: log}, false)
}
