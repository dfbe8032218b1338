package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// Enqueue implements store.Queue.
func (s *Store) Enqueue(ctx context.Context, in store.Input) (store.Input, error) {
	if err := in.Validate(); err != nil {
		return store.Input{}, fmt.Errorf("redisstore: enqueue: %w", err)
	}
	if in.At.IsZero() {
		in.At = time.Now()
	}
	if in.ID == "" {
		in.ID = newID()
	}
	b, err := json.Marshal(in)
	if err != nil {
		return store.Input{}, fmt.Errorf("redisstore: enqueue for %s: %w", in.SessionID, err)
	}
	// Noted first, queued, then marked ready in the global slot: a process
	// dying between leaves the note for repairArrivals.
	note, err := s.noteArrival(ctx, in.SessionID)
	if err != nil {
		return store.Input{}, fmt.Errorf("redisstore: enqueue for %s: %w", in.SessionID, err)
	}
	unowned, err := s.run(ctx, enqueue, []string{s.keys.inbox(in.SessionID), s.keys.owner(in.SessionID)}, b).Int()
	if err != nil {
		return store.Input{}, fmt.Errorf("redisstore: enqueue for %s: %w", in.SessionID, err)
	}
	err = s.run(ctx, markReady, []string{s.keys.ready(), s.keys.arriving()}, in.SessionID, flag(unowned == 1), note).Err()
	if err != nil {
		return in, fmt.Errorf("redisstore: enqueue for %s: queued, but mark ready: %w", in.SessionID, err)
	}
	// Queued input holds a session at rest until a worker takes it up.
	if err := s.retainIfAtRest(ctx, in.SessionID); err != nil {
		return in, fmt.Errorf("redisstore: enqueue for %s: queued, but %w", in.SessionID, err)
	}
	return in, nil
}

// scriptTimeout bounds a state-changing script whose reply must be read
// even after the caller's context ends.
const scriptTimeout = 5 * time.Second

// Claim implements store.Queue. It waits on the ready list with BLMOVE (on a
// blocker, so cancellation wakes it) and claims with changeOwner. The wait
// rotates the list rather than popping it, so a worker that dies before
// claiming leaves the session ready for another; a session another worker
// claimed first, one owned already, or one whose inbox is empty is dropped
// from the list by the claim.
func (s *Store) Claim(ctx context.Context, worker string) (string, error) {
	if worker == "" {
		return "", fmt.Errorf("redisstore: claim: empty worker: %w", store.ErrInvalid)
	}
	delay := 50 * time.Millisecond
	w := listWaiter{st: s}
	defer w.close()
	for {
		if err := s.stopped(ctx); err != nil {
			return "", s.wrapStopped("claim", err)
		}
		id, err := w.blmove(ctx, s.keys.ready(), s.keys.ready(), "LEFT", "RIGHT")
		if errors.Is(err, redis.Nil) {
			// Nothing ready: a moment to finish what a dead process left.
			err = s.repairArrivals(ctx)
			if err == nil {
				continue
			}
		}
		if err == nil {
			if ctxErr := s.stopped(ctx); ctxErr != nil {
				// The wait rotated the list, so the session is still ready for others.
				return "", s.wrapStopped("claim", ctxErr)
			}
			// Once the steps start their replies must be read, or a
			// cancellation racing them could leave the session owned by a
			// worker that believes it claimed nothing.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), scriptTimeout)
			var won bool
			won, err = s.changeOwner(sctx, id, "", worker)
			cancel()
			if err == nil && won {
				return id, nil
			}
			if err == nil {
				continue // someone else got it, or nothing left to do
			}
		}
		if stopErr := s.stopped(ctx); stopErr != nil {
			return "", s.wrapStopped("claim", stopErr)
		}
		if s.backoff(ctx, &delay) != nil {
			continue // the loop head reports why
		}
	}
}

// NextInput implements store.Queue. Ownership is checked atomically with the
// pop; while the inbox is empty it waits with BLMOVE inbox→inbox, which
// leaves the list unchanged, and checks again.
func (s *Store) NextInput(ctx context.Context, sessionID, worker string) (store.Input, error) {
	delay := 50 * time.Millisecond
	what := "next input of " + sessionID
	w := listWaiter{st: s}
	defer w.close()
	for {
		if err := s.stopped(ctx); err != nil {
			return store.Input{}, s.wrapStopped(what, err)
		}
		res, err := s.run(ctx, takeInputScript,
			[]string{s.keys.owner(sessionID), s.keys.inbox(sessionID)}, worker,
		).Slice()
		if err == nil {
			code, _ := res[0].(int64)
			switch code {
			case takeNotOwner:
				return store.Input{}, fmt.Errorf("redisstore: %s: worker %s: %w", what, worker, store.ErrNotOwner)
			case takeInput:
				raw, _ := res[1].(string)
				var in store.Input
				if err := json.Unmarshal([]byte(raw), &in); err != nil {
					return store.Input{}, fmt.Errorf("redisstore: %s: decode: %w", what, err)
				}
				return in, nil
			}
			_, err = w.blmove(ctx, s.keys.inbox(sessionID), s.keys.inbox(sessionID), "LEFT", "LEFT")
			if err == nil || errors.Is(err, redis.Nil) {
				delay = 50 * time.Millisecond
				continue
			}
		}
		if stopErr := s.stopped(ctx); stopErr != nil {
			return store.Input{}, s.wrapStopped(what, stopErr)
		}
		_ = s.backoff(ctx, &delay)
	}
}

// Requeue implements store.Queue.
func (s *Store) Requeue(ctx context.Context, in store.Input, worker string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("redisstore: requeue %s: %w", in.ID, err)
	}
	n, err := s.run(ctx, requeue, []string{s.keys.owner(in.SessionID), s.keys.inbox(in.SessionID)}, worker, b).Int()
	if err != nil {
		return fmt.Errorf("redisstore: requeue %s for %s: %w", in.ID, in.SessionID, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: requeue %s for %s: worker %s: %w", in.ID, in.SessionID, worker, store.ErrNotOwner)
	}
	return nil
}

// Release implements store.Queue.
func (s *Store) Release(ctx context.Context, sessionID, worker string) error {
	note, err := s.noteArrival(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("redisstore: release %s: %w", sessionID, err)
	}
	n, err := s.run(ctx, release, []string{s.keys.owner(sessionID), s.keys.inbox(sessionID)}, worker).Int()
	if err != nil {
		return fmt.Errorf("redisstore: release %s: %w", sessionID, err)
	}
	if n == releaseNotOwner {
		if err := s.rdb.ZRem(ctx, s.keys.arriving(), note).Err(); err != nil {
			return fmt.Errorf("redisstore: release %s: strike note: %w", sessionID, err)
		}
		return fmt.Errorf("redisstore: release %s: worker %s: %w", sessionID, worker, store.ErrNotOwner)
	}
	// Then the global slot: a process dying before this leaves the session
	// in the worker's owned set (a take-over of the dead worker drops it)
	// and the note by which an idle Claim marks it ready if input is left.
	err = s.run(ctx, releaseOwned, []string{s.keys.owned(worker), s.keys.owners(), s.keys.ready(), s.keys.arriving()},
		worker, sessionID, flag(n == releaseWithInput), note).Err()
	if err != nil {
		return fmt.Errorf("redisstore: release %s: released, but %w", sessionID, err)
	}
	if err := s.retainIfAtRest(ctx, sessionID); err != nil {
		return fmt.Errorf("redisstore: release %s: released, but %w", sessionID, err)
	}
	return nil
}

// noteArrival notes in the arriving set that an input or release of the
// session begins, returning the note's member.
func (s *Store) noteArrival(ctx context.Context, sessionID string) (string, error) {
	note := newID() + ":" + sessionID
	if err := s.rdb.ZAdd(ctx, s.keys.arriving(), redis.Z{Score: indexScore(), Member: note}).Err(); err != nil {
		return "", fmt.Errorf("note arrival: %w", err)
	}
	return note, nil
}

// repairBatch bounds how many stale notes one repairArrivals handles.
const repairBatch = 100

// repairArrivals finishes the inputs and releases whose process died
// between their steps (notes older than indexGrace in the arriving set): a
// session with input and no owner is marked ready, and the note struck.
func (s *Store) repairArrivals(ctx context.Context) error {
	notes, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.keys.arriving(), ByScore: true, Start: "-inf",
		Stop: strconv.FormatInt(time.Now().Add(-indexGrace).UnixMicro(), 10), Count: repairBatch,
	}).Result()
	if err != nil || len(notes) == 0 {
		return err
	}
	for _, note := range notes {
		_, sessionID, _ := strings.Cut(note, ":")
		pipe := s.rdb.Pipeline()
		owner := pipe.Exists(ctx, s.keys.owner(sessionID))
		queued := pipe.LLen(ctx, s.keys.inbox(sessionID))
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("repair arrival of %s: %w", sessionID, err)
		}
		ready := owner.Val() == 0 && queued.Val() > 0
		err := s.run(ctx, markReady, []string{s.keys.ready(), s.keys.arriving()}, sessionID, flag(ready), note).Err()
		if err != nil {
			return fmt.Errorf("repair arrival of %s: %w", sessionID, err)
		}
	}
	return nil
}

// changeOwner makes worker the owner of a session, in three steps (see the
// scripts addOwned, setOwner and settleOwned): a claim when dead is "" (the
// session must be unowned with input), else a take-over from the dead
// worker. won reports whether worker owns the session now; a take-over from
// a worker that is alive fails with ErrNotOwner.
func (s *Store) changeOwner(ctx context.Context, sessionID, dead, worker string) (won bool, err error) {
	hb, takeover := s.keys.owned(worker), "0"
	if dead != "" {
		hb, takeover = s.keys.heartbeat(dead), "1"
	}
	n, err := s.run(ctx, addOwned, []string{s.keys.owned(worker), s.keys.owners(), hb}, worker, sessionID, takeover).Int()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, store.ErrNotOwner
	}
	res, err := s.run(ctx, setOwner, []string{s.keys.owner(sessionID), s.keys.inbox(sessionID)}, worker, dead).Slice()
	if err != nil {
		return false, err
	}
	code, _ := res[0].(int64)
	found := ""
	if len(res) > 1 {
		found, _ = res[1].(string)
	}
	from := s.keys.owned(worker)
	if dead != "" {
		from = s.keys.owned(dead)
	}
	err = s.run(ctx, settleOwned, []string{s.keys.ready(), s.keys.owned(worker), from, s.keys.owners()},
		worker, dead, sessionID, flag(code == 1), found).Err()
	if code == 1 {
		// Won: what settleOwned tidies is left to the next claimer to meet
		// the id on the ready list, or the next take-over from the dead
		// worker; failing now would leave a session owned by a worker that
		// believes it is not.
		return true, nil
	}
	return false, err
}

// Owned implements store.Queue; the ids come sorted.
func (s *Store) Owned(ctx context.Context, worker string) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.keys.owned(worker)).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: owned by %s: %w", worker, err)
	}
	slices.Sort(ids)
	return ids, nil
}
