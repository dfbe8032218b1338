package bot

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// viewAckBudget bounds the work done before acking a view_submission,
// whose ack carries validation errors; Slack gives up after 3 s.
const viewAckBudget = 2500 * time.Millisecond

// onInteraction handles an interactivity payload and returns the ack's
// body. Clicks are acked empty at once and handled after; a
// view_submission is decided before the ack, because validation errors
// can only travel in it (response_action "errors").
func (b *Bot) onInteraction(cb *slack.InteractionCallback) any {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		for _, a := range cb.ActionCallback.BlockActions {
			act, ok := blocks.ParseAction(a)
			if !ok || act.Kind == blocks.ActionPick || act.Kind == blocks.ActionLink || act.Kind == blocks.ActionRemember {
				// Not ours, a menu change (Slack keeps the choice in
				// state.values until Submit; "Always answer this way" is
				// one), or a link button (Slack opened the URL): there is
				// nothing to do.
				continue
			}
			handle := func(ctx context.Context) { b.clicks.onAction(ctx, cb, act) }
			switch act.Kind {
			case blocks.ActionForget, blocks.ActionForgetGrant: // the App Home's, name a standing rule
				handle = func(ctx context.Context) { b.onForgetClick(ctx, cb, act) }
			case blocks.ActionStop: // names a session, not a request
				handle = func(ctx context.Context) { b.stops.onClick(ctx, cb, act) }
			case blocks.ActionMode: // the status line's menu, names a session
				handle = func(ctx context.Context) { b.onModePick(ctx, cb, act) }
			}
			b.work.Go(func(ctx context.Context) {
				if b.teams.click(ctx, cb, act) {
					handle(ctx)
				}
			})
		}
		return nil
	case slack.InteractionTypeViewSubmission:
		ctx, cancel := context.WithTimeout(b.work.context(), viewAckBudget)
		defer cancel()
		return b.clicks.onViewSubmission(ctx, cb)
	}
	return nil
}

// userInfo looks a person up (users.info).
type userInfo interface {
	GetUserInfoContext(ctx context.Context, user string, opts ...slack.GetUserInfoOption) (*slack.User, error)
}

// who is the person behind an interaction, for the decision's audit trail.
// Payloads carry the name; users.info fills it in when one does not.
func who(ctx context.Context, api userInfo, cb *slack.InteractionCallback) blocks.Who {
	name := cmp.Or(cb.User.Name, cb.User.Username)
	if name == "" && cb.User.ID != "" {
		if u, err := api.GetUserInfoContext(ctx, cb.User.ID); err == nil {
			name = cmp.Or(u.Profile.DisplayName, u.RealName, u.Name)
		}
	}
	return blocks.Who{ID: cb.User.ID, Name: name}
}

// clicks is the one decide pipeline's share of the bot: what a click or a
// modal submission on a card reads, writes and answers through.
type clicks struct {
	st         clickStore
	key        ed25519.PrivateKey
	decider    *decide.Decider
	api        *slack.Client
	clock      store.Clock
	log        zerolog.Logger
	work       *tasks
	cards      *cards
	ephemerals *ephemerals
	homes      *homes
	reach      *reacher
	teams      *teamGate
	// What the bot decides from the policy and its approvers, and how it
	// shows a request.
	policy      func() *policy.Policy
	verdict     func(store.Request, store.Session) policy.Verdict
	needs       func(policy.AskSpec, store.Request, store.Session) blocks.Needs
	mayDecide   func(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, user string) (bool, string)
	respondable func(raw string) string
	shown       func(store.Request) store.Request
	pendingCard func(store.Request, store.Session, blocks.CardOptions) (store.Request, blocks.CardOptions)
}

// clickStore is what deciding from a click reads and writes in the store.
type clickStore interface {
	GetRequest(ctx context.Context, id string) (store.Request, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error)
	Keep(ctx context.Context, s store.Standing) (store.Standing, error)
}

