package bot

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
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
			if !ok || act.Kind == blocks.ActionPick {
				// Not ours, or a menu change: Slack keeps the choice in
				// state.values until Submit, so there is nothing to do.
				continue
			}
			if act.Kind == blocks.ActionStop { // names a session, not a request
				b.work.Go(func(ctx context.Context) { b.onStopClick(ctx, cb, act) })
				continue
			}
			b.work.Go(func(ctx context.Context) { b.onAction(ctx, cb, act) })
		}
		return nil
	case slack.InteractionTypeViewSubmission:
		ctx, cancel := context.WithTimeout(b.work.context(), viewAckBudget)
		defer cancel()
		return b.onViewSubmission(ctx, cb)
	}
	return nil
}

// who is the person behind an interaction, for the decision's audit trail.
// Payloads carry the name; users.info fills it in when one does not.
func (b *Bot) who(ctx context.Context, cb *slack.InteractionCallback) blocks.Who {
	name := cmp.Or(cb.User.Name, cb.User.Username)
	if name == "" && cb.User.ID != "" {
		if u, err := b.api.GetUserInfoContext(ctx, cb.User.ID); err == nil {
			name = cmp.Or(u.Profile.DisplayName, u.RealName, u.Name)
		}
	}
	return blocks.Who{ID: cb.User.ID, Name: name}
}

// onAction handles one click on a card: checks the request is still open
// and the person may decide, then decides it or opens the modal the click
// asks for. Every way it can fail ends in an ephemeral to the person.
func (b *Bot) onAction(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) {
	user := cb.User.ID
	card := store.MessageRef{Channel: cb.Container.ChannelID, TS: cb.Container.MessageTs}
	if card.Channel == "" {
		card.Channel = cb.Channel.ID
	}
	log := b.log.With().Str("request_id", a.RequestID).Str("user", user).Str("channel", card.Channel).Str("action", string(a.Kind)).Logger()
	tell := func(text string) { b.ephemeral(ctx, card.Channel, cb.Container.ThreadTs, user, text) }

	r, err := b.st.GetRequest(ctx, a.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		tell("This request no longer exists.")
		return
	}
	if err != nil {
		log.Error().Err(err).Msg("get request")
		tell("Sorry, I could not record your answer (the request store is unavailable). Please try again.")
		return
	}
	if !r.Card.IsZero() {
		card = r.Card
	}
	if !r.Pending() {
		b.alreadyDecided(ctx, log, r, card, user, cb.Container.ThreadTs)
		return
	}
	if !b.mayDecide(ctx, log, user, tell) {
		return
	}
	d, next, err := blocks.DecideAction(a, r, cb, b.who(ctx, cb), b.clock.Now())
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		b.alreadyDecided(ctx, log, r, card, user, cb.Container.ThreadTs)
		return
	case err != nil:
		log.Info().Err(err).Msg("click does not decide")
		tell(blocks.Explain(err))
		return
	}
	switch next {
	case blocks.NextNothing:
		return
	case blocks.NextDecide:
		b.decide(ctx, log, r, d, card, user, cb.Container.ThreadTs)
	default:
		view, ok := blocks.Modal(next.Modal(), r, card)
		if !ok {
			log.Error().Int("next", int(next)).Msg("blocks asked for an unknown modal")
			tell("Sorry, something went wrong opening that form.")
			return
		}
		// trigger_id lives 3 s: this is the first thing done with it.
		if _, err := b.api.OpenViewContext(ctx, cb.TriggerID, view); err != nil {
			log.Error().Err(err).Msg("views.open")
			tell("Sorry, I could not open the form in time. Please click again.")
		}
	}
}

