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

// unclaimThreadScript drops a thread entry that still names the session, after
// the session turned out to exist already.
//
// KEYS[1] thread hash
// ARGV[1] session id
//
// Returns 1 when dropped, 0 when it names another session.
var unclaimThreadScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// createSessionScript stores a new session. The caller has already added it to
// its starter's set and claimed its thread entry.
//
// KEYS[1] session key
// ARGV[1] session JSON
//
// Returns 0 when the id is taken (ErrExists), 1 when stored.
var createSessionScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

// CreateSession implements store.Sessions.
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	if err := sess.Validate(); err != nil {
		return fmt.Errorf("redisstore: create session %q: %w", sess.ID, err)
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = time.Now()
	}
	b, err := json.Marshal(sess)
	if err != nil {
		return fmt.Errorf("redisstore: create session %s: %w", sess.ID, err)
	}
	// Index entries first (keys.go): the starter's set, then the thread.
	addedStarter, err := s.addStarter(ctx, sess)
	if err != nil {
		return fmt.Errorf("redisstore: create session %s: %w", sess.ID, err)
	}
	undo := func(err error) error {
		if addedStarter {
			if uerr := s.rdb.ZRem(ctx, s.keys.starter(sess.StartedBy), sess.ID).Err(); uerr != nil {
				err = errors.Join(err, fmt.Errorf("undo starter entry: %w", uerr))
			}
		}
		return fmt.Errorf("redisstore: create session %s: %w", sess.ID, err)
	}
	if !sess.Thread.IsZero() {
		if err := s.claimThread(ctx, sess); err != nil {
			return undo(err)
		}
	}
	n, err := s.run(ctx, createSessionScript, []string{s.keys.session(sess.ID)}, b).Int()
	if err != nil {
		return fmt.Errorf("redisstore: create session %s: %w", sess.ID, err)
	}
	if n == 0 {
		if !sess.Thread.IsZero() {
			if uerr := s.run(ctx, unclaimThreadScript, []string{s.keys.thread(sess.Thread.Channel, sess.Thread.TS)}, sess.ID).Err(); uerr != nil {
				return undo(errors.Join(store.ErrExists, fmt.Errorf("undo thread entry: %w", uerr)))
			}
		}
		return undo(store.ErrExists)
	}
	if sess.State.AtRest() { // created at rest: its retention starts now
		if err := s.retainSession(ctx, sess); err != nil {
			return fmt.Errorf("redisstore: create session %s: %w", sess.ID, err)
		}
	}
	return nil
}

// GetSession implements store.Sessions.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	sess, err := s.getSession(ctx, s.rdb, id)
	if err != nil {
		return store.Session{}, fmt.Errorf("redisstore: get session %s: %w", id, err)
	}
	return sess, nil
}

