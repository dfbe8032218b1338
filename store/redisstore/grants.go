package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// AddGrant implements store.Grants (addGrant).
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
	n, err := s.run(ctx, addGrant,
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
	ids, err := s.rdb.ZRange(ctx, s.keys.grants(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list grants: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Reverse(ids) // newest first
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.grant(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list grants: %w", err)
	}
	out := make([]store.Grant, 0, len(vals))
	var gone []any
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i]) // expired (or forgotten between the reads)
			continue
		}
		var g store.Grant
		if err := json.Unmarshal([]byte(raw), &g); err != nil {
			return nil, fmt.Errorf("redisstore: list grants: grant %s: %w", ids[i], err)
		}
		out = append(out, g)
	}
	if len(gone) > 0 {
		_ = s.rdb.ZRem(ctx, s.keys.grants(), gone...).Err() // best effort: the next list tries again
	}
	return out, nil
}

// ForgetGrant implements store.Grants (forgetGrant).
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
	audit, mid, err := auditArgs(store.GrantForgottenAudit(g, by, byName, time.Now()))
	if err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, err)
	}
	n, err := s.run(ctx, forgetGrant,
		[]string{s.keys.grant(id), s.keys.grants(), s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints()},
		id, raw, audit, s.auditCutoff(), mid,
	).Int()
	if err != nil {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, err)
	}
	if n == 0 {
		return store.Grant{}, fmt.Errorf("redisstore: forget grant %s: %w", id, store.ErrNotFound)
	}
	return g, nil
}