// A click and a modal submission decide a request the same way: load it,
// check it is still pending and the person may decide, decode the answer
// with blocks, store.Decide it, and when someone else was first say who
// and bring the card up to date. decision holds one such attempt; the
// entry points differ only in how they answer (a click with ephemerals
// after its ack, a submission partly in its ack) and in what an answer
// that does not decide leads to (a modal to open, errors to show in one).
type decision struct {
	c    *clicks
	log  zerolog.Logger
	user string
	card store.MessageRef // where the card is; the request's own record wins once loaded
	// copy is the copy of the card the person clicked (reach.go), where
	// they are answered; zero for the card itself.
	copy store.MessageRef
	// home: the person clicked in their App Home, where they are answered.
	home bool
	// modal is the modal the person clicked in ("Approve and allow…"'s
	// second step), where they are answered; "" for none.
	modal    string
	threadTS string
	// clicked is the message the person clicked (for a modal, the one
	// whose click opened it) and responseURL that click's response_url,
	// which replaces clicked: the card, or a copy of it elsewhere.
	clicked     store.MessageRef
	responseURL string
	// async runs replies after the ack, for a submission whose ack must not
	// wait for them; a click, already acked, replies inline.
	async bool
	// scope is where the person asked to remember their answer ("Always
	// answer this way…"); "" for this time only. Set by decode.
	scope store.ScopeKind
	// grantKind and grantRules are the grant the person asked slackgate
	// to keep ("Approve and allow… for 1 hour in this session" or "… in
	// this repository"); "" for none. Set by decode.
	grantKind  store.ScopeKind
	grantRules []string
}

// respondTo is the response_url the outcome goes through: the click's,
// when it came from the card itself and from Slack ("" otherwise).
func (p *decision) respondTo() string {
	if p.clicked.IsZero() || p.clicked != p.card {
		return ""
	}
	return p.c.respondable(p.responseURL)
}

// reply runs f now or, for a submission, after the ack.
func (p *decision) reply(ctx context.Context, f func(ctx context.Context)) {
	if p.async {
		p.c.work.Go(f)
		return
	}
	f(ctx)
}

// tell shows the person an ephemeral next to the card or copy they
// clicked, or their App Home with text at its top.
func (p *decision) tell(ctx context.Context, text string) {
	if p.modal != "" {
		p.reply(ctx, func(ctx context.Context) { p.c.tellInModal(ctx, p.log, p.modal, text) })
		return
	}
	if p.home {
		p.reply(ctx, func(ctx context.Context) { p.c.homes.tell(ctx, p.user, text) })
		return
	}
	p.reply(ctx, func(ctx context.Context) { p.c.ephemerals.post(ctx, p.where(), p.threadTS, p.user, text) })
}

// where is the channel the person clicked in.
func (p *decision) where() string {
	if !p.copy.IsZero() {
		return p.copy.Channel
	}
	return p.card.Channel
}

// alreadyDecided tells the person who settled r first.
func (p *decision) alreadyDecided(ctx context.Context, r store.Request) {
	url := p.respondTo()
	if p.home || p.modal != "" {
		p.tell(ctx, blocks.AlreadyDecided(p.c.shown(r)).Text)
		if p.modal != "" {
			p.reply(ctx, func(ctx context.Context) { p.c.cards.decided(ctx, p.log, r, p.card, url) })
		}
		return
	}
	p.reply(ctx, func(ctx context.Context) {
		if !p.copy.IsZero() {
			p.c.ephemerals.postMsg(ctx, p.copy.Channel, p.threadTS, p.user, blocks.AlreadyDecided(p.c.shown(r)))
			p.c.reach.showReach(ctx, p.log, r.ID)
			return
		}
		p.c.alreadyDecided(ctx, p.log, r, p.card, url, p.user, p.threadTS)
	})
}

