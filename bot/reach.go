package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
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

// reacher carries a request beyond its card to the people who may decide
// it: copies, one reminder, one escalation, and the App Homes a change
// concerns. It holds what that takes and no more: the store calls of
// reachStore, the outbox, the clock, the configured defaults, and the few
// answers other parts own, as funcs (the policy's verdict, how many
// approvals a request needs, its card's edit).
type reacher struct {
	st       reachStore
	out      *outbox.Outbox
	clock    store.Clock
	log      zerolog.Logger
	later    func(func(context.Context)) bool // a task after an ack (tasks.Go)
	groups   groupLister
	slack    dmOpener
	homes    *homes
	pub      ed25519.PublicKey // the bots' key: which approvals and decisions count
	defaults ReachDefaults
	// approvers is APPROVERS, who decide a request no rule speaks for;
	// interval is ReconcileInterval, how often a pass looks for the cards
	// of other replicas; policyAtStart, whether a policy was set at New.
	approvers     People
	interval      time.Duration
	policyAtStart bool

	verdict  func(store.Request, store.Session) policy.Verdict
	needs    func(store.Request, store.Session) blocks.Needs
	showCard func(zerolog.Logger, store.Request, store.Session)

	// teamURL comes from auth.test at the start of Run, before any
	// handler or pass; card links are built on it.
	teamURL string
	seen    firstSeen
	dmCache sync.Map // user → the DM channel copies went to
	wake    chan struct{}
	// armed, when set (tests), runs after the sweeper set its timer, due
	// at due.
	armed func(due time.Time)
}

// reachStore is what reaching people reads and writes in the store.
type reachStore interface {
	GetRequest(ctx context.Context, id string) (store.Request, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	ListPending(ctx context.Context, sessionID string) ([]store.Request, error)
	MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error)
	AddCopy(ctx context.Context, id string, ref store.MessageRef) (pending bool, err error)
	MarkReach(ctx context.Context, id string, m store.ReachMark) (bool, error)
	AppendAudit(ctx context.Context, a store.AuditEntry) error
}

// groupLister lists user groups (approvers does, cached) and says whether
// a user is among ids.
type groupLister interface {
	members(ctx context.Context, group string) (map[string]bool, error)
	among(ctx context.Context, ids []string, user string) (bool, error)
}

// dmOpener opens the bot's DM with a person (a *slack.Client).
type dmOpener interface {
	OpenConversationContext(ctx context.Context, p *slack.OpenConversationParameters) (*slack.Channel, bool, bool, error)
}

// planFor is r's plan: the defaults, as the ask of the policy rule that
// matches r overrides them.
func (rc *reacher) planFor(r store.Request, s store.Session) reachPlan {
	p := rc.defaults.plan(rc.approvers)
	if v := rc.verdict(r, s); v.Action == policy.Ask && v.Rule != nil {
		a := v.Ask
		p = p.with(reachAsk{approvers: a.Approvers, notify: a.Notify, escalateTo: a.EscalateTo,
			remindAfter: a.RemindAfter, escalateAfter: a.EscalateAfter})
	}
	return p
}

// steps reports whether a step may ever fall due: a default says
// when, or a policy (whose rules, reloaded, may) is in force.
func (rc *reacher) steps() bool {
	return rc.defaults.RemindAfter > 0 || rc.defaults.EscalateAfter > 0 || rc.policyAtStart
}

