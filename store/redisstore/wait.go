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
// subscription (confirmed in New) delivers it. When the pub/sub connection
// drops, messages published meanwhile are lost; go-redis resubscribes on
// reconnect, and on every subscription confirmation the hub reads the
// decision of every waiter again.
type decisionHub struct {
	s  *Store
	ps *redis.PubSub

	mu      sync.Mutex
	waiters map[string]map[chan waitResult]struct{}
}

type waitResult struct {
	d   store.Decision
	err error
}

const (
	receiveTimeout = 30 * time.Second // a quiet connection is pinged this often
	recheckTimeout = 5 * time.Second
)

// startDecisionHub subscribes, waits for Redis to confirm the subscription
// and starts the listener (owned by s.wg).
func startDecisionHub(ctx context.Context, s *Store) (*decisionHub, error) {
	h := &decisionHub{s: s, ps: s.rdb.PSubscribe(ctx), waiters: map[string]map[chan waitResult]struct{}{}}
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
	set := h.waiters[id]
	if set == nil {
		set = map[chan waitResult]struct{}{}
		h.waiters[id] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(set, ch)
		if len(h.waiters[id]) == 0 {
			delete(h.waiters, id)
		}
		h.mu.Unlock()
	}
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

// WaitDecision implements store.Requests.
func (s *Store) WaitDecision(ctx context.Context, id string) (store.Decision, error) {
	if err := s.stopped(ctx); err != nil {
		return store.Decision{}, s.wrapStopped("wait decision "+id, err)
	}
	ch, unregister := s.decisions.register(id)
	defer unregister()
	var vals []any
	delay := 50 * time.Millisecond
	for {
		var err error
		vals, err = s.rdb.HMGet(ctx, s.keys.request(id), "body", "decision").Result()
		if err == nil {
			break
		}
		// Redis is unreachable: keep waiting, as a person may still decide
		// once it is back.
		if stopErr := s.stopped(ctx); stopErr != nil {
			return store.Decision{}, s.wrapStopped("wait decision "+id, stopErr)
		}
		if stopErr := s.backoff(ctx, &delay); stopErr != nil {
			return store.Decision{}, s.wrapStopped("wait decision "+id, stopErr)
		}
	}
	res, settled := decisionFromFields(id, vals)
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

// wrapStopped returns ctx.Err() unwrapped (callers compare it with ==) and
// wraps ErrClosed with what was being done.
func (s *Store) wrapStopped(what string, err error) error {
	if errors.Is(err, ErrClosed) {
		return fmt.Errorf("redisstore: %s: %w", what, err)
	}
	return err
}
