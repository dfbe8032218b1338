package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// A request's card state lives in its hash beside its card, one field per
// part, each written by one script below: "card_claim" (when the claim
// to post the card lapses, unix ms by Redis' clock), "card_clicks" (the
// decisions clicks claimed, DecisionDigests separated by spaces),
// "card_shown" ("<step> <digest>": how the click's outcome went),
// "card_input" ("1": the edited input is attached) and "card_announced"
// ("1": a bot took the copies on).

// Replies of the card scripts.
const (
	cardNotFound = 0
	cardTook     = 1
	cardNot      = 2
)

// claimCardScript takes the claim to post a request's card unless a claim
// is live, by Redis' clock, so a dead holder's lapses whoever's clock is
// off.
//
// KEYS[1] request hash
// ARGV[1] the claim's ttl in ms
//
// Returns 0 for an unknown id (ErrNotFound), 1 when this call took the
// claim, 2 when a live claim stands.
var claimCardScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tonumber(redis.call('HGET', KEYS[1], 'card_claim') or '0') > now then
	return 2
end
redis.call('HSET', KEYS[1], 'card_claim', string.format('%d', now + tonumber(ARGV[1])))
return 1
`)

// clickCardScript records, while the request is pending, that a click
// will show the outcome of the decision it is about to make.
//
// KEYS[1] request hash
// ARGV[1] the decision's DecisionDigest
//
// Returns 0 for an unknown id (ErrNotFound), 1 when recorded (or there
// already), 2 when the request is settled.
var clickCardScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
if redis.call('HEXISTS', KEYS[1], 'decision') == 1 then
	return 2
end
local cur = redis.call('HGET', KEYS[1], 'card_clicks')
if not cur then
	redis.call('HSET', KEYS[1], 'card_clicks', ARGV[1])
elseif not string.find(' ' .. cur .. ' ', ' ' .. ARGV[1] .. ' ', 1, true) then
	redis.call('HSET', KEYS[1], 'card_clicks', cur .. ' ' .. ARGV[1])
end
return 1
`)

// showCardScript records how a click's outcome went, once.
//
// KEYS[1] request hash
// ARGV[1] "shown_by_click" or "click_failed"     ARGV[2] the DecisionDigest
//
// Returns 0 for an unknown id (ErrNotFound), 1 when recorded, 2 when a
// click said before.
var showCardScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
return 2 - redis.call('HSETNX', KEYS[1], 'card_shown', ARGV[1] .. ' ' .. ARGV[2])
`)

// onceCardScript records a step that takes once (the edited input
// attached, the copies announced) in its field.
//
// KEYS[1] request hash
// ARGV[1] "card_input" or "card_announced"
//
// Returns 0 for an unknown id (ErrNotFound), 1 when this call recorded it,
// 2 when it was recorded before.
var onceCardScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
return 2 - redis.call('HSETNX', KEYS[1], ARGV[1], '1')
`)

// MoveCard implements store.Cards: one script per step.
func (s *Store) MoveCard(ctx context.Context, id string, m store.CardMove) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("redisstore: card %s of %s: %w", m.Step, id, err)
	}
	keys := []string{s.keys.request(id)}
	var cmd *redis.Cmd
	switch m.Step {
	case store.CardClaimed:
		// Whole milliseconds, rounded up so a short ttl never becomes 0.
		ms := (m.TTL + time.Millisecond - 1) / time.Millisecond
		cmd = s.run(ctx, claimCardScript, keys, int64(ms))
	case store.CardClicked:
		cmd = s.run(ctx, clickCardScript, keys, m.Decision)
	case store.CardShownByClick, store.CardClickFailed:
		cmd = s.run(ctx, showCardScript, keys, string(m.Step), m.Decision)
	case store.CardAnnounced:
		cmd = s.run(ctx, onceCardScript, keys, "card_announced")
	default:
		cmd = s.run(ctx, onceCardScript, keys, "card_input")
	}
	n, err := cmd.Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: card %s of %s: %w", m.Step, id, err)
	}
	if n == cardNotFound {
		return false, fmt.Errorf("redisstore: card %s of %s: %w", m.Step, id, store.ErrNotFound)
	}
	return n == cardTook, nil
}

// cardFields are the hash fields that hold a request's card state, read
// after reachFields.
var cardFields = []string{"card_claim", "card_clicks", "card_shown", "card_input", "card_announced"}

// decodeCardState fills r.CardState from its hash fields ("" when
// absent). The body's own, if a writer put one there, is not the
// request's.
func decodeCardState(r *store.Request, claim, clicks, shown, input, announced string) error {
	r.CardState = store.CardState{InputAttached: input != "", Announced: announced != ""}
	if clicks != "" {
		r.CardState.Clicks = strings.Fields(clicks)
	}
	if claim != "" {
		ms, err := strconv.ParseInt(claim, 10, 64)
		if err != nil {
			return fmt.Errorf("decode card claim of %s: %w", r.ID, err)
		}
		r.CardState.ClaimedUntil = time.UnixMilli(ms)
	}
	if shown != "" {
		by, d, ok := strings.Cut(shown, " ")
		if !ok {
			return fmt.Errorf("decode card outcome of %s: %q", r.ID, shown)
		}
		r.CardState.Shown = store.CardShown{By: store.CardStep(by), Decision: d}
	}
	return nil
}
