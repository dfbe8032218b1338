package outbox

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// liveMsg is one live message (see the package comment).
type liveMsg struct {
	key     string
	ref     store.MessageRef // where it is, once posted
	post    *op              // the first post, queued or in flight
	sending bool             // post is in flight
	next    *Msg             // state given while the first post was in flight
	nextLog zerolog.Logger
	final   bool // forget the key once the last state is out
	posted  func(store.MessageRef)
}

// LiveSpec says which live message a state belongs to.
type LiveSpec struct {
	Key               string
	Channel, ThreadTS string
	Ref               store.MessageRef       // posted already (by an earlier run, another replica)
	DelayFirst        bool                   // the first post waits Budgets.ProgressDelay (a turn's progress)
	Final             bool                   // this is the last state: forget the key after it
	Flush             bool                   // a first post still queued goes now, ahead of the results lane
	Posted            func(store.MessageRef) // where the first post went, once Slack has it
}

// Live shows m as the newest state of the live message spec names. An
// empty m means "nothing to show": a first post still queued is withdrawn,
// a posted message keeps what it shows.
func (o *Outbox) Live(log zerolog.Logger, spec LiveSpec, m Msg) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	lm := o.live[spec.Key]
	if lm == nil {
		lm = &liveMsg{key: spec.Key, posted: spec.Posted}
		o.live[spec.Key] = lm
	}
	if lm.ref.IsZero() {
		lm.ref = spec.Ref
	}
	lm.final = lm.final || spec.Final
	switch {
	case !lm.ref.IsZero():
		if !m.empty() {
			o.enqueueLocked(&op{kind: opUpdate, lane: LaneProgress, channel: lm.ref.Channel, ts: lm.ref.TS, msg: m, log: log, minGap: o.budget.LiveEditInterval})
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
		if spec.Flush {
			o.withdrawLocked(lm.post)
			lm.post.lane, lm.post.notBefore = LaneResult, time.Time{}
			o.enqueueLocked(lm.post)
		}
	case lm.post != nil:
		if !m.empty() {
			lm.next, lm.nextLog = &m, log
		}
	case m.empty():
		o.forgetLocked(lm)
	default:
		lm.post = &op{kind: opPost, lane: LaneProgress, channel: spec.Channel, threadTS: spec.ThreadTS, msg: m, log: log,
			notBefore: o.clock.Now().Add(o.firstDelay(spec)), live: lm}
		o.enqueueLocked(lm.post)
	}
	o.mu.Unlock()
	o.poke()
}

// LivePosted reports whether the live message key names is known to be in
// Slack already (posted by this outbox, or given a ref with an earlier
// state): Live then edits it there, whatever ref a later spec gives.
func (o *Outbox) LivePosted(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	lm := o.live[key]
	return lm != nil && !lm.ref.IsZero()
}

// firstDelay is how long the first post of spec's message waits.
func (o *Outbox) firstDelay(spec LiveSpec) time.Duration {
	if spec.DelayFirst {
		return o.budget.ProgressDelay
	}
	return 0
}

// forgetLocked drops a live message whose last state is out or withdrawn.
func (o *Outbox) forgetLocked(lm *liveMsg) {
	if lm.final && lm.post == nil && o.live[lm.key] == lm {
		delete(o.live, lm.key)
	}
}

// withdrawLocked takes a queued post off its lane.
func (o *Outbox) withdrawLocked(p *op) {
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
func (o *Outbox) livePostedLocked(p *op, r Result) func() {
	lm := p.live
	lm.post, lm.sending = nil, false
	if r.Err != nil {
		// The next state posts it again.
		return nil
	}
	lm.ref = store.MessageRef{Channel: p.channel, TS: r.TS}
	if lm.next != nil {
		o.enqueueLocked(&op{kind: opUpdate, lane: LaneProgress, channel: lm.ref.Channel, ts: lm.ref.TS, msg: *lm.next, log: lm.nextLog, minGap: o.budget.LiveEditInterval})
		lm.next = nil
	}
	o.forgetLocked(lm)
	posted, ref := lm.posted, lm.ref
	if posted == nil {
		return nil
	}
	return func() { posted(ref) }
}
