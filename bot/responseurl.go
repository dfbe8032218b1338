package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// A click is answered in the card it came from. Slack gives every click
// on a message a response_url that replaces that message, up to 5 times in
// 30 minutes, without spending chat.update's workspace budget (about 50
// edits a minute, shared with every status line). So the outcome of a
// click, and of a modal through the click that opened it, goes out
// through its response_url the moment the store settles it; chat.update
// stays for what no click started and is the fallback when the
// response_url fails.
//
// The request_settled event reaches some bot too, maybe on another
// replica, which would edit the same card again. Before it decides, the
// click records a claim keyed by its signed decision (FirstSeen), and then
// how it went: shown, or failed. The event's handler reads them (Seen): a
// shown outcome costs no edit; a failed one, or a decision no click
// claimed, gets its edit as before; one claimed but not yet shown sends
// the event back for redelivery (errOutcomeNotShown), until the click
// records how it went or clickGrace passes (its bot died) and the handler
// edits the card itself. A decision nobody clicked (expiry, the API,
// policy, memory, a forged decision refused) matches no claim: only a
// decision signed with the bot's key can, and Decide settles one decision
// per request. A write that showed the card pending is followed by a
// fresh read (cards.settledMeanwhile), so one that lands after a click's
// outcome does not leave buttons on a decided request; within one bot
// the outbox sends a message's writes one at a time, and a response
// replaces an edit of the card still queued.

// clickGrace is how long after a click's decision the settled handler
// leaves the card to the click before editing it itself. Within the
// store's redeliveries at their default pace (1 s, doubling).
const clickGrace = 5 * time.Second

// outcomeClaimTTL outlasts every redelivery of a settled event.
const outcomeClaimTTL = 24 * time.Hour

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

// outcomeKeys are the store keys of a click's claim on showing a decision,
// and of how that went: shown, or failed (the response_url refused).
type outcomeKeys struct{ claim, shown, failed string }

// outcomeKeysOf are the keys of decision d of request id. Only signed
// decisions have a click's claim: the signature names the decision.
func outcomeKeysOf(id string, d store.Decision) outcomeKeys {
	sum := sha256.Sum256(d.Signature)
	tag := id + ":" + hex.EncodeToString(sum[:12])
	return outcomeKeys{claim: "outcome-click:" + tag, shown: "outcome-shown:" + tag, failed: "outcome-failed:" + tag}
}

// claimOutcome records, before d is decided, that the click deciding it
// shows its outcome. It reports whether the claim stands; when the store
// cannot tell, the settled event edits the card as for any decision.
func (c *cards) claimOutcome(ctx context.Context, log zerolog.Logger, id string, d store.Decision) bool {
	if len(d.Signature) == 0 {
		return false
	}
	if _, err := c.b.st.FirstSeen(ctx, outcomeKeysOf(id, d).claim, outcomeClaimTTL); err != nil {
		log.Warn().Err(err).Msg("claim the outcome for the click; the settled event shows it")
		return false
	}
	return true
}

// byClick is how the settled handler finds settled r's card.
type byClick int

const (
	notByClick   byClick = iota // no click claimed it: the handler edits the card
	clickShowed                 // the click's bot showed it
	clickShowing                // the click's bot is showing it: ask again later
)

// byClick tells the settled handler whether the click that decided r shows
// its outcome. raw is r as stored, shown as a card shows it: a decision
// that does not verify is no click's. Store: Seen, twice at most.
func (c *cards) byClick(ctx context.Context, log zerolog.Logger, raw, shown store.Request) byClick {
	if raw.Decision == nil || len(raw.Decision.Signature) == 0 || shown.Decision == nil || shown.Decision.Outcome != raw.Decision.Outcome {
		return notByClick
	}
	keys := outcomeKeysOf(raw.ID, *raw.Decision)
	seen := func(key string) bool {
		ok, err := c.b.st.Seen(ctx, key)
		if err != nil {
			log.Warn().Err(err).Str("key", key).Msg("read how the click's outcome went")
		}
		return ok
	}
	switch {
	case !seen(keys.claim), seen(keys.failed):
		return notByClick
	case seen(keys.shown):
		return clickShowed
	case c.b.clock.Now().Sub(raw.Decision.At) < clickGrace:
		return clickShowing
	}
	log.Warn().Msg("the click's outcome is not shown in time; editing the card")
	return notByClick
}
