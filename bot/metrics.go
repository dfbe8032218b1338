package bot

import (
	"errors"
	"sync"
	"time"
)

// Metrics receives what the bot measures. cmd/slackgate implements it with
// Prometheus, so this package needs no metrics library. Nil: nothing is
// measured.
type Metrics interface {
	// SlackCall is one Web API call the outbox made: its method, how long
	// it took, and its error (nil on success; a *slack.RateLimitedError
	// for a 429).
	SlackCall(method string, d time.Duration, err error)
	// OutboxWait is how long a write waited in its lane, from when it was
	// queued (or due, for a delayed progress post) until it was sent.
	OutboxWait(lane string, d time.Duration)
}

type noMetrics struct{}

func (noMetrics) SlackCall(string, time.Duration, error) {}
func (noMetrics) OutboxWait(string, time.Duration)       {}

func (l lane) String() string {
	switch l {
	case laneCard:
		return "card"
	case laneReach:
		return "reach"
	case laneResult:
		return "result"
	case laneProgress:
		return "progress"
	default:
		return "audit"
	}
}

// OutboxDepth counts the writes queued in each lane now, sent or not yet
// (a gauge read when scraped).
func (b *Bot) OutboxDepth() map[string]int {
	o := b.out
	depth := map[string]int{}
	o.mu.Lock()
	defer o.mu.Unlock()
	for l := range numLanes {
		n := len(o.edits[l])
		for _, cs := range o.chans {
			n += len(cs.lanes[l])
		}
		depth[l.String()] = n
	}
	return depth
}

// SlackReady reports whether the bot can talk to Slack: nil once auth.test
// passed and, in Socket Mode, while the connection is up; otherwise what is
// wrong. It reads the state Run keeps, and calls nothing, so a readiness
// probe costs Slack no request.
func (b *Bot) SlackReady() error { return b.conn.get() }

// connState is the bot's last known Slack connection state.
type connState struct {
	mu    sync.Mutex
	set   bool
	cause error
}

func (c *connState) get() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.set {
		return errors.New("not connected to Slack yet (auth.test pending)")
	}
	return c.cause
}

func (c *connState) to(cause error) {
	c.mu.Lock()
	c.set, c.cause = true, cause
	c.mu.Unlock()
}
