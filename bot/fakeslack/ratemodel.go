package fakeslack

import (
	"math"
	"time"
)

// Slack's budgets as the fake enforces them by default: chat.postMessage
// about one message a second per channel with a short burst, chat.update
// and conversations.history Tier 3 (50 a minute per workspace, each) with
// a burst, views.publish Tier 4 (100 a minute per workspace) with a
// burst, and a 429 with
// Retry-After when a call exceeds them. The bursts match slackgate's
// defaults; jitterAllowance forgives a call that arrives up to that much
// early, as the network moves calls against the sender's clock.
const (
	postsPerSecond     = 1.0
	postBurst          = 4
	updatesPerMinute   = 50.0
	updateBurst        = 20
	publishesPerMinute = 100.0
	publishBurst       = 20
	historyPerMinute   = 50.0
	historyBurst       = 20
	jitterAllowance    = 100 * time.Millisecond
)

// WithoutRateModel turns the rate model off. A test that uses it says why
// Slack's pacing has no part in what it checks.
func WithoutRateModel() Option { return func(f *Fake) { f.noRateModel = true } }

type tokenBucket struct {
	rate, burst, tokens float64
	at                  time.Time
}

// spend takes a token at now, or returns how long until one is there.
func (b *tokenBucket) spend(now time.Time) time.Duration {
	if b.at.IsZero() {
		b.tokens, b.at = b.burst, now
	}
	if now.After(b.at) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
		b.at = now
	}
	if b.tokens+jitterAllowance.Seconds()*b.rate >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// overBudgetLocked reports the Retry-After seconds (>= 1) of a call the
// rate model refuses, or -1.
func (f *Fake) overBudgetLocked(method string, p params) int {
	if f.noRateModel {
		return -1
	}
	var b *tokenBucket
	switch method {
	case "chat.postMessage":
		key := "post:" + p.get("channel")
		if b = f.buckets[key]; b == nil {
			b = &tokenBucket{rate: postsPerSecond, burst: postBurst}
			f.buckets[key] = b
		}
	case "chat.update":
		if b = f.buckets["update"]; b == nil {
			b = &tokenBucket{rate: updatesPerMinute / 60, burst: updateBurst}
			f.buckets["update"] = b
		}
	case "conversations.history":
		if b = f.buckets["history"]; b == nil {
			b = &tokenBucket{rate: historyPerMinute / 60, burst: historyBurst}
			f.buckets["history"] = b
		}
	case "views.publish":
		if b = f.buckets["publish"]; b == nil {
			b = &tokenBucket{rate: publishesPerMinute / 60, burst: publishBurst}
			f.buckets["publish"] = b
		}
	default:
		return -1
	}
	wait := b.spend(f.now())
	if wait == 0 {
		return -1
	}
	return max(1, int(math.Ceil(wait.Seconds())))
}
