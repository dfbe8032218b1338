package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// batch is how many entries Consume reads per call.
const batch = 32

// ackTimeout bounds the acknowledgement sent after a handler returned; it
// runs even when the caller's ctx has just ended, so finished work is not
// delivered again.
const ackTimeout = 5 * time.Second

// Publish implements store.Bus.
func (s *Store) Publish(ctx context.Context, e store.Event) (string, error) {
	if err := e.Validate(); err != nil {
		return "", fmt.Errorf("redisstore: publish %s: %w", e.Type, err)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	e.ID = ""
	b, err := json.Marshal(e)
	if err != nil {
		return "", fmt.Errorf("redisstore: publish %s: %w", e.Type, err)
	}
	id, err := s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.keys.events(), MaxLen: s.cfg.eventsMaxLen, Approx: true, Values: []any{"e", b},
	}).Result()
	if err != nil {
		return "", fmt.Errorf("redisstore: publish %s: %w", e.Type, err)
	}
	return id, nil
}

// Consume implements store.Bus with a Streams consumer group. Each round it
// delivers, in this order:
//
//  1. its own entries whose handler failed, once they have waited
//     store.RedeliveryDelay (XPENDING for the consumer, then XCLAIM to bump
//     the delivery count);
//  2. entries another consumer left unacknowledged for claimIdle: that
//     consumer is presumed dead (XAUTOCLAIM);
//  3. new entries (XREADGROUP >, blocking up to blockTimeout, less when a
//     retry falls due sooner).
//
// An entry is acknowledged when fn returns nil, and also when it has been
// delivered store.MaxDeliveries times, so a poisoned event cannot stall the
// group.
func (s *Store) Consume(ctx context.Context, group, consumer string, fn func(context.Context, store.Event) error) error {
	if group == "" || consumer == "" {
		return fmt.Errorf("redisstore: consume: group and consumer required: %w", store.ErrInvalid)
	}
	c := &consumerLoop{st: s, group: group, consumer: consumer, fn: fn, cursor: "0-0"}
	c.ownPending.Store(true)
	defer c.dropBlocker()
	delay := 50 * time.Millisecond
	created := false
	for {
		if err := s.stopped(ctx); err != nil {
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("redisstore: consume %s/%s: %w", group, consumer, err)
			}
			return nil
		}
		var err error
		if !created {
			err = c.createGroup(ctx)
			created = err == nil
		}
		if err == nil {
			err = c.round(ctx)
		}
		if err == nil {
			delay = 50 * time.Millisecond
			continue
		}
		if isNoGroup(err) {
			created = false // the stream or group was deleted: make it again
		}
		c.dropBlocker() // its connection may be broken: take a fresh one
		if s.stopped(ctx) != nil {
			continue
		}
		_ = s.backoff(ctx, &delay)
	}
}

func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

type consumerLoop struct {
	st              *Store
	group, consumer string
	fn              func(context.Context, store.Event) error
	cursor          string   // XAUTOCLAIM's position
	blocker         *blocker // for XREADGROUP BLOCK; nil until needed

	// ownPending: entries of this consumer may be pending (a failed
	// handler, or a previous life under the same name), so look for them.
	// Set by the handlers of a batch, which run side by side.
	ownPending atomic.Bool
	// nextSweep is when abandoned entries are next looked for.
	nextSweep time.Time
}

func (c *consumerLoop) dropBlocker() {
	if c.blocker != nil {
		c.blocker.close()
		c.blocker = nil
	}
}

// createGroup makes the group at the stream's start ("0"): it receives every
// entry still in the stream, so events published before the first consumer
// ran are not lost. An existing group keeps its position.
func (c *consumerLoop) createGroup(ctx context.Context) error {
	err := c.st.rdb.XGroupCreateMkStream(ctx, c.st.keys.events(), c.group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("redisstore: consume: create group %s: %w", c.group, err)
	}
	return nil
}

// round runs one round of the three sources above: the first that has
// entries delivers them, and the round ends.
func (c *consumerLoop) round(ctx context.Context) error {
	// Bounded by claimIdle too, so entries abandoned by a dead consumer are
	// picked up within about twice that.
	block := min(blockTimeout, c.st.cfg.claimIdle)
	if done, err := c.retryOwn(ctx, &block); done || err != nil {
		return err
	}
	if done, err := c.claimAbandoned(ctx, &block); done || err != nil {
		return err
	}
	return c.readNew(ctx, block)
}

// retryOwn delivers again this consumer's failed entries whose redelivery
// delay has passed. It shortens *block to when the next one is due, and
// reports whether it delivered anything.
func (c *consumerLoop) retryOwn(ctx context.Context, block *time.Duration) (bool, error) {
	if !c.ownPending.Load() {
		return false, nil
	}
	stream := c.st.keys.events()
	mine, err := c.st.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: c.group, Start: "-", End: "+", Count: batch, Consumer: c.consumer,
	}).Result()
	if err != nil {
		return false, err
	}
	c.ownPending.Store(len(mine) > 0)
	var due []string
	var minIdle time.Duration
	counts := map[string]int64{}
	for _, p := range mine {
		// Redis counts idle time in whole milliseconds, so an entry reported
		// idle for exactly the delay may be up to 1ms short of it: wait for
		// one more, and the delay is never cut short.
		wait := store.RedeliveryDelay(c.st.cfg.redeliveryDelay, int(p.RetryCount)) + time.Millisecond
		if p.Idle >= wait {
			due = append(due, p.ID)
			counts[p.ID] = p.RetryCount + 1 // XCLAIM below counts one more delivery
			if minIdle == 0 || wait < minIdle {
				minIdle = wait
			}
		} else {
			*block = min(*block, wait-p.Idle)
		}
	}
	if len(due) == 0 {
		return false, nil
	}
	msgs, err := c.st.rdb.XClaim(ctx, &redis.XClaimArgs{
		Stream: stream, Group: c.group, Consumer: c.consumer, MinIdle: minIdle, Messages: due,
	}).Result()
	if err != nil {
		return false, err
	}
	return true, c.handleAll(ctx, msgs, counts, 0)
}

