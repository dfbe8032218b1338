package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// addGrantScript stores a grant, lists it and records it.
//
// KEYS[1] grant key      KEYS[2] grants zset    KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints
// ARGV[1] grant id       ARGV[2] grant JSON     ARGV[3] zset score
// ARGV[4] ms until it expires ("0": never)      ARGV[5] audit JSON
// ARGV[6] audit cutoff, as appendRecordsScript's       ARGV[7] the entry's link midstate
//
// Returns 0 when the id is taken (ErrExists), 1 when stored.
var addGrantScript = redis.NewScript(chainLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
if tonumber(ARGV[4]) > 0 then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
else
	redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
appendAudit(KEYS[3], KEYS[4], KEYS[5], ARGV[5], ARGV[7], ARGV[6])
return 1
`)

// AddGrant implements store.Grants (addGrantScript).
func (s *Store) AddGrant(ctx context.Context, g store.Grant) error {
	if err := g.Validate(); err != nil {
		return fmt.Errorf("redisstore: add grant: %w", err)
	}
	body, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("redisstore: add grant %s: %w", g.ID, err)
	}
	ttl := int64(0)
	if !g.Expires.IsZero() {
		// Dropped by Redis a little after it stops applying: callers
		// check Live, so a grant never decides past its expiry.
		ttl = max(time.Until(g.Expires)+time.Minute, time.Minute).Milliseconds()
	}
	audit, mid, err := auditArgs(store.GrantAddedAudit(g))
	if err != nil {
		return fmt.Errorf("redisstore: add grant %s: %w", g.ID, err)
	}
	n, err := s.run(ctx, addGrantScript,
		[]string{s.keys.grant(g.ID), s.keys.grants(), s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints()},
		g.ID, body, strconv.FormatInt(g.At.UnixMicro(), 10), ttl, audit, s.auditCutoff(), mid,
	).Int()
	if err != nil {
		return fmt.Errorf("redisstore: add grant %s: %w", g.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: add grant %s: %w", g.ID, store.ErrExists)
	}
	return nil
}

// ListGrants implements store.Grants.
func (s *Store) ListGrants(ctx context.Context) ([]store.Grant, error) {
	out, err := listKept[store.Grant](ctx, s, s.keys.grants(), s.keys.grant)
	if err != nil {
		return nil, fmt.Errorf("redisstore: list grants: %w", err)
	}
	return out, nil
}

// ForgetGrant implements store.Grants (forgetKeptScript).
func (s *Store) ForgetGrant(ctx context.Context, id, by, byName string) (store.Grant, error) {
	if by == "" {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w: who forgets it is required", id, store.ErrInvalid)
	}
	raw, err := s.rdb.Get(ctx, s.keys.grant(id)).Result()
	if errors.Is(err, redis.Nil) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, err)
	}
	var g store.Grant
	if err := json.Unmarshal([]byte(raw), &g); err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, err)
	}
	err = s.forgetKept(ctx, s.keys.grant(id), s.keys.grants(), "", id, raw, store.GrantForgottenAudit(g, by, byName, time.Now()))
	if err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, err)
	}
	return g, nil
}
