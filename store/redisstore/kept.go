package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// Grants and remembered answers are both records approvers keep for
// later: each JSON at its own key, listed in a sorted set scored by when
// it was kept, and removed with an audit entry naming who forgot it. The
// helpers here serve both.

// listKept reads the records zset lists, newest first, from the keys
// keyOf names. An id whose key is gone (a grant expired, or a record was
// forgotten between the two reads) is skipped and dropped from zset, best
// effort: the next list tries again.
func listKept[T any](ctx context.Context, s *Store, zset string, keyOf func(id string) string) ([]T, error) {
	ids, err := s.rdb.ZRange(ctx, zset, 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	slices.Reverse(ids)
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = keyOf(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(vals))
	var gone []any
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		var rec T
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", ids[i], err)
		}
		out = append(out, rec)
	}
	if len(gone) > 0 {
		_ = s.rdb.ZRem(ctx, zset, gone...).Err()
	}
	return out, nil
}

// forgetKeptScript removes a kept record and records who forgot it, while
// it is still the record the caller read; and its index entry, when one
// is given and still names it.
//
// KEYS[1] record key     KEYS[2] its sorted set  KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints     KEYS[6] index key (KEYS[1] for none)
// ARGV[1] record id      ARGV[2] the JSON the caller read
// ARGV[3] audit JSON     ARGV[4] audit cutoff, as appendRecordsScript's
// ARGV[5] the entry's link midstate
//
// Returns 0 when the record is gone or changed (ErrNotFound), 1 when removed.
var forgetKeptScript = redis.NewScript(chainLua + `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
	return 0
end
redis.call('DEL', KEYS[1])
if KEYS[6] ~= KEYS[1] and redis.call('GET', KEYS[6]) == ARGV[1] then
	redis.call('DEL', KEYS[6])
end
redis.call('ZREM', KEYS[2], ARGV[1])
appendAudit(KEYS[3], KEYS[4], KEYS[5], ARGV[3], ARGV[5], ARGV[4])
return 1
`)

// forgetKept removes the record id, read as raw at key and listed in
// zset (indexed at index, "" for none), appending entry to the audit log;
// store.ErrNotFound when it changed or went since it was read.
func (s *Store) forgetKept(ctx context.Context, key, zset, index, id, raw string, entry store.AuditEntry) error {
	audit, mid, err := auditArgs(entry)
	if err != nil {
		return err
	}
	if index == "" {
		index = key
	}
	n, err := s.run(ctx, forgetKeptScript,
		[]string{key, zset, s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints(), index},
		id, raw, audit, s.auditCutoff(), mid,
	).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return nil
}