// people expands ids (users, user groups and "*") to the users they name,
// sorted, and whether "*" was among them. A group Slack does not list is
// an error; the users of the others are still returned.
func (rc *reacher) people(ctx context.Context, ids []string) (users []string, anyone bool, err error) {
	seen := map[string]bool{}
	for _, id := range ids {
		switch {
		case id == "*":
			anyone = true
		case strings.HasPrefix(id, "S"):
			m, gerr := rc.groups.members(ctx, id)
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

// A request's reminder and escalation fall due counted from when it began
// to wait. Its created_at is the store's word, which a writer can move
// back to escalate it at once; so the count starts when this bot first
// saw the request pending, by its own clock (or at created_at, when that
// is later). A bot started since sees it anew: its steps come later, never
// sooner.

// firstSeen is when this bot first saw each pending request.
type firstSeen struct {
	mu sync.Mutex
	at map[string]time.Time
}

// since is when r began to wait, as far as this bot can vouch: the later
// of its created_at and the first time the bot saw it (now, for a request
// it meets for the first time).
func (f *firstSeen) since(r store.Request, now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	seen, ok := f.at[r.ID]
	if !ok {
		seen = now
		f.at[r.ID] = seen
	}
	if r.CreatedAt.After(seen) {
		return r.CreatedAt
	}
	return seen
}

// keepOnly forgets every request but those pending.
func (f *firstSeen) keepOnly(pending []store.Request) {
	ids := make(map[string]bool, len(pending))
	for _, r := range pending {
		ids[r.ID] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.at {
		if !ids[id] {
			delete(f.at, id)
		}
	}
}

// waitingSince is when r began to wait, by this bot's clock (firstSeen).
func (rc *reacher) waitingSince(r store.Request) time.Time { return rc.seen.since(r, rc.clock.Now()) }

// escalatedTo reports whether user may decide r because r was escalated
// to them: they are among its escalate_to, the store says it was
// escalated, and the escalation's time has come by the bot's own clock
// (counted from waitingSince), so a store writer who marks a request
// escalated early, or moves its created_at back, gains nothing.
func (rc *reacher) escalatedTo(ctx context.Context, log zerolog.Logger, r store.Request, user string) bool {
	if r.Reach.Escalated.IsZero() {
		return false
	}
	s, err := rc.st.GetSession(ctx, r.SessionID)
	if err != nil {
		log.Warn().Err(err).Msg("escalation: get session")
		return false
	}
	p := rc.planFor(r, s)
	if p.escalateAfter <= 0 || rc.clock.Now().Before(rc.waitingSince(r).Add(p.escalateAfter)) {
		return false
	}
	ok, err := rc.groups.among(ctx, p.escalateTo, user)
	if err != nil && !ok {
		log.Warn().Err(err).Msg("escalation: list escalate_to")
	}
	return ok
}

// reached takes r, whose card was just recorded, where else it must go:
// its copies, and the App Homes of who may decide it.
func (rc *reacher) reached(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	select {
	case rc.wake <- struct{}{}: // its steps fall due from now
	default:
	}
	rc.announce(ctx, log, r, s)
	rc.touchHomes(ctx, log, r, s)
}

// settled shows r's outcome on its copies and takes it off the App Homes.
func (rc *reacher) settled(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	rc.showReach(ctx, log, r.ID)
	rc.touchHomes(ctx, log, r, s)
}

// touchHomes queues the App Home tabs of the people who may decide r.
func (rc *reacher) touchHomes(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	p := rc.planFor(r, s)
	ids := p.deciders
	if !r.Reach.Escalated.IsZero() {
		ids = append(slices.Clone(ids), p.escalateTo...)
	}
	users, _, err := rc.people(ctx, ids)
	if err != nil {
		log.Warn().Err(err).Msg("home: list who may decide; their tabs are current when opened")
	}
	rc.homes.mark(users)
}

// maxCopies bounds the copies one request gets (a notify channel and a
// large user group's DMs).
const maxCopies = 50

// announce posts r's copies once its card is recorded: to the plan's
// notify channels and people, and by DM to each decider when the plan says
// so, never to the starter, and only when someone other than the starter
// may decide it; one bot announces (claimAnnounce).
func (rc *reacher) announce(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	p := rc.planFor(r, s)
	if len(p.notify) == 0 && !p.dm {
		return
	}
	deciders, anyone, err := rc.people(ctx, p.deciders)
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
	first, err := rc.claimAnnounce(ctx, r.ID)
	if err != nil || !first {
		if err != nil {
			log.Warn().Err(err).Msg("announce: claim")
		}
		return
	}
	rc.postCopies(ctx, log, r, s, targets, false)
}

// claimAnnounce reports whether this bot is the one to announce request
// id: the request's card moves to announced once (store.CardAnnounced).
func (rc *reacher) claimAnnounce(ctx context.Context, id string) (bool, error) {
	return rc.st.MoveCard(ctx, id, store.CardMove{Step: store.CardAnnounced})
}

// postCopies posts a copy of r to each target (a channel; a user gets it
// by DM; a user group's members each by DM), never to s's starter, and
// records each in the store (AddCopy). A copy posted after r was settled
// is shown settled at once.
func (rc *reacher) postCopies(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, targets []string, escalated bool) {
	var chans []string
	var users []string
	for _, t := range targets {
		if isChannelID(t) {
			chans = append(chans, t)
		} else {
			users = append(users, t)
		}
	}
	people, _, err := rc.people(ctx, users)
	if err != nil {
		log.Warn().Err(err).Msg("announce: list user groups; their members get no copy")
	}
	viewer := map[string]string{} // DM channel → its person
	for _, u := range people {
		if u == s.StartedBy {
			continue
		}
		ch, err := rc.dmChannel(ctx, u)
		if err != nil {
			log.Warn().Err(err).Str("to", u).Msg("announce: open a DM")
			continue
		}
		chans = append(chans, ch)
		viewer[ch] = u
	}
	slices.Sort(chans)
	chans = slices.Compact(chans)
	if len(chans) > maxCopies {
		log.Warn().Int("targets", len(chans)).Int("max", maxCopies).Msg("announce: too many copies; the first are sent")
		chans = chans[:maxCopies]
	}
	shown, o := rc.view(r, s)
	o.Escalated = escalated
	results := make([]outbox.Pending, len(chans))
	for i, ch := range chans {
		o.Viewer = viewer[ch]
		results[i] = rc.out.Post(log, outbox.LaneReach, ch, "", toMsg(blocks.Announcement(shown, s, o)))
	}
	for i, res := range results {
		rc.recordCopy(ctx, log, r.ID, chans[i], res)
	}
	log.Info().Int("copies", len(chans)).Bool("escalated", escalated).Msg("request announced")
}

// recordCopy waits for res, a post to channel of a message with request
// id's buttons, and records it as a copy (AddCopy), so a click there
// decides and the outcome reaches it; one posted after the request was
// settled is shown settled at once. Failures are logged.
func (rc *reacher) recordCopy(ctx context.Context, log zerolog.Logger, id, channel string, res outbox.Pending) {
	ts, err := res.Wait(ctx)
	if err != nil {
		log.Warn().Err(err).Str("to", channel).Msg("reach: message not posted")
		return
	}
	pending, err := rc.st.AddCopy(context.WithoutCancel(ctx), id, store.MessageRef{Channel: channel, TS: ts})
	if err != nil {
		log.Error().Err(err).Str("to", channel).Msg("reach: record the message")
		return
	}
	if !pending {
		rc.showReach(ctx, log, id)
	}
}

// view is r as its copies, reminders and App Home rows show it (the
// approvals that count), and what they say of it: the card's link, how
// many approvals it needs from whom, who may decide it.
func (rc *reacher) view(r store.Request, s store.Session) (store.Request, blocks.ReachOptions) {
	r = asShown(rc.pub, r)
	o := blocks.ReachOptions{CardLink: rc.cardLink(r.Card, s)}
	if r.Pending() {
		r.Approvals = decide.Counted(rc.pub, rc.log, r)
		o.Needs = rc.needs(r, s)
		o.Deciders = rc.planFor(r, s).deciders
	}
	return r, o
}

// dmViewers maps the DM channels of r's approvers to them, so a copy in
// one says "You approved" to its reader. Store: none; Slack:
// conversations.open for an approver whose DM this bot has not cached.
func (rc *reacher) dmViewers(ctx context.Context, log zerolog.Logger, r store.Request) map[string]string {
	out := map[string]string{}
	if !slices.ContainsFunc(r.Reach.Copies, func(c store.MessageRef) bool { return isDMChannel(c.Channel) }) {
		return out
	}
	for _, a := range r.Approvals {
		ch, err := rc.dmChannel(ctx, a.By)
		if err != nil {
			log.Warn().Err(err).Str("user", a.By).Msg("reach: find an approver's DM; their copy shows the request as to anyone")
			continue
		}
		out[ch] = a.By
	}
	return out
}

// isDMChannel reports whether id is a direct message's channel.
func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

// dmChannel is the bot's DM channel with user (conversations.open).
func (rc *reacher) dmChannel(ctx context.Context, user string) (string, error) {
	if ch, ok := rc.dmCache.Load(user); ok {
		return ch.(string), nil
	}
	c, _, _, err := rc.slack.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{user}})
	if err != nil {
		return "", fmt.Errorf("bot: conversations.open %s: %w", user, err)
	}
	rc.dmCache.Store(user, c.ID)
	return c.ID, nil
}

// cardLink is the permalink of a card in s's thread ("" when unknown).
func (rc *reacher) cardLink(card store.MessageRef, s store.Session) string {
	link, _ := blocks.Permalink(rc.teamURL, card, s.Thread.TS)
	return link
}

// showCopies queues edits of r's copies (with its reminders and
// escalation lines) to show r as given; a copy in an approver's DM says
// they approved. Failures are logged: a click on a stale copy says who
// decided and refreshes it.
func (rc *reacher) showCopies(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	shown, o := rc.view(r, s)
	var viewers map[string]string
	if shown.Pending() {
		viewers = rc.dmViewers(ctx, log, shown)
	}
	for _, ref := range r.Reach.Copies {
		o.Viewer, o.InThread = viewers[ref.Channel], ref.Channel == s.Thread.Channel
		msg := toMsg(blocks.Announcement(shown, s, o))
		rc.out.EditLater(log, outbox.LaneReach, ref, msg)
	}
}

// run takes the reminders and escalations that are due, at start, when
// this bot records a card, when the next step falls due, and every
// ReconcileInterval (which finds the cards of other replicas), until ctx
// ends (nil).
func (rc *reacher) run(ctx context.Context) error {
	for {
		next := rc.due(ctx)
		now := rc.clock.Now()
		wait := rc.interval
		if !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
		timer := rc.clock.NewTimer(wait)
		if rc.armed != nil {
			rc.armed(now.Add(wait))
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		case <-rc.wake:
			timer.Stop()
		}
	}
}

// due reminds and escalates the pending requests whose time has come
// and returns when the next one falls due (zero: none). Store: ListPending,
// GetSession per session, MarkReach per step (one replica takes it).
// Errors are logged; the next pass tries again.
func (rc *reacher) due(ctx context.Context) time.Time {
	pending, err := rc.st.ListPending(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			rc.log.Warn().Err(err).Msg("reach: list pending requests")
		}
		return time.Time{}
	}
	rc.seen.keepOnly(pending)
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
			if s, err = rc.st.GetSession(ctx, r.SessionID); err != nil {
				continue
			}
			sessions[r.SessionID] = s
		}
		log := rc.log.With().Str("request_id", r.ID).Str("session_id", r.SessionID).Logger()
		p := rc.planFor(r, s)
		for _, step := range []store.ReachStep{store.StepReminded, store.StepEscalated} {
			after := p.remindAfter
			if step == store.StepEscalated {
				after = p.escalateAfter
			}
			if after <= 0 || !r.Reach.Done(step).IsZero() {
				continue
			}
			if due := rc.waitingSince(r).Add(after); rc.clock.Now().Before(due) {
				later(due)
				continue
			}
			rc.takeStep(ctx, log, r, s, p, step)
		}
	}
	return next
}