func (s *Store) getSession(ctx context.Context, c redis.Cmdable, id string) (store.Session, error) {
	raw, err := c.Get(ctx, s.keys.session(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return store.Session{}, store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, err
	}
	var sess store.Session
	if err := json.Unmarshal(raw, &sess); err != nil {
		return store.Session{}, fmt.Errorf("decode: %w", err)
	}
	return sess, nil
}

// SessionByThread implements store.Sessions.
func (s *Store) SessionByThread(ctx context.Context, thread store.MessageRef) (store.Session, error) {
	if thread.IsZero() {
		return store.Session{}, fmt.Errorf("redisstore: session by thread: empty thread: %w", store.ErrNotFound)
	}
	id, err := s.rdb.HGet(ctx, s.keys.thread(thread.Channel, thread.TS), "id").Result()
	if errors.Is(err, redis.Nil) {
		return store.Session{}, fmt.Errorf("redisstore: session by thread %s/%s: %w", thread.Channel, thread.TS, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("redisstore: session by thread %s/%s: %w", thread.Channel, thread.TS, err)
	}
	// The entry is written before its session (keys.go): an entry whose
	// session is missing is one being created, or left by a crash.
	return s.GetSession(ctx, id)
}

// addStarter adds a new session to its starter's set; added reports
// whether this call put it there.
func (s *Store) addStarter(ctx context.Context, sess store.Session) (added bool, err error) {
	if sess.StartedBy == "" {
		return false, nil
	}
	n, err := s.rdb.ZAddNX(ctx, s.keys.starter(sess.StartedBy), redis.Z{Score: indexScore(), Member: sess.ID}).Result()
	if err != nil {
		return false, fmt.Errorf("add to starter set: %w", err)
	}
	return n == 1, nil
}

// claimThreadScript claims a Slack thread's index entry for a new session, before
// the session is written. An entry left by a creation that died before
// writing its session (the caller saw the session missing) is taken over
// once it is older than indexGrace.
//
// KEYS[1] thread hash
// ARGV[1] session id     ARGV[2] now (unix µs)
// ARGV[3] the id of a stale claim to take over ("" for none)
// ARGV[4] the oldest claim time (unix µs) a stale claim may have
//
// Returns 1 when claimed, 0 when the thread is taken (ErrExists).
var claimThreadScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'id', 'at')
if cur[1] then
	if ARGV[3] == '' or cur[1] ~= ARGV[3] or tonumber(cur[2] or '0') > tonumber(ARGV[4]) then
		return 0
	end
	redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'at', ARGV[2])
return 1
`)

// claimThread claims the thread entry of a new session (ErrExists when it
// is taken). An entry naming a session that does not exist, claimed more
// than indexGrace ago, was left by a creation that died: it is taken over.
func (s *Store) claimThread(ctx context.Context, sess store.Session) error {
	key := s.keys.thread(sess.Thread.Channel, sess.Thread.TS)
	now := indexScore()
	stale := ""
	cur, err := s.rdb.HGet(ctx, key, "id").Result()
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return fmt.Errorf("claim thread: %w", err)
	default:
		n, err := s.rdb.Exists(ctx, s.keys.session(cur)).Result()
		if err != nil {
			return fmt.Errorf("claim thread: %w", err)
		}
		if n == 0 {
			stale = cur
		}
	}
	n, err := s.run(ctx, claimThreadScript, []string{key}, sess.ID, int64(now), stale,
		time.Now().Add(-indexGrace).UnixMicro()).Int()
	if err != nil {
		return fmt.Errorf("claim thread: %w", err)
	}
	if n == 0 {
		return store.ErrExists
	}
	return nil
}

// UpdateSession implements store.Sessions with WATCH/MULTI: fn runs on the
// value read under WATCH, and the write is retried from the start when
// another client changed the session in between.
func (s *Store) UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error) {
	key := s.keys.session(id)
	var out store.Session
	txf := func(tx *redis.Tx) error {
		sess, err := s.getSession(ctx, tx, id)
		if err != nil {
			return err
		}
		next := sess
		if err := fn(&next); err != nil {
			return fnError{err}
		}
		// The id and thread are the session's identity (and its index key).
		next.ID, next.Thread = sess.ID, sess.Thread
		b, err := json.Marshal(next)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, b, 0)
			return nil
		})
		if err == nil {
			out = next
		}
		return err
	}
	for range updateSessionRetries {
		err := s.rdb.Watch(ctx, txf, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // lost the race; read again
		}
		var fe fnError
		if errors.As(err, &fe) {
			return store.Session{}, fe.err
		}
		if err != nil {
			return store.Session{}, fmt.Errorf("redisstore: update session %s: %w", id, err)
		}
		// The SET above dropped the key's TTL; this gives it back when the
		// session is at rest, and holds its thread key otherwise.
		if err := s.retainSession(ctx, out); err != nil {
			return out, fmt.Errorf("redisstore: update session %s: stored, but %w", id, err)
		}
		return out, nil
	}
	return store.Session{}, fmt.Errorf("redisstore: update session %s: gave up after %d conflicting writes", id, updateSessionRetries)
}

// fnError carries the caller's error out of the transaction unchanged.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }
