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

// enqueueScript appends an input to a session's inbox. The caller then marks the
// session ready (markReadyScript) when the reply says no worker owns it.
//
// KEYS[1] inbox list     KEYS[2] owner key
// ARGV[1] input JSON
//
// Returns 1 when no worker owns the session, 0 otherwise.
var enqueueScript = redis.NewScript(`
redis.call('RPUSH', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
	return 1
end
return 0
`)

// markReadyScript ends an input's (or a repair's) work in the global slot: puts
// the session on the ready list when asked and it is not there already, and
// strikes the operation's note from the arriving set.
//
// KEYS[1] ready list     KEYS[2] arriving set
// ARGV[1] session id     ARGV[2] "1" to mark it ready
// ARGV[3] the operation's member of the arriving set
//
// Returns 1 when added to the ready list, 0 otherwise.
var markReadyScript = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[3])
if ARGV[2] ~= '1' or redis.call('LPOS', KEYS[1], ARGV[1]) then
	return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1
`)

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
	unowned, err := s.run(ctx, enqueueScript, []string{s.keys.inbox(in.SessionID), s.keys.owner(in.SessionID)}, b).Int()
	if err != nil {
		return store.Input{}, fmt.Errorf("redisstore: enqueue for %s: %w", in.SessionID, err)
	}
	err = s.run(ctx, markReadyScript, []string{s.keys.ready(), s.keys.arriving()}, in.SessionID, flag(unowned == 1), note).Err()
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

// Replies of takeInputScript.
const (
	takeNotOwner = 0
	takeEmpty    = 1
	takeInput    = 2
)

// takeInputScript pops the oldest input of a session for its owner. NextInput waits
// for input with BLMOVE inbox→inbox (LEFT LEFT: a blocking peek that leaves
// the list as it was) and then runs this script, so an input is only removed
// by the worker that owns the session at that instant.
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker
//
// Returns {0} when the worker does not own the session (ErrNotOwner), {1}
// when the inbox is empty, {2, input JSON} otherwise.
var takeInputScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return {0}
end
local v = redis.call('LPOP', KEYS[2])
if not v then
	return {1}
end
return {2, v}
`)

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

// requeueScript puts an input its owner took but could not deliver back at the
// head of the session's inbox.
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker         ARGV[2] input JSON
//
// Returns 0 when the worker does not own the session (ErrNotOwner), 1 when
// the input is back.
var requeueScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
`)

// Requeue implements store.Queue.
func (s *Store) Requeue(ctx context.Context, in store.Input, worker string) error {
	b, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("redisstore: requeue %s: %w", in.ID, err)
	}
	n, err := s.run(ctx, requeueScript, []string{s.keys.owner(in.SessionID), s.keys.inbox(in.SessionID)}, worker, b).Int()
	if err != nil {
		return fmt.Errorf("redisstore: requeue %s for %s: %w", in.ID, in.SessionID, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: requeue %s for %s: worker %s: %w", in.ID, in.SessionID, worker, store.ErrNotOwner)
	}
	return nil
}

// Replies of releaseScript.
const (
	releaseNotOwner  = 0
	releaseEmpty     = 1
	releaseWithInput = 2
)

// releaseScript gives up a worker's ownership of a session, in the session's
// slot. The caller then drops it from the worker's owned set and, when input
// is left, marks it ready (releaseOwnedScript).
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker
//
// Returns 0 when the worker does not own the session (ErrNotOwner), 1 when
// released with an empty inbox, 2 when released with input left.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
if redis.call('LLEN', KEYS[2]) > 0 then
	return 2
end
return 1
`)

// releaseOwnedScript finishes a release in the global slot, striking its note
// from the arriving set.
//
// KEYS[1] owned set of the worker   KEYS[2] set of workers owning sessions
// KEYS[3] ready list     KEYS[4] arriving set
// ARGV[1] worker         ARGV[2] session id     ARGV[3] "1" when input is left
// ARGV[4] the release's member of the arriving set
//
// Returns 1.
var releaseOwnedScript = redis.NewScript(`
redis.call('ZREM', KEYS[4], ARGV[4])
redis.call('SREM', KEYS[1], ARGV[2])
if redis.call('SCARD', KEYS[1]) == 0 then
	redis.call('SREM', KEYS[2], ARGV[1])
end
if ARGV[3] == '1' and not redis.call('LPOS', KEYS[3], ARGV[2]) then
	redis.call('RPUSH', KEYS[3], ARGV[2])
end
return 1
`)