// takeStep reminds or escalates r once: MarkReach claims the step for
// this bot, the audit log records it, and then Slack hears of it.
func (rc *reacher) takeStep(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, p reachPlan, step store.ReachStep) {
	now := rc.clock.Now()
	m := store.ReachMark{Step: step, At: now}
	if step == store.StepEscalated {
		m.To = p.escalateTo
	}
	took, err := rc.st.MarkReach(ctx, r.ID, m)
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
	if err := rc.st.AppendAudit(ctx, entry); err != nil {
		log.Error().Err(err).Str("step", string(step)).Msg("reach: audit the step")
	}
	waited := now.Sub(rc.waitingSince(r))
	if fresh, err := rc.st.GetRequest(ctx, r.ID); err == nil {
		r = fresh // the copies recorded since the list was read
	} else {
		r.Reach.Apply(m)
	}
	if step == store.StepReminded {
		rc.remind(ctx, log, r, s, waited)
		log.Info().Msg("request reminded")
	} else {
		shown, o := rc.view(r, s)
		o.InThread = true
		msg := toMsg(blocks.Escalation(shown, s, o, waited))
		rc.recordCopyLater(log, r.ID, s.Thread.Channel, rc.out.Post(log, outbox.LaneReach, s.Thread.Channel, s.Thread.TS, msg))
		log.Info().Strs("to", m.To).Msg("request escalated")
		rc.postCopies(ctx, log, r, s, m.To, true)
	}
	rc.showReach(ctx, log, r.ID)
	rc.touchHomes(ctx, log, r, s)
}

