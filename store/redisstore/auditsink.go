package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// An audit sink's claim is a key holding its holder's name with the
// claim's ttl, so it lapses by Redis' clock alone; its cursor a key kept
// for good. Both share the sink's slot ({P:a:<sink>}), so one script
// checks the claim and writes the cursor.

func (s *Store) sinkKeys(sink string) []string {
	return []string{s.keys.sinkClaim(sink), s.keys.sinkCursor(sink)}
}

// claimSinkScript makes ARGV[1] the holder unless another holder's claim is
// live, and reads the sink.
//
// KEYS[1] claim          KEYS[2] cursor
// ARGV[1] holder         ARGV[2] ttl in ms
//
// Returns {holder, cursor JSON or ""}.
var claimSinkScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur or cur == ARGV[1] then
	redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
	cur = ARGV[1]
end
return {cur, redis.call('GET', KEYS[2]) or ''}
`)

// ClaimAuditSink implements store.AuditSinks.
func (s *Store) ClaimAuditSink(ctx context.Context, sink, holder string, ttl time.Duration) (store.AuditSink, error) {
	if err := store.ValidateAuditSinkClaim(sink, holder, ttl); err != nil {
		return store.AuditSink{}, fmt.Errorf("redisstore: claim audit sink: %w", err)
	}
	// PX counts whole milliseconds; round up so a short ttl never becomes 0.
	ms := (ttl + time.Millisecond - 1) / time.Millisecond
	res, err := s.run(ctx, claimSinkScript, s.sinkKeys(sink), holder, int64(ms)).StringSlice()
	if err != nil {
		return store.AuditSink{}, fmt.Errorf("redisstore: claim audit sink %s: %w", sink, err)
	}
	if len(res) != 2 {
		return store.AuditSink{}, fmt.Errorf("redisstore: claim audit sink %s: reply of %d values", sink, len(res))
	}
	out := store.AuditSink{Holder: res[0]}
	if res[1] != "" {
		if err := json.Unmarshal([]byte(res[1]), &out.Cursor); err != nil {
			return store.AuditSink{}, fmt.Errorf("redisstore: claim audit sink %s: cursor: %w", sink, err)
		}
		out.Started = true
	}
	return out, nil
}

// advanceSinkScript writes the cursor if ARGV[1] holds the claim.
//
// KEYS[1] claim          KEYS[2] cursor
// ARGV[1] holder         ARGV[2] cursor JSON
//
// Returns 1 when written, 0 when ARGV[1] does not hold the claim.
var advanceSinkScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('SET', KEYS[2], ARGV[2])
return 1
`)

// AdvanceAuditSink implements store.AuditSinks.
func (s *Store) AdvanceAuditSink(ctx context.Context, sink, holder string, cur store.AuditCursor) error {
	err := store.ValidateAuditSinkClaim(sink, holder, 1)
	if err == nil {
		err = cur.Validate()
	}
	if err != nil {
		return fmt.Errorf("redisstore: advance audit sink %s: %w", sink, err)
	}
	body, err := json.Marshal(cur)
	if err != nil {
		return fmt.Errorf("redisstore: advance audit sink %s: %w", sink, err)
	}
	n, err := s.run(ctx, advanceSinkScript, s.sinkKeys(sink), holder, body).Int()
	if err != nil {
		return fmt.Errorf("redisstore: advance audit sink %s: %w", sink, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: advance audit sink %s: %s does not hold it: %w", sink, holder, store.ErrNotOwner)
	}
	return nil
}

// releaseSinkScript drops the claim if ARGV[1] holds it.
//
// KEYS[1] claim          ARGV[1] holder
//
// Returns 1 when dropped, 0 otherwise.
var releaseSinkScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// ReleaseAuditSink implements store.AuditSinks.
func (s *Store) ReleaseAuditSink(ctx context.Context, sink, holder string) error {
	if err := store.ValidateAuditSinkClaim(sink, holder, 1); err != nil {
		return fmt.Errorf("redisstore: release audit sink: %w", err)
	}
	if err := s.run(ctx, releaseSinkScript, s.sinkKeys(sink)[:1], holder).Err(); err != nil {
		return fmt.Errorf("redisstore: release audit sink %s: %w", sink, err)
	}
	return nil
}