// onViewSubmission decides a request from a modal. It returns the ack body:
// validation errors keep the modal open; otherwise the modal closes and
// anything else the person must know comes as an ephemeral.
func (b *Bot) onViewSubmission(ctx context.Context, cb *slack.InteractionCallback) any {
	v, err := blocks.ParseViewSubmission(cb)
	if err != nil {
		return nil // not ours
	}
	user := cb.User.ID
	log := b.log.With().Str("request_id", v.RequestID).Str("user", user).Str("channel", v.Card.Channel).Str("modal", string(v.Kind)).Logger()
	later := func(f func(ctx context.Context)) { b.work.Go(f) }
	tell := func(text string) {
		later(func(ctx context.Context) { b.ephemeral(ctx, v.Card.Channel, "", user, text) })
	}

	r, err := b.st.GetRequest(ctx, v.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		tell("This request no longer exists.")
		return nil
	}
	if err != nil {
		log.Error().Err(err).Msg("get request")
		return slack.NewErrorsViewSubmissionResponse(map[string]string{firstBlockID(cb): "Could not record your answer right now. Please try again."})
	}
	card := v.Card
	if !r.Card.IsZero() {
		card = r.Card
	}
	if !r.Pending() {
		later(func(ctx context.Context) { b.alreadyDecided(ctx, log, r, card, user, "") })
		return nil
	}
	if !b.mayDecide(ctx, log, user, tell) {
		return nil
	}
	d, errs, err := blocks.DecideView(v, r, cb, b.who(ctx, cb), b.clock.Now())
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		later(func(ctx context.Context) { b.alreadyDecided(ctx, log, r, card, user, "") })
		return nil
	case err != nil:
		log.Info().Err(err).Msg("submission does not decide")
		tell(blocks.Explain(err))
		return nil
	case len(errs) > 0:
		return slack.NewErrorsViewSubmissionResponse(errs)
	}
	settled, err := b.st.Decide(ctx, r.ID, d)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		later(func(ctx context.Context) { b.alreadyDecided(ctx, log, settled, card, user, "") })
	case err != nil:
		log.Error().Err(err).Msg("decide")
		return slack.NewErrorsViewSubmissionResponse(map[string]string{firstBlockID(cb): "Could not record your answer right now. Please try again."})
	default:
		log.Info().Str("outcome", string(d.Outcome)).Msg("request decided")
	}
	return nil
}

// decide records a decision; the loser of a race learns who won.
func (b *Bot) decide(ctx context.Context, log zerolog.Logger, r store.Request, d store.Decision, card store.MessageRef, user, threadTS string) {
	settled, err := b.st.Decide(ctx, r.ID, d)
	switch {
	case errors.Is(err, store.ErrAlreadyDecided):
		b.alreadyDecided(ctx, log, settled, card, user, threadTS)
	case err != nil:
		log.Error().Err(err).Msg("decide")
		b.ephemeral(ctx, card.Channel, threadTS, user, "Sorry, I could not record your answer (the request store is unavailable). Please try again.")
	default:
		// The card is updated by the EventRequestSettled the store published.
		log.Info().Str("outcome", string(d.Outcome)).Msg("request decided")
	}
}

// mayDecide checks the approver list; a person who may not decide is told
// who may, and nothing changes.
func (b *Bot) mayDecide(ctx context.Context, log zerolog.Logger, user string, tell func(string)) bool {
	ok, err := b.approvers.allowed(ctx, user)
	if ok {
		return true
	}
	if err != nil {
		log.Error().Err(err).Msg("check approvers")
		tell("Sorry, I could not check whether you may decide this (Slack did not list the approver groups). Please try again.")
		return false
	}
	log.Info().Msg("click by a non-approver ignored")
	tell("Only " + b.approvers.describe() + " can decide Claude's requests here. Nothing was changed.")
	return false
}

// alreadyDecided tells the person who settled the request first and brings
// the card up to date, in case they clicked an old version of it.
func (b *Bot) alreadyDecided(ctx context.Context, log zerolog.Logger, r store.Request, card store.MessageRef, user, threadTS string) {
	b.ephemeralMsg(ctx, card.Channel, threadTS, user, blocks.AlreadyDecided(r))
	if r.Decision == nil || card.IsZero() {
		return
	}
	s, err := b.st.GetSession(ctx, r.SessionID)
	if err != nil {
		log.Warn().Err(err).Msg("refresh card: get session")
		return
	}
	if err := b.out.Update(ctx, log, card, renderCard(r, s).msg); err != nil {
		log.Warn().Err(err).Msg("refresh card")
	}
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
