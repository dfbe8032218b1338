package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// decisionHub fans decisions out to WaitDecision callers over one pattern
// subscription per Store, so waiting requests hold no Redis connection each.
//
// No decision is missed: a waiter registers before it reads the request, so a
// decision is either visible to that read or published after it, when the
// subscription (confirmed before the first waiter registers) delivers it.
// A waiter registered by CreateRequest before the request existed (expect)
// needs no read: no decision can precede it. When the pub/sub connection
// drops, messages published meanwhile are lost; go-redis resubscribes on
// reconnect, and on every subscription confirmation the hub reads the
// decision of every waiter again.
type decisionHub struct {
	s  *Store
	ps *redis.PubSub

	mu      sync.Mutex
	waiters map[string]map[chan waitResult]struct{}
	// expected holds the waiters CreateRequest registered for the
	// WaitDecision that usually follows; expectedQ the same, oldest first,
	// so those nobody took are dropped after expectTTL.
	expected  map[string]expectation
	expectedQ []expectation
}

// expectation is a waiter registered ahead of its WaitDecision.
type expectation struct {
	id string
	ch chan waitResult
	at time.Time
}

// expectTTL is how long a waiter CreateRequest registered waits for its
// WaitDecision to take it (a worker waits at once; a test or a caller that
// never waits leaves it); a later WaitDecision reads the request, as any
// other does. Short, as the queue of them is as long as the requests
// created within it.
const expectTTL = 10 * time.Second

type waitResult struct {
	d   store.Decision
	err error
}

const (
	receiveTimeout = 30 * time.Second // a quiet connection is pinged this often
	recheckTimeout = 5 * time.Second
)

// hub returns the Store's decision hub, subscribing on first use.
func (s *Store) hub(ctx context.Context) (*decisionHub, error) {
	s.hubMu.Lock()
	defer s.hubMu.Unlock()
	if s.decisions != nil {
		return s.decisions, nil
	}
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	sctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	h, err := startDecisionHub(sctx, s)
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	s.decisions = h
	return h, nil
}

// startDecisionHub subscribes, waits for Redis to confirm the subscription
// (until ctx's deadline) and starts the listener (owned by s.wg).
func startDecisionHub(ctx context.Context, s *Store) (*decisionHub, error) {
	h := &decisionHub{s: s, ps: s.rdb.PSubscribe(ctx), waiters: map[string]map[chan waitResult]struct{}{},
		expected: map[string]expectation{}}
	if err := h.ps.PSubscribe(ctx, s.keys.decidedPattern()); err != nil {
		_ = h.ps.Close()
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	msg, err := h.ps.ReceiveTimeout(ctx, time.Until(deadline))
	if err != nil {
		_ = h.ps.Close()
		return nil, err
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		_ = h.ps.Close()
		return nil, fmt.Errorf("unexpected pub/sub reply %T", msg)
	}
	s.wg.Add(1)
	go h.run()
	return h, nil
}

func (h *decisionHub) close() error { return h.ps.Close() }

// run reads the subscription until the Store closes.
func (h *decisionHub) run() {
	defer h.s.wg.Done()
	ctx := h.s.ctx
	delay := 50 * time.Millisecond
	needRecheck := false
	for {
		if needRecheck {
			needRecheck = h.recheck() != nil
		}
		timeout := receiveTimeout
		if needRecheck {
			timeout = blockTimeout
		}
		msg, err := h.ps.ReceiveTimeout(ctx, timeout)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Quiet: a ping shows whether the connection still works; a
				// broken one is replaced by go-redis on the next read.
				_ = h.ps.Ping(ctx)
				continue
			}
			if h.s.backoff(ctx, &delay) != nil {
				return
			}
			continue
		}
		delay = 50 * time.Millisecond
		switch m := msg.(type) {
		case *redis.Subscription:
			// (Re)subscribed: decisions published while we were not
			// subscribed are only visible by reading them.
			needRecheck = true
		case *redis.Message:
			id, ok := h.s.keys.requestIDFromChannel(m.Channel)
			if !ok {
				continue
			}
			var d store.Decision
			if err := json.Unmarshal([]byte(m.Payload), &d); err != nil {
				// Not ours to drop silently: let the waiters read it.
				needRecheck = true
				continue
			}
			h.deliver(id, waitResult{d: d})
		}
	}
}

// recheck reads the decision of every waited-for request and delivers those
// that are settled (or gone).
func (h *decisionHub) recheck() error {
	h.mu.Lock()
	ids := make([]string, 0, len(h.waiters))
	for id := range h.waiters {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(h.s.ctx, recheckTimeout)
	defer cancel()
	pipe := h.s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, h.s.keys.request(id), "body", "decision")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	for i, cmd := range cmds {
		if res, settled := decisionFromFields(ids[i], cmd.Val()); settled {
			h.deliver(ids[i], res)
		}
	}
	return nil
}

// decisionFromFields interprets HMGET body decision: settled reports whether
// waiting is over (a decision, or the request is gone).
func decisionFromFields(id string, vals []any) (res waitResult, settled bool) {
	if len(vals) != 2 || vals[0] == nil {
		return waitResult{err: store.ErrNotFound}, true
	}
	raw, ok := vals[1].(string)
	if !ok {
		return waitResult{}, false
	}
	var d store.Decision
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return waitResult{err: fmt.Errorf("decode decision of %s: %w", id, err)}, true
	}
	return waitResult{d: d}, true
}

