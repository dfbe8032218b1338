package bot

import (
	"errors"
	"sync"

	"github.com/slackgate/slackgate/bot/outbox"
)

// Metrics receives what the bot measures: for now what its outbox
// measures (Slack calls, outbox waits). cmd/slackgate implements it with
// Prometheus, so this package needs no metrics library. Nil: nothing is
// measured.
type Metrics interface {
	outbox.Metrics
}

// OutboxDepth counts the writes queued in each lane now, sent or not yet
// (a gauge read when scraped).
func (b *Bot) OutboxDepth() map[string]int { return b.out.Depth() }

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