// remind sends r's reminder, with Approve and Deny, where r's card and
// copies are: in the card's thread, under each channel's copy, and as a
// new DM to each person a copy went to by DM (a reply in a DM's thread
// is easily missed). Each is recorded as a copy (recordCopy), so its
// buttons decide and it shows the outcome.
func (rc *reacher) remind(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, waited time.Duration) {
	shown, o := rc.view(r, s)
	viewers := rc.dmViewers(ctx, log, shown)
	type place struct{ channel, threadTS, viewer string }
	places := []place{{channel: s.Thread.Channel, threadTS: s.Thread.TS}}
	for _, c := range r.Reach.Copies {
		switch {
		case c.Channel == s.Thread.Channel:
			continue // a reminder or escalation line in the card's thread
		case isDMChannel(c.Channel):
			if slices.ContainsFunc(places, func(p place) bool { return p.channel == c.Channel }) {
				continue // one reminder a person
			}
			places = append(places, place{channel: c.Channel, viewer: viewers[c.Channel]})
		default:
			places = append(places, place{channel: c.Channel, threadTS: c.TS})
		}
	}
	for _, pl := range places {
		o.Viewer, o.InThread = pl.viewer, pl.channel == s.Thread.Channel
		rc.recordCopyLater(log, r.ID, pl.channel, rc.out.Post(log, outbox.LaneReach, pl.channel, pl.threadTS, toMsg(blocks.Reminder(shown, s, o, waited))))
	}
}

