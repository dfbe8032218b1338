package outbox

import "time"

// Metrics receives what the outbox measures. Nil: nothing is measured.
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

// Depth counts the writes queued in each lane now, sent or not yet.
func (o *Outbox) Depth() map[string]int {
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