// Release implements store.Queue.
func (s *Store) Release(ctx context.Context, sessionID, worker string) error {
	note, err := s.noteArrival(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("redisstore: release %s: %w", sessionID, err)
	}
	n, err := s.run(ctx, releaseScript, []string{s.keys.owner(sessionID), s.keys.inbox(sessionID)}, worker).Int()
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
	err = s.run(ctx, releaseOwnedScript, []string{s.keys.owned(worker), s.keys.owners(), s.keys.ready(), s.keys.arriving()},
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
		err := s.run(ctx, markReadyScript, []string{s.keys.ready(), s.keys.arriving()}, sessionID, flag(ready), note).Err()
		if err != nil {
			return fmt.Errorf("repair arrival of %s: %w", sessionID, err)
		}
	}
	return nil
}

// addOwnedScript records, before a worker tries to own a session, that it may:
// the session joins the worker's owned set and the worker the owners set,
// so a worker that dies between this and claiming is still found dead with
// the session. For a take-over, the dead worker's heartbeat is checked in
// the same step, so a worker that beats again keeps what it owns.
//
// KEYS[1] owned set of the worker   KEYS[2] set of workers owning sessions
// KEYS[3] heartbeat of the worker taken over from (a take-over), or KEYS[1]
// ARGV[1] worker         ARGV[2] session id     ARGV[3] "1" for a take-over
//
// Returns 0 when the worker taken over from is alive (ErrNotOwner), 1 when recorded.
var addOwnedScript = redis.NewScript(`
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then
	return 0
end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`)

// setOwnerScript is the compare-and-set that decides who owns a session: claim
// (ARGV[2] = "", the session must be unowned and have input) or take-over
// (ARGV[2] = the dead worker, who must still own it).
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] new owner      ARGV[2] expected owner ("" for none)
//
// Returns {1} when ARGV[1] now owns the session, {0, current owner or ""}
// otherwise.
var setOwnerScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[2] == '' then
	if cur or redis.call('LLEN', KEYS[2]) == 0 then
		return {0, cur or ''}
	end
elseif cur ~= ARGV[2] then
	return {0, cur or ''}
end
redis.call('SET', KEYS[1], ARGV[1])
return {1}
`)

// settleOwnedScript finishes a claim or take-over in the global slot: drops the
// session from the ready list (a claim), from the owned set of the worker
// that lost it (a take-over; also when that worker's entry was stale), and
// from the new worker's set when it did not get it; workers left owning
// nothing leave the owners set.
//
// KEYS[1] ready list     KEYS[2] owned set of the worker claiming
// KEYS[3] owned set of the worker taken over from (or KEYS[2])
// KEYS[4] set of workers owning sessions
// ARGV[1] worker claiming                ARGV[2] worker taken over from ("" for a claim)
// ARGV[3] session id     ARGV[4] "1" when setOwnerScript made ARGV[1] the owner
// ARGV[5] the owner setOwnerScript found ("" when none or when it won)
//
// Returns 1.
var settleOwnedScript = redis.NewScript(`
if ARGV[2] == '' then
	redis.call('LREM', KEYS[1], 1, ARGV[3])
elseif ARGV[5] ~= ARGV[2] then
	redis.call('SREM', KEYS[3], ARGV[3])
	if redis.call('SCARD', KEYS[3]) == 0 then
		redis.call('SREM', KEYS[4], ARGV[2])
	end
end
if ARGV[4] ~= '1' and ARGV[5] ~= ARGV[1] then
	redis.call('SREM', KEYS[2], ARGV[3])
	if redis.call('SCARD', KEYS[2]) == 0 then
		redis.call('SREM', KEYS[4], ARGV[1])
	end
end
return 1
`)

// changeOwner makes worker the owner of a session, in three steps (see the
// scripts addOwnedScript, setOwnerScript and settleOwnedScript): a claim when dead is "" (the
// session must be unowned with input), else a take-over from the dead
// worker. won reports whether worker owns the session now; a take-over from
// a worker that is alive fails with ErrNotOwner.
func (s *Store) changeOwner(ctx context.Context, sessionID, dead, worker string) (won bool, err error) {
	hb, takeover := s.keys.owned(worker), "0"
	if dead != "" {
		hb, takeover = s.keys.heartbeat(dead), "1"
	}
	n, err := s.run(ctx, addOwnedScript, []string{s.keys.owned(worker), s.keys.owners(), hb}, worker, sessionID, takeover).Int()
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, store.ErrNotOwner
	}
	res, err := s.run(ctx, setOwnerScript, []string{s.keys.owner(sessionID), s.keys.inbox(sessionID)}, worker, dead).Slice()
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
	err = s.run(ctx, settleOwnedScript, []string{s.keys.ready(), s.keys.owned(worker), from, s.keys.owners()},
		worker, dead, sessionID, flag(code == 1), found).Err()
	if code == 1 {
		// Won: what settleOwnedScript tidies is left to the next claimer to meet
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
