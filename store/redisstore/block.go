package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// blocker runs a caller's blocking reads (BLMOVE, XREADGROUP BLOCK) on one
// connection of the pool that can be woken: go-redis does not abort a read
// when its context is cancelled, so when ctx ends or the Store closes, the
// blocker sends CLIENT UNBLOCK for that connection and the read returns at
// once instead of at the end of its timeout.
type blocker struct {
	conn  *redis.Conn
	stops []func() bool
}

// newBlocker makes a blocker for reads of key (on a cluster, on its node).
func (s *Store) newBlocker(ctx context.Context, key string) (*blocker, error) {
	node, err := s.nodeFor(ctx, key)
	if err != nil {
		return nil, err
	}
	conn := node.Conn()
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	unblock := func() {
		uctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// Fails harmlessly when the Store is closed: closing the pool has
		// already broken the read.
		_ = node.ClientUnblock(uctx, id).Err()
	}
	return &blocker{conn: conn, stops: []func() bool{
		context.AfterFunc(ctx, unblock),
		context.AfterFunc(s.ctx, unblock),
	}}, nil
}

func (b *blocker) close() {
	for _, stop := range b.stops {
		stop()
	}
	_ = b.conn.Close()
}

// blockFor is how long the next blocking read may wait: blockTimeout, or less
// when ctx's deadline comes sooner.
func blockFor(ctx context.Context) time.Duration {
	d := blockTimeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return max(d, time.Millisecond)
}

// blmove waits up to d for src to have an element and moves it (BLMOVE with
// a fractional timeout, which go-redis's typed call rounds up to seconds).
// It returns redis.Nil when the wait ends empty or is unblocked.
func (b *blocker) blmove(ctx context.Context, src, dst, from, to string, d time.Duration) (string, error) {
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	return b.conn.Do(ctx, "blmove", src, dst, from, to, secs).Text()
}

// listWaiter is the blocker of a loop that waits on a list again and again:
// made on the first wait and replaced after a failed one, whose connection
// may be broken. The loop's owner closes it.
type listWaiter struct {
	st      *Store
	blocker *blocker
}

// blmove is blocker.blmove for up to blockFor(ctx); redis.Nil means the wait
// ended empty.
func (w *listWaiter) blmove(ctx context.Context, src, dst, from, to string) (string, error) {
	if w.blocker == nil {
		b, err := w.st.newBlocker(ctx, src)
		if err != nil {
			return "", err
		}
		w.blocker = b
	}
	v, err := w.blocker.blmove(ctx, src, dst, from, to, blockFor(ctx))
	if err != nil && !errors.Is(err, redis.Nil) {
		w.close() // take a fresh connection next time
	}
	return v, err
}

func (w *listWaiter) close() {
	if w.blocker != nil {
		w.blocker.close()
		w.blocker = nil
	}
}
