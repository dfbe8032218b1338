package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// flag is a Lua script's boolean argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ActiveSessionsBy implements store.Counts: it reads the sessions in the
// starter's set (one pipeline) and drops the ids of those that are gone, so
// the set stays as small as the sessions the store still keeps. An id whose
// session is missing but was added within indexGrace may be a session
// being created: it is left for a later count to judge.
func (s *Store) ActiveSessionsBy(ctx context.Context, user string) (int, error) {
	set := s.keys.starter(user)
	entries, err := s.readIndexes(ctx, []string{set})
	if err != nil || len(entries) == 0 {
		return 0, wrapCount("active sessions by", user, err)
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(entries))
	for i, e := range entries {
		cmds[i] = pipe.Get(ctx, s.keys.session(e.id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, wrapCount("active sessions by", user, err)
	}
	n := 0
	var gone []any
	for i, c := range cmds {
		raw, err := c.Result()
		if errors.Is(err, redis.Nil) {
			if indexStale(entries[i].score) {
				gone = append(gone, entries[i].id)
			}
			continue
		}
		var sess struct {
			State store.SessionState `json:"state"`
		}
		if err := json.Unmarshal([]byte(raw), &sess); err != nil {
			return 0, wrapCount("active sessions by", user, fmt.Errorf("decode session %s: %w", entries[i].id, err))
		}
		if sess.State.Active() {
			n++
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, set, gone...).Err(); err != nil {
			return 0, wrapCount("active sessions by", user, err)
		}
	}
	return n, nil
}

// QueuedInputs implements store.Counts: the length of the inbox list.
func (s *Store) QueuedInputs(ctx context.Context, sessionID string) (int, error) {
	n, err := s.rdb.LLen(ctx, s.keys.inbox(sessionID)).Result()
	if err != nil {
		return 0, wrapCount("queued inputs of", sessionID, err)
	}
	return int(n), nil
}

// ReadySessions implements store.Counts: the length of the ready list,
// which holds each ready session once.
func (s *Store) ReadySessions(ctx context.Context) (int, error) {
	n, err := s.rdb.LLen(ctx, s.keys.ready()).Result()
	if err != nil {
		return 0, fmt.Errorf("redisstore: ready sessions: %w", err)
	}
	return int(n), nil
}

func wrapCount(what, id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redisstore: %s %s: %w", what, id, err)
}
