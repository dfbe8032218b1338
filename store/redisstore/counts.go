package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

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

// ActiveSessionsBy implements store.Counts from the starter's set (see
// countStarted).
func (s *Store) ActiveSessionsBy(ctx context.Context, user string) (int, error) {
	n, err := s.countStarted(ctx, user, func(raw []byte) (bool, error) {
		var sess struct {
			State store.SessionState `json:"state"`
		}
		err := json.Unmarshal(raw, &sess)
		return sess.State.Active(), err
	})
	return n, wrapCount("active sessions by", user, err)
}

// SessionsUpdatedSince implements store.Counts from the starter's set (see
// countStarted).
func (s *Store) SessionsUpdatedSince(ctx context.Context, starter string, since time.Time) (int, error) {
	n, err := s.countStarted(ctx, starter, func(raw []byte) (bool, error) {
		var sess struct {
			UpdatedAt time.Time `json:"updated_at"`
		}
		err := json.Unmarshal(raw, &sess)
		return !sess.UpdatedAt.Before(since), err
	})
	return n, wrapCount("sessions updated since "+since.Format(time.RFC3339)+" by", starter, err)
}

// countStarted counts the sessions in the starter's set that keep says
// yes to: it reads them in one pipeline and drops the ids of those that
// are gone, so the set stays as small as the sessions the store still
// keeps. An id whose session is missing but was added within indexGrace
// may be a session being created: it is left for a later count to judge.
func (s *Store) countStarted(ctx context.Context, starter string, keep func(raw []byte) (bool, error)) (int, error) {
	set := s.keys.starter(starter)
	entries, err := s.readIndexes(ctx, []string{set})
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(entries))
	for i, e := range entries {
		cmds[i] = pipe.Get(ctx, s.keys.session(e.id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	n := 0
	var gone []any
	for i, c := range cmds {
		raw, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			if indexStale(entries[i].score) {
				gone = append(gone, entries[i].id)
			}
			continue
		}
		ok, err := keep(raw)
		if err != nil {
			return 0, fmt.Errorf("decode session %s: %w", entries[i].id, err)
		}
		if ok {
			n++
		}
	}
	if len(gone) > 0 {
		if err := s.rdb.ZRem(ctx, set, gone...).Err(); err != nil {
			return 0, err
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