func (h *decisionHub) register(id string) (<-chan waitResult, func()) {
	ch := make(chan waitResult, 1)
	h.mu.Lock()
	h.addLocked(id, ch)
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		h.removeLocked(id, ch)
		h.mu.Unlock()
	}
}

func (h *decisionHub) addLocked(id string, ch chan waitResult) {
	set := h.waiters[id]
	if set == nil {
		set = map[chan waitResult]struct{}{}
		h.waiters[id] = set
	}
	set[ch] = struct{}{}
}

func (h *decisionHub) removeLocked(id string, ch chan waitResult) {
	set := h.waiters[id]
	delete(set, ch)
	if len(set) == 0 {
		delete(h.waiters, id)
	}
}

// expect registers a waiter for request id before CreateRequest stores it,
// for the WaitDecision that usually follows to take (take). drop removes
// it again should the creation fail.
func (h *decisionHub) expect(id string) (drop func()) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(h.expectedQ) > 0 && now.Sub(h.expectedQ[0].at) > expectTTL {
		h.dropLocked(h.expectedQ[0])
		h.expectedQ = h.expectedQ[1:]
	}
	if _, dup := h.expected[id]; dup {
		return func() {} // a second creation of one id, which fails
	}
	e := expectation{id: id, ch: make(chan waitResult, 1), at: now}
	h.addLocked(id, e.ch)
	h.expected[id] = e
	h.expectedQ = append(h.expectedQ, e)
	return func() {
		h.mu.Lock()
		h.dropLocked(e)
		h.mu.Unlock()
	}
}

// dropLocked removes e unless it was taken (or replaced) already.
func (h *decisionHub) dropLocked(e expectation) {
	if cur, ok := h.expected[e.id]; ok && cur.ch == e.ch {
		delete(h.expected, e.id)
		h.removeLocked(e.id, e.ch)
	}
}

// take hands over the waiter expect registered for id, if it is still
// there, with its unregister.
func (h *decisionHub) take(id string) (<-chan waitResult, func(), bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.expected[id]
	if !ok {
		return nil, nil, false
	}
	delete(h.expected, id)
	return e.ch, func() {
		h.mu.Lock()
		h.removeLocked(id, e.ch)
		h.mu.Unlock()
	}, true
}

func (h *decisionHub) deliver(id string, res waitResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[id] {
		select {
		case ch <- res:
		default: // already has its answer
		}
	}
}

// WaitDecision implements store.Requests. The waiter CreateRequest
// registered for the request, when this Store created it, needs no read.
func (s *Store) WaitDecision(ctx context.Context, id string) (store.Decision, error) {
	if err := s.stopped(ctx); err != nil {
		return store.Decision{}, s.wrapStopped("wait decision "+id, err)
	}
	var res waitResult
	settled := false
	ch, unregister, expected := s.takeExpected(id)
	if !expected {
		var err error
		ch, unregister, res, settled, err = s.registerAndRead(ctx, id)
		if err != nil {
			return store.Decision{}, s.wrapStopped("wait decision "+id, err)
		}
	}
	defer unregister()
	if !settled {
		select {
		case res = <-ch:
		case <-ctx.Done():
			return store.Decision{}, ctx.Err()
		case <-s.ctx.Done():
			return store.Decision{}, fmt.Errorf("redisstore: wait decision %s: %w", id, ErrClosed)
		}
	}
	if res.err != nil {
		return store.Decision{}, fmt.Errorf("redisstore: wait decision %s: %w", id, res.err)
	}
	return res.d, nil
}

// takeExpected takes the waiter CreateRequest registered for id, if any.
func (s *Store) takeExpected(id string) (<-chan waitResult, func(), bool) {
	s.hubMu.Lock()
	h := s.decisions
	s.hubMu.Unlock()
	if h == nil {
		return nil, nil, false
	}
	return h.take(id)
}

// registerAndRead registers a waiter for id and then reads the request:
// settled reports whether waiting is over already (res says how). While
// Redis is unreachable it keeps trying, as a person may still decide once
// it is back; err is why it stopped (ctx's end, or the Store's), and then
// nothing stays registered.
func (s *Store) registerAndRead(ctx context.Context, id string) (ch <-chan waitResult, unregister func(), res waitResult, settled bool, err error) {
	delay := 50 * time.Millisecond
	for {
		h, err := s.hub(ctx)
		if err == nil {
			if ch == nil {
				ch, unregister = h.register(id)
			}
			var vals []any
			if vals, err = s.rdb.HMGet(ctx, s.keys.request(id), "body", "decision").Result(); err == nil {
				res, settled = decisionFromFields(id, vals)
				return ch, unregister, res, settled, nil
			}
		}
		stopErr := s.stopped(ctx)
		if stopErr == nil {
			stopErr = s.backoff(ctx, &delay)
		}
		if stopErr != nil {
			if unregister != nil {
				unregister()
			}
			return nil, nil, res, false, stopErr
		}
	}
}

// wrapStopped returns ctx.Err() unwrapped (callers compare it with ==) and
// wraps ErrClosed with what was being done.
func (s *Store) wrapStopped(what string, err error) error {
	if errors.Is(err, ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w", what, err)
	}
	return err
}
