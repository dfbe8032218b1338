package outbox

import (
	"math"
	"time"
)

// Slack's budgets as the outbox models them. Every figure is Slack's own
// (docs.slack.dev/apis/web-api/rate-limits): chat.postMessage "generally
// allows one message per second per channel" and tolerates short bursts;
// chat.update is a Tier 3 method, "50+ per minute" per workspace, bursts
// allowed, and does not spend the channel's post budget; a 429's
// Retry-After is the authoritative word and overrides both. The bursts are
// our choice, kept small so that a fake or real Slack that tolerates less
// still rarely answers 429.
const (
	DefaultPostsPerSecond   = 1.0
	DefaultPostBurst        = 4
	DefaultUpdatesPerMinute = 50.0
	DefaultUpdateBurst      = 20
	// DefaultLiveEditInterval is the least time between two edits of a
	// live message (status line, folded progress): Slack's guidance for
	// messages updated in place is about one edit every 3 seconds, each
	// carrying every change since the last.
	DefaultLiveEditInterval = 3 * time.Second
	// DefaultProgressDelay holds the first post of a turn's progress
	// message back, so a tool use that turns out to need a card (its
	// request follows within milliseconds) costs no write of its own.
	DefaultProgressDelay = time.Second
)

// Budgets are the Slack Web API budgets the outbox spends. Zero fields take
// the defaults above.
type Budgets struct {
	PostsPerSecond   float64 // chat.postMessage per channel
	PostBurst        int     // posts a quiet channel may send at once
	UpdatesPerMinute float64 // chat.update per workspace
	UpdateBurst      int     // edits the workspace may send at once
	LiveEditInterval time.Duration
	ProgressDelay    time.Duration
	// Unlimited turns the model off: no budgets, no live-edit interval,
	// no progress delay. Only for tests whose subject is not timing, and
	// which say why.
	Unlimited bool
}

func (b Budgets) withDefaults() Budgets {
	if b.PostsPerSecond <= 0 {
		b.PostsPerSecond = DefaultPostsPerSecond
	}
	if b.PostBurst <= 0 {
		b.PostBurst = DefaultPostBurst
	}
	if b.UpdatesPerMinute <= 0 {
		b.UpdatesPerMinute = DefaultUpdatesPerMinute
	}
	if b.UpdateBurst <= 0 {
		b.UpdateBurst = DefaultUpdateBurst
	}
	if b.LiveEditInterval <= 0 {
		b.LiveEditInterval = DefaultLiveEditInterval
	}
	if b.ProgressDelay <= 0 {
		b.ProgressDelay = DefaultProgressDelay
	}
	if b.Unlimited {
		b.PostsPerSecond, b.UpdatesPerMinute = math.Inf(1), math.Inf(1)
		b.LiveEditInterval, b.ProgressDelay = 0, 0
	}
	return b
}

// Lane is a write's priority. A lower lane never takes the budget a higher
// one may need next: each lane must leave tokens in the bucket for the
// lanes above it (see need).
type Lane int

const (
	LaneCard     Lane = iota // a new card, a card's outcome: someone waits on it
	LaneReach                // a card's announcements, reminders and their outcomes
	LaneResult               // what Claude said, the end of a turn, errors
	LaneProgress             // the status line and the folded progress of a turn
	LaneAudit                // the audit channel's lines: a record, read later
	numLanes
)

// String names l in metrics.
func (l Lane) String() string {
	switch l {
	case LaneCard:
		return "card"
	case LaneReach:
		return "reach"
	case LaneResult:
		return "result"
	case LaneProgress:
		return "progress"
	default:
		return "audit"
	}
}

// Bucket is a token bucket: rate tokens a second, at most burst kept. The
// outbox spends one per budget, lane by lane; the bot paces its own calls
// (App Home publishes, API tokens) with one of its own.
type Bucket struct {
	rate   float64
	burst  float64
	tokens float64
	at     time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int) Bucket {
	return Bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

func (b *Bucket) refill(now time.Time) {
	if !b.at.IsZero() && now.After(b.at) {
		b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
	}
	if b.at.IsZero() || now.After(b.at) {
		b.at = now
	}
}

// need is how many tokens l must find in the bucket to spend one: cards
// need one, each lower lane leaves a quarter of the burst more behind for
// the lanes above it. Reach shares the results' reserve: it goes first of
// the two, and neither takes what a card needs.
func (b *Bucket) need(l Lane) float64 {
	step := math.Max(1, math.Floor(b.burst/4))
	rank := float64(l)
	if l > LaneCard {
		rank--
	}
	return math.Min(1+rank*step, b.burst)
}

// take spends a token for l if the bucket holds enough.
func (b *Bucket) take(now time.Time, l Lane) bool {
	if math.IsInf(b.rate, 1) {
		return true
	}
	b.refill(now)
	if b.tokens < b.need(l) {
		return false
	}
	b.tokens--
	return true
}

// readyAt is when take(l) can succeed, nothing else spending meanwhile.
func (b *Bucket) readyAt(now time.Time, l Lane) time.Time {
	b.refill(now)
	missing := b.need(l) - b.tokens
	if missing <= 0 {
		return now
	}
	return now.Add(time.Duration(missing / b.rate * float64(time.Second)))
}

// Take spends a token if the bucket holds one.
func (b *Bucket) Take(now time.Time) bool { return b.take(now, LaneCard) }

// ReadyAt is when Take can succeed, nothing else spending meanwhile.
func (b *Bucket) ReadyAt(now time.Time) time.Time { return b.readyAt(now, LaneCard) }
