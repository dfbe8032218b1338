package bot

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// A click's outcome replaces its card through the click's response_url
// (bot/doc.go says why); the settled event's handler reads the card's
// state (store.CardState) to leave the card to the click (byClick).

// clickGrace is how long after a click's decision the settled handler
// leaves the card to the click before editing it itself. Within the
// store's redeliveries at their default pace (1 s, doubling).
const clickGrace = 5 * time.Second

// responseURLHosts are the hosts of Slack's response_urls (commercial
// Slack and GovSlack).
var responseURLHosts = []string{"hooks.slack.com", "hooks.slack-gov.com"}

// respondable returns raw when the bot may post an outcome to it: an
// https URL on Slack's hooks host, or any URL on the host of a configured
// APIURL (a fake Slack in tests, a proxy). Anything else (a payload that
// did not come from Slack) gets "": the outcome then goes by chat.update.
func (b *Bot) respondable(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Scheme == "https" && slices.Contains(responseURLHosts, strings.ToLower(u.Hostname())) {
		return raw
	}
	if b.cfg.APIURL != "" {
		if api, err := url.Parse(b.cfg.APIURL); err == nil && api.Host == u.Host && api.Scheme == u.Scheme {
			return raw
		}
	}
	return ""
}

// claimOutcome records, before d is decided, that the click deciding it
// shows its outcome (store.CardClicked). It reports whether the claim
// stands; when the store cannot tell, the settled event edits the card as
// for any decision. Only signed decisions have a click's claim: the
// signature names the decision (store.DecisionDigest).
func (c *cards) claimOutcome(ctx context.Context, log zerolog.Logger, id string, d store.Decision) bool {
	digest := store.DecisionDigest(d)
	if digest == "" {
		return false
	}
	took, err := c.st.MoveCard(ctx, id, store.CardMove{Step: store.CardClicked, Decision: digest})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		log.Warn().Err(err).Msg("claim the outcome for the click; the settled event shows it")
	}
	return took
}

// byClick is how the settled handler finds settled r's card.
type byClick int

const (
	notByClick   byClick = iota // no click claimed it: the handler edits the card
	clickShowed                 // the click's bot showed it
	clickShowing                // the click's bot is showing it: ask again later
)

// byClick tells the settled handler whether the click that decided r shows
// its outcome, from r's card state. raw is r as stored, shown as a card
// shows it: a decision that does not verify is no click's. A claimed
// outcome not yet shown is the click's until clickGrace has passed (its
// bot died); a decision nobody clicked (expiry, the API, policy, memory, a
// forged decision refused) matches no claim.
func (c *cards) byClick(log zerolog.Logger, raw, shown store.Request) byClick {
	if raw.Decision == nil || shown.Decision == nil || shown.Decision.Outcome != raw.Decision.Outcome {
		return notByClick
	}
	digest, card := store.DecisionDigest(*raw.Decision), raw.CardState
	switch {
	case !card.Clicked(digest), card.ShownBy(digest) == store.CardClickFailed:
		return notByClick
	case card.ShownBy(digest) == store.CardShownByClick:
		return clickShowed
	case c.clock.Now().Sub(raw.Decision.At) < clickGrace:
		return clickShowing
	}
	log.Warn().Msg("the click's outcome is not shown in time; editing the card")
	return notByClick
}
