package relay

import (
	"context"
	"sync"
)

// capacity is the worker's places for claude processes: at most max
// sessions hold one, and a process waiting between turns gives way to a
// new session rather than keep it waiting. It owns its lock and knows
// nothing of processes: the session loop tells it when its process may
// give way (markIdle) and when it may not (markBusy).
type capacity struct {
	max int

	mu      sync.Mutex
	slots   map[*slot]struct{} // the places in use, at most max not evicting
	idleSeq uint64
	changed chan struct{} // closed and replaced whenever a slot changes
}

// slot is one place in the worker's capacity: a claimed session, from the
// claim until its process has exited. Its fields are guarded by
// capacity.mu, except id, evict and exited, which never change.
type slot struct {
	id string
	// idle: the process waits between turns and may give way. A slot
	// whose process is starting, running a turn (a request may be
	// pending) or stopping is not idle and is never evicted.
	idle bool
	// idleSeq orders idle slots: the smallest went idle first.
	idleSeq uint64
	// evicting: chosen to make room; evict is closed to tell its session
	// loop, which stops the process and sends it nothing more.
	evicting bool
	evict    chan struct{}
	// exited is closed when the slot's process has exited (or it never
	// got one): the session that evicted it starts its process then.
	exited chan struct{}
	gone   bool
	// waiting counts the process's can_use_tool requests waiting for a
	// decision (Sessions reports the slot as waiting while it is above 0).
	waiting int
}

func newCapacity(max int) *capacity {
	return &capacity{max: max, slots: make(map[*slot]struct{}), changed: make(chan struct{})}
}

// roomLocked says whether a session can be admitted now, and which idle
// slot must make room for it (nil when there is a free place). Evicting
// slots are already counted for the session that evicted them.
func (c *capacity) roomLocked() (bool, *slot) {
	held := 0
	for sl := range c.slots {
		if !sl.evicting {
			held++
		}
	}
	if held < c.max {
		return true, nil
	}
	var victim *slot
	for sl := range c.slots {
		if sl.idle && !sl.evicting && (victim == nil || sl.idleSeq < victim.idleSeq) {
			victim = sl
		}
	}
	return victim != nil, victim
}

// changedLocked wakes everyone waiting for the room to change.
func (c *capacity) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitRoom blocks until there is room (want) or there is none (!want),
// recomputed whenever a slot changes: no polling.
func (c *capacity) waitRoom(ctx context.Context, want bool) error {
	for {
		c.mu.Lock()
		room, _ := c.roomLocked()
		changed := c.changed
		c.mu.Unlock()
		if room == want {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admit takes a place for session id, evicting the longest-idle slot when
// all places are held. It returns a nil slot when there is no room, and
// the victim (nil when none), whose exited channel the new session must
// wait for before it starts a process. The new slot is not idle.
func (c *capacity) admit(id string) (sl, victim *slot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room, victim := c.roomLocked()
	if !room {
		return nil, nil
	}
	if victim != nil {
		victim.evicting = true
		close(victim.evict)
	}
	sl = &slot{id: id, evict: make(chan struct{}), exited: make(chan struct{})}
	c.slots[sl] = struct{}{}
	c.changedLocked()
	return sl, victim
}

// markBusy records that the slot's process may not give way: a message is
// about to be sent, a turn runs, or it is stopping. It reports false when
// the slot is being evicted: no message must be sent, since the process is
// going away to make room.
func (c *capacity) markBusy(sl *slot) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl.evicting {
		return false
	}
	if sl.idle {
		sl.idle = false
		c.changedLocked()
	}
	return true
}

// markIdle records that the slot's turn ended: its process may now give
// way to a new session.
func (c *capacity) markIdle(sl *slot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !sl.idle && !sl.gone {
		c.idleSeq++
		sl.idle, sl.idleSeq = true, c.idleSeq
		c.changedLocked()
	}
}

// drop frees the slot's place once its process has exited. Calling it
// again does nothing.
func (c *capacity) drop(sl *slot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sl.gone {
		return
	}
	sl.gone, sl.idle = true, false
	delete(c.slots, sl)
	close(sl.exited)
	c.changedLocked()
}

// wait records that one more (delta 1) or one fewer (delta -1) of the
// slot's requests waits for a decision.
func (c *capacity) wait(sl *slot, delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sl.waiting += delta
}

// Session states as Worker.Sessions reports them.
const (
	// SessionsRunning: a process starting, running a turn or stopping,
	// with no request waiting for a person.
	SessionsRunning = "running"
	// SessionsWaiting: a process mid-turn with a request waiting for a
	// decision.
	SessionsWaiting = "waiting"
	// SessionsIdle: a process between turns, kept for a follow-up.
	SessionsIdle = "idle"
)

// counts says how many slots are in each of the states above. A slot
// being evicted still has its idle process until it exits.
func (c *capacity) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[string]int{SessionsRunning: 0, SessionsWaiting: 0, SessionsIdle: 0}
	for sl := range c.slots {
		switch {
		case sl.idle || sl.evicting:
			n[SessionsIdle]++
		case sl.waiting > 0:
			n[SessionsWaiting]++
		default:
			n[SessionsRunning]++
		}
	}
	return n
}