// decode turns the person's answer into a decision for r. ok false means
// the answer decides nothing now and the entry point has dealt with it; an
// error from blocks is explained to the person by run.
type decode func(r store.Request) (d store.Decision, ok bool, err error)

// run takes the request through the pipeline. Every refusal is explained to
// the person; the error it returns means the store could not be reached,
// which each entry point reports in its own way.
func (p *decision) run(ctx context.Context, requestID string, dec decode) error {
	r, err := p.c.st.GetRequest(ctx, requestID)
	if errors.Is(err, store.ErrNotFound) {
		p.tell(ctx, "This request no longer exists.")
		return nil
	}
	if err != nil {
		p.log.Error().Err(err).Msg("get request")
		return err
	}
	if !r.Card.IsZero() {
		if r.Reach.HasCopy(p.card) || (!p.card.IsZero() && p.card != r.Card) {
			p.copy = p.card // a copy, reminder or escalation line (recorded or not yet): answered there
		}
		p.card = r.Card
	} else if !p.card.IsZero() {
		r.Card = p.c.cards.adopt(ctx, p.log, r.ID, p.card)
	}
	if !r.Pending() {
		p.alreadyDecided(ctx, r)
		return nil
	}
	s, err := p.c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		p.log.Error().Err(err).Msg("get session")
		return err
	}
	if ok, why := p.c.mayDecide(ctx, p.log, r, s, p.user); !ok {
		p.tell(ctx, why)
		return nil
	}
	d, ok, err := dec(r)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		p.alreadyDecided(ctx, r)
		return nil
	case err != nil:
		p.log.Info().Err(err).Msg("answer does not decide")
		p.tell(ctx, blocks.Explain(err))
		return nil
	case !ok:
		return nil
	}
	if d.Outcome == store.OutcomeAllow {
		if d, ok, err = p.allow(ctx, r, s, d); err != nil || !ok {
			return err
		}
	}
	// Signed over the request as loaded: the person saw it, and the worker
	// verifies over the request as it created it, so a request rewritten in
	// the store meanwhile fails there.
	url := p.respondTo()
	claimed := false
	settled, err := p.c.decider.Settle(ctx, r, d, func(signed store.Decision) {
		claimed = url != "" && p.c.cards.claimOutcome(ctx, p.log, r.ID, signed)
	})
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		p.alreadyDecided(ctx, settled) // the loser of a race learns who won
	case err != nil:
		p.log.Error().Err(err).Msg("decide")
		return err
	default:
		p.log.Info().Str("outcome", string(d.Outcome)).Msg("request decided")
		if p.home || p.modal != "" {
			p.tell(ctx, blocks.DecidedHere(p.c.shown(settled)))
		}
		// The click shows its outcome at once; without a response_url,
		// the EventRequestSettled the store published edits the card.
		if url != "" {
			p.reply(ctx, func(ctx context.Context) { p.c.cards.clicked(ctx, p.log, settled, p.card, url, claimed) })
		}
		p.remember(ctx, r, d)
		p.keepGrant(ctx, r, s, d)
	}
	return nil
}

// allow checks d, an allow of r (a request of session s), and returns the
// decision to settle r with: ok false when it settles nothing now (the
// person was told why, or the request waits for more approvals); an error
// means the store failed.
func (p *decision) allow(ctx context.Context, r store.Request, s store.Session, d store.Decision) (store.Decision, bool, error) {
	if why := p.mayAllow(r, s, d); why != "" {
		p.tell(ctx, why)
		return d, false, nil
	}
	if ask := decide.Ask(p.c.verdict(r, s)); ask.Count > 1 {
		// One of several approvals: the last one settles the request.
		d, ok, err := p.approveOne(ctx, r, s, ask, d)
		if err != nil {
			p.log.Error().Err(err).Msg("approve")
		}
		return d, ok, err
	}
	return d, true, nil
}

