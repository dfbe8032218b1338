package bot

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// A live message is one message the bot keeps showing the newest state of:
// a session's status line, a turn's folded progress. The first state is
// posted (after delay); every later one edits it, at most once per
// LiveEditInterval, and only the newest state waiting is sent. Both ride in
// the progress lane.
type liveMsg struct {
	key     string
	ref     store.MessageRef // where it is, once posted
	post    *op              // the first post, queued or in flight
	sending bool             // post is in flight
	next    *outMsg          // state given while the first post was in flight
	nextLog zerolog.Logger
	final   bool // forget the key once the last state is out
	posted  func(store.MessageRef)
}

// liveSpec says which live message a state belongs to.
type liveSpec struct {
	key               string
	channel, threadTS string
	ref               store.MessageRef // posted already (by an earlier run, another replica)
	delay             time.Duration    // before the first post
	final             bool             // this is the last state: forget the key after it
	flush             bool             // a first post still queued goes now, ahead of the results lane
	posted            func(store.MessageRef)
}

// Live shows m as the newest state of the live message spec names. An
// empty m means "nothing to show": a first post still queued is withdrawn,
// a posted message keeps what it shows.
func (o *outbox) Live(log zerolog.Logger, spec liveSpec, m outMsg) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	lm := o.live[spec.key]
	if lm == nil {
		lm = &liveMsg{key: spec.key, posted: spec.posted}
		o.live[spec.key] = lm
	}
	if lm.ref.IsZero() {
		lm.ref = spec.ref
	}
	lm.final = lm.final || spec.final
	switch {
	case !lm.ref.IsZero():
		if !m.empty() {
			o.enqueueLocked(&op{kind: opUpdate, lane: laneProgress, channel: lm.ref.Channel, ts: lm.ref.TS, msg: m, log: log, minGap: o.budget.LiveEditInterval})
		}
		o.forgetLocked(lm)
	case lm.post != nil && !lm.sending:
		if m.empty() {
			o.withdrawLocked(lm.post)
			lm.post = nil
			o.forgetLocked(lm)
			break
		}
		lm.post.msg, lm.post.log = m, log
		if spec.flush {
			o.withdrawLocked(lm.post)
			lm.post.lane, lm.post.notBefore = laneResult, time.Time{}
			o.enqueueLocked(lm.post)
		}
	case lm.post != nil:
		if !m.empty() {
			lm.next, lm.nextLog = &m, log
		}
	case m.empty():
		o.forgetLocked(lm)
	default:
		lm.post = &op{kind: opPost, lane: laneProgress, channel: spec.channel, threadTS: spec.threadTS, msg: m, log: log,
			notBefore: o.clock.Now().Add(spec.delay), live: lm}
		o.enqueueLocked(lm.post)
	}
	o.mu.Unlock()
	o.poke()
}

// livePosted reports whether the live message key names is known to be in
// Slack already (posted by this outbox, or given a ref with an earlier
// state): Live then edits it there, whatever ref a later spec gives.
func (o *outbox) livePosted(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	lm := o.live[key]
	return lm != nil && !lm.ref.IsZero()
}

// forgetLocked drops a live message whose last state is out or withdrawn.
func (o *outbox) forgetLocked(lm *liveMsg) {
	if lm.final && lm.post == nil && o.live[lm.key] == lm {
		delete(o.live, lm.key)
	}
}

// withdrawLocked takes a queued post off its lane.
func (o *outbox) withdrawLocked(p *op) {
	cs := o.chans[p.channel]
	q := cs.lanes[p.lane]
	for i, x := range q {
		if x == p {
			cs.lanes[p.lane] = append(q[:i:i], q[i+1:]...)
			return
		}
	}
}

// livePostedLocked records where a live message's first post went and
// queues the state given meanwhile. It returns the posted callback to run
// once the lock is released.
func (o *outbox) livePostedLocked(p *op, r opResult) func() {
	lm := p.live
	lm.post, lm.sending = nil, false
	if r.err != nil {
		// The next state posts it again.
		return nil
	}
	lm.ref = store.MessageRef{Channel: p.channel, TS: r.ts}
	if lm.next != nil {
		o.enqueueLocked(&op{kind: opUpdate, lane: laneProgress, channel: lm.ref.Channel, ts: lm.ref.TS, msg: *lm.next, log: lm.nextLog, minGap: o.budget.LiveEditInterval})
		lm.next = nil
	}
	o.forgetLocked(lm)
	posted, ref := lm.posted, lm.ref
	if posted == nil {
		return nil
	}
	return func() { posted(ref) }
}