// recordCopyLater is recordCopy in a task: a reach pass does not wait on
// Slack's pace for its posts.
func (rc *reacher) recordCopyLater(log zerolog.Logger, id, channel string, res outbox.Pending) {
	rc.later(func(ctx context.Context) { rc.recordCopy(ctx, log, id, channel, res) })
}

// showReach brings request id's card and copies up to date with the
// store: a step taken ("reminded 10:42"), or its outcome. Store:
// GetRequest and GetSession, GetRequest again after queueing a pending request's edits: edits of one
// message coalesce to the newest, so a settlement read after the first
// read is queued after it and wins, and one that came before is caught.
func (rc *reacher) showReach(ctx context.Context, log zerolog.Logger, id string) {
	for range 2 {
		r, err := rc.st.GetRequest(ctx, id)
		if err != nil {
			log.Warn().Err(err).Msg("reach: get request")
			return
		}
		s, err := rc.st.GetSession(ctx, r.SessionID)
		if err != nil {
			log.Warn().Err(err).Msg("reach: get session")
			return
		}
		rc.showCard(log, r, s)
		rc.showCopies(ctx, log, r, s)
		if !r.Pending() {
			return
		}
		if again, err := rc.st.GetRequest(ctx, id); err != nil || again.Pending() {
			return
		}
	}
}