// mayAllow says why d, an allow of r (a request of session s), must not
// be made; "" when it may. The session's record decides which rules ask
// whom (its channel, directory, token) and who started it (not_self), and
// is the store's: it counts only while it verifies as the bot signed it.
// A rule for Claude Code's session goes only where the policy has no
// deny or ask rule it could stand in front of.
func (p *decision) mayAllow(r store.Request, s store.Session, d store.Decision) string {
	if err := store.VerifySession(p.c.key.Public().(ed25519.PublicKey), s); err != nil {
		p.log.Error().Err(err).Msg("allow refused: the request's session does not verify")
		return "This request's session record does not verify (it was changed in the store), so it cannot be approved here. " +
			"Nothing was changed; it can still be denied."
	}
	if why := sessionRuleRefusal(p.c.policy(), r, s, d.Permissions); why != "" {
		p.log.Info().Msg("session rule refused: the policy has rules it could stand in front of")
		return why
	}
	return ""
}

// onAction handles one click on a card: it decides the request or opens
// the modal the click asks for. Every way it can fail ends in an
// ephemeral to the person.
func (c *clicks) onAction(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	clicked := store.MessageRef{Channel: cmp.Or(cb.Container.ChannelID, cb.Channel.ID), TS: cb.Container.MessageTs}
	p := &decision{c: c, user: cb.User.ID, threadTS: cb.Container.ThreadTs, card: clicked, clicked: clicked, responseURL: cb.ResponseURL,
		home: cb.View.Type == slack.VTHomeTab}
	if v, err := blocks.ParseModalClick(cb); err == nil {
		// A scope in "Approve and allow…"'s second step: decided as a
		// pick on the card that opened it, answered in the modal.
		p.card, p.clicked, p.responseURL, p.modal = v.Card, v.Card, v.ResponseURL, cb.View.ID
	}
	p.log = c.log.With().Str("request_id", a.RequestID).Str("user", p.user).Str("channel", p.card.Channel).Str("action", string(a.Kind)).Logger()
	err := p.run(ctx, a.RequestID, func(r store.Request) (store.Decision, bool, error) {
		d, next, err := blocks.DecideAction(a, r, cb, who(ctx, c.api, cb), c.clock.Now())
		switch {
		case err != nil:
			return d, false, err
		case next == blocks.NextDecide:
			p.scope = blocks.RememberChoice(r, cb)
			p.grantKind, p.grantRules, _ = blocks.GrantChoice(a, r)
			return d, true, nil
		case next == blocks.NextAllowModal:
			c.openAllowModal(ctx, p, cb, a, r)
		case next != blocks.NextNothing:
			c.openModal(ctx, p, cb, next, r)
		}
		return d, false, nil
	})
	if err != nil {
		p.tell(ctx, sorry("record your answer", err))
	}
}

// openModal opens the form a click on r asks for, starting from what the
// card's menus already hold (cb's state).
func (c *clicks) openModal(ctx context.Context, p *decision, cb *slack.InteractionCallback, next blocks.Next, r store.Request) {
	view, ok := blocks.ModalFor(next.Modal(), r, p.card, cb)
	if !ok {
		p.log.Error().Int("next", int(next)).Msg("blocks asked for an unknown modal")
		p.tell(ctx, "Sorry, something went wrong opening that form.")
		return
	}
	if url := p.respondTo(); url != "" {
		view = blocks.WithResponseURL(view, url)
	}
	// trigger_id lives 3 s: this is the first thing done with it.
	if _, err := c.api.OpenViewContext(ctx, cb.TriggerID, view); err != nil {
		p.log.Error().Err(err).Msg("views.open")
		p.tell(ctx, "Sorry, I could not open the form in time. Please click again.")
	}
}

