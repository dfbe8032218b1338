package bot

import (
	"sync"
	"time"
)

// dedupWindow covers Slack's Events API retries (immediately, after about
// a minute and about five minutes).
const dedupWindow = 10 * time.Minute

// dedup remembers recently seen event ids so a retried delivery (HTTP
// retries, or Socket Mode redelivering on another connection) runs once.
// It is per process: replicas behind a load balancer each keep their own.
type dedup struct {
	clock  Clock
	window time.Duration

	mu   sync.Mutex
	seen map[string]time.Time
	last time.Time // last sweep
}

func newDedup(clock Clock, window time.Duration) *dedup {
	return &dedup{clock: clock, window: window, seen: map[string]time.Time{}}
}

// first reports whether id has not been seen within the window, and
// remembers it. An empty id is always new.
func (d *dedup) first(id string) bool {
	if id == "" {
		return true
	}
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Sub(d.last) > d.window {
		for k, at := range d.seen {
			if now.Sub(at) > d.window {
				delete(d.seen, k)
			}
		}
		d.last = now
	}
	if at, ok := d.seen[id]; ok && now.Sub(at) <= d.window {
		return false
	}
	d.seen[id] = now
	return true
}
