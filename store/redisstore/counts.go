package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

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
// starter's set and drops the ids of those that are gone, so the set stays
// as small as the sessions the store still keeps.
func (s *Store) ActiveSessionsBy(ctx context.Context, user string) (int, error) {
	set := s.keys.starter(user)
	ids, err := s.rdb.SMembers(ctx, set).Result()
	if err != nil || len(ids) == 0 {
		return 0, wrapCount("active sessions by", user, err)
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.session(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return 0, wrapCount("active sessions by", user, err)
	}
	n := 0
	var gone []any
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		var sess struct {
			State store.SessionState `json:"state"`
		}
		if err := json.Unmarshal([]byte(raw), &sess); err != nil {
			return 0, wrapCount("active sessions by", user, fmt.Errorf("decode session %s: %w", ids[i], err))
		}
		if sess.State.Active() {
			n++
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.SRem(ctx, set, gone...).Err(); err != nil {
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