// claimAbandoned takes over entries other consumers left pending, looked
// for every claimIdle/2 (and at once again while the scan has not reached
// the end). It shortens *block to the next scan and reports whether it
// delivered anything.
func (c *consumerLoop) claimAbandoned(ctx context.Context, block *time.Duration) (bool, error) {
	stream := c.st.keys.events()
	var msgs []redis.XMessage
	if now := time.Now(); !now.Before(c.nextSweep) {
		var cursor string
		var err error
		msgs, cursor, err = c.st.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: stream, Group: c.group, MinIdle: c.st.cfg.claimIdle, Start: c.cursor, Count: batch, Consumer: c.consumer,
		}).Result()
		if err != nil {
			return false, err
		}
		c.cursor = cursor
		if cursor == "0-0" {
			c.nextSweep = now.Add(c.st.cfg.claimIdle / 2)
		}
	}
	*block = min(*block, max(time.Until(c.nextSweep), 0))
	if len(msgs) == 0 {
		return false, nil
	}
	pend, err := c.st.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: stream, Group: c.group, Start: msgs[0].ID, End: msgs[len(msgs)-1].ID,
		Count: int64(len(msgs)) + batch, Consumer: c.consumer,
	}).Result()
	if err != nil {
		return false, err
	}
	counts := make(map[string]int64, len(pend))
	for _, p := range pend {
		counts[p.ID] = p.RetryCount
	}
	return true, c.handleAll(ctx, msgs, counts, 1)
}

// readNew waits up to block for entries no consumer of the group has seen.
func (c *consumerLoop) readNew(ctx context.Context, block time.Duration) error {
	if c.blocker == nil {
		b, err := c.st.newBlocker(ctx, c.st.keys.events())
		if err != nil {
			return err
		}
		c.blocker = b
	}
	streams, err := c.blocker.conn.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: c.group, Consumer: c.consumer, Streams: []string{c.st.keys.events(), ">"}, Count: batch,
		Block: max(min(block, blockFor(ctx)), time.Millisecond), // 0 would block forever
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, st := range streams {
		if err := c.handleAll(ctx, st.Messages, nil, 1); err != nil {
			return err
		}
	}
	return nil
}

// handleAll delivers msgs: each session's in log order, one after
// another, and different sessions' side by side, so an event whose handler
// waits (a bot waiting for Slack to take a write) holds up only its own
// session's, not the whole batch. counts gives each entry's deliveries, at
// least atLeast.
func (c *consumerLoop) handleAll(ctx context.Context, msgs []redis.XMessage, counts map[string]int64, atLeast int64) error {
	var order []string
	bySession := map[string][]redis.XMessage{}
	for _, m := range msgs {
		sid := sessionOf(m)
		if _, seen := bySession[sid]; !seen {
			order = append(order, sid)
		}
		bySession[sid] = append(bySession[sid], m)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, sid := range order {
		wg.Go(func() {
			for _, m := range bySession[sid] {
				if errs[i] = c.handle(ctx, m, max(counts[m.ID], atLeast)); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// sessionOf reads the session an entry's event belongs to; "" for one
// that does not decode (handle deals with it).
func sessionOf(m redis.XMessage) string {
	raw, _ := m.Values["e"].(string)
	var e struct {
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(raw), &e)
	return e.SessionID
}

// handle delivers one entry that has now been delivered `deliveries` times
// and acknowledges it when fn succeeds or the deliveries are used up. It
// returns only Redis errors; once ctx ends it stops delivering.
func (c *consumerLoop) handle(ctx context.Context, m redis.XMessage, deliveries int64) error {
	if ctx.Err() != nil {
		return nil // left pending: delivered again later, here or elsewhere
	}
	raw, _ := m.Values["e"].(string)
	var e store.Event
	if deliveries <= store.MaxDeliveries {
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			deliveries = store.MaxDeliveries + 1 // undecodable: no handler can use it
		}
	}
	failed := false
	if deliveries <= store.MaxDeliveries {
		e.ID = m.ID
		failed = c.fn(ctx, e) != nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	if failed && deliveries < store.MaxDeliveries {
		// Left pending for a later delivery. Its idle time counted from
		// when it was handed out; claiming it again (JUSTID: the delivery
		// count stays) restarts it now that fn has returned, the moment
		// the redelivery delay is counted from.
		c.ownPending.Store(true)
		err := c.st.rdb.XClaimJustID(actx, &redis.XClaimArgs{
			Stream: c.st.keys.events(), Group: c.group, Consumer: c.consumer, Messages: []string{m.ID},
		}).Err()
		if err != nil {
			return fmt.Errorf("redisstore: consume: hold %s for redelivery: %w", m.ID, err)
		}
		return nil
	}
	if err := c.st.rdb.XAck(actx, c.st.keys.events(), c.group, m.ID).Err(); err != nil {
		return fmt.Errorf("redisstore: consume: ack %s: %w", m.ID, err)
	}
	return nil
}
