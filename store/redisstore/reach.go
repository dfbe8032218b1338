package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// A request's reach lives in its hash beside its card: "copies" (a JSON
// array of message references) and one field per step taken ("reminded",
// "escalated": the store.ReachMark as JSON).

// addCopyScript records a copy of a request.
//
// KEYS[1] request hash
// ARGV[1] the copy's reference as JSON (as Go encodes it: one spelling)
//
// Returns 0 for an unknown id (ErrNotFound), 1 when recorded (or there
// already) and the request is pending, 2 when it is settled.
var addCopyScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
local cur = redis.call('HGET', KEYS[1], 'copies')
if not cur then
	redis.call('HSET', KEYS[1], 'copies', '[' .. ARGV[1] .. ']')
elseif not string.find(cur, ARGV[1], 1, true) then
	redis.call('HSET', KEYS[1], 'copies', string.sub(cur, 1, -2) .. ',' .. ARGV[1] .. ']')
end
return 1 + redis.call('HEXISTS', KEYS[1], 'decision')
`)

// AddCopy implements store.Reaches.
func (s *Store) AddCopy(ctx context.Context, id string, ref store.MessageRef) (pending bool, err error) {
	if ref.Channel == "" || ref.TS == "" {
		return false, fmt.Errorf("redisstore: add copy of %s: %w: empty message reference", id, store.ErrInvalid)
	}
	refJSON, err := json.Marshal(ref)
	if err != nil {
		return false, fmt.Errorf("redisstore: add copy of %s: %w", id, err)
	}
	n, err := s.run(ctx, addCopyScript, []string{s.keys.request(id)}, refJSON).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: add copy of %s: %w", id, err)
	}
	if n == refNotFound {
		return false, fmt.Errorf("redisstore: add copy of %s: %w", id, store.ErrNotFound)
	}
	return n == refPending, nil
}

// Replies of markReachScript.
const (
	reachNotFound = 0
	reachTaken    = 1
	reachSettled  = 2
	reachDone     = 3
)

// markReachScript takes a reach step of a pending request once.
//
// KEYS[1] request hash
// ARGV[1] the step's field ("reminded", "escalated")
// ARGV[2] the store.ReachMark as JSON
//
// Returns 0 for an unknown id (ErrNotFound), 1 when this call took the
// step, 2 when the request is settled, 3 when the step was taken before.
var markReachScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
if redis.call('HEXISTS', KEYS[1], 'decision') == 1 then
	return 2
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
	return 1
end
return 3
`)

// MarkReach implements store.Reaches.
func (s *Store) MarkReach(ctx context.Context, id string, m store.ReachMark) (bool, error) {
	if err := m.Validate(); err != nil {
		return false, fmt.Errorf("redisstore: mark %s of %s: %w", m.Step, id, err)
	}
	mJSON, err := json.Marshal(m)
	if err != nil {
		return false, fmt.Errorf("redisstore: mark %s of %s: %w", m.Step, id, err)
	}
	n, err := s.run(ctx, markReachScript, []string{s.keys.request(id)}, string(m.Step), mJSON).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: mark %s of %s: %w", m.Step, id, err)
	}
	if n == reachNotFound {
		return false, fmt.Errorf("redisstore: mark %s of %s: %w", m.Step, id, store.ErrNotFound)
	}
	return n == reachTaken, nil
}

// reachFields are the hash fields that hold a request's reach, read after
// requestFields' first three.
var reachFields = []string{"copies", string(store.StepReminded), string(store.StepEscalated)}

// decodeReach fills r.Reach from its hash fields (copies, reminded,
// escalated: "" when absent). The body's own reach, if a writer put one
// there, is not the request's.
func decodeReach(r *store.Request, copies, reminded, escalated string) error {
	r.Reach = store.Reach{}
	if copies != "" {
		if err := json.Unmarshal([]byte(copies), &r.Reach.Copies); err != nil {
			return fmt.Errorf("decode copies of %s: %w", r.ID, err)
		}
	}
	for _, f := range []string{reminded, escalated} {
		if f == "" {
			continue
		}
		var m store.ReachMark
		if err := json.Unmarshal([]byte(f), &m); err != nil {
			return fmt.Errorf("decode reach of %s: %w", r.ID, err)
		}
		r.Reach.Apply(m)
	}
	return nil
}