// openAllowModal opens "Approve and allow…"'s second step for the rule
// set a picked on r's card: the scopes that apply to it now. Store:
// GetSession.
func (c *clicks) openAllowModal(ctx context.Context, p *decision, cb *slack.InteractionCallback, a blocks.Action, r store.Request) {
	s, err := c.st.GetSession(ctx, r.SessionID)
	if err != nil {
		p.log.Error().Err(err).Msg("get session")
		p.tell(ctx, sorry("open that form", err))
		return
	}
	shown, o := c.pendingCard(r, s, blocks.CardOptions{})
	view, err := blocks.AllowModal(a, shown, s, p.card, o)
	if err != nil {
		p.log.Info().Err(err).Msg("approve and allow: nothing to offer")
		p.tell(ctx, blocks.Explain(err))
		return
	}
	if url := p.respondTo(); url != "" {
		view = blocks.WithResponseURL(view, url)
	}
	// trigger_id lives 3 s: this is the first Slack call made with it.
	if _, err := c.api.OpenViewContext(ctx, cb.TriggerID, view); err != nil {
		p.log.Error().Err(err).Msg("views.open")
		p.tell(ctx, "Sorry, I could not open the form in time. Please pick again.")
	}
}

// tellInModal replaces the modal viewID with text: what a click in it did.
func (c *clicks) tellInModal(ctx context.Context, log zerolog.Logger, viewID, text string) {
	if _, err := c.api.UpdateViewContext(ctx, blocks.ModalNote("Approve and allow", text), "", "", viewID); err != nil {
		log.Error().Err(err).Msg("views.update")
	}
}

// onViewSubmission decides a request from a modal. It returns the ack body:
// validation errors keep the modal open; otherwise the modal closes and
// anything else the person must know comes as an ephemeral.
func (c *clicks) onViewSubmission(ctx context.Context, cb *slack.InteractionCallback) any {
	v, err := blocks.ParseViewSubmission(cb)
	if err != nil {
		return nil // not ours
	}
	p := &decision{c: c, user: cb.User.ID, card: v.Card, clicked: v.Card, responseURL: v.ResponseURL, async: true}
	p.log = c.log.With().Str("request_id", v.RequestID).Str("user", p.user).Str("channel", v.Card.Channel).Str("modal", string(v.Kind)).Logger()
	if !c.teams.check(ctx, p.log, actor{user: cb.User.ID, team: cb.User.TeamID}, func(m string) { p.tell(ctx, m) }) {
		return nil
	}
	var invalid map[string]string
	err = p.run(ctx, v.RequestID, func(r store.Request) (store.Decision, bool, error) {
		d, errs, err := blocks.DecideView(v, r, cb, who(ctx, c.api, cb), c.clock.Now())
		if err != nil {
			return d, false, err
		}
		invalid = errs // shown in the ack, keeping the modal open
		p.scope = v.Remember
		return d, len(errs) == 0, nil
	})
	switch {
	case err != nil:
		return slack.NewErrorsViewSubmissionResponse(map[string]string{firstBlockID(cb): "Could not record your answer right now. Please try again."})
	case len(invalid) > 0:
		return slack.NewErrorsViewSubmissionResponse(invalid)
	}
	return nil
}

// alreadyDecided tells the person who settled the request first and brings
// the card up to date, in case they clicked an old version of it.
func (c *clicks) alreadyDecided(ctx context.Context, log zerolog.Logger, r store.Request, card store.MessageRef, responseURL, user, threadTS string) {
	c.ephemerals.postMsg(ctx, card.Channel, threadTS, user, blocks.AlreadyDecided(c.shown(r)))
	c.cards.decided(ctx, log, r, card, responseURL)
}

// firstBlockID names a block of the submitted view to hang a general error
// on (Slack shows response_action errors under input blocks only).
func firstBlockID(cb *slack.InteractionCallback) string {
	for _, bl := range cb.View.Blocks.BlockSet {
		if in, ok := bl.(*slack.InputBlock); ok && in.BlockID != "" {
			return in.BlockID
		}
	}
	if cb.View.State != nil {
		for id := range cb.View.State.Values {
			return id
		}
	}
	return ""
}
