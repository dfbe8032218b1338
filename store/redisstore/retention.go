package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// Retention (see store.Store) on Redis is key expiry: decideRequest gives a
// settled request's hash a TTL; retainSession gives a session at rest, and
// its thread and transcript keys, a TTL, and takes it away when the session
// is taken up again; the audit stream is trimmed by MINID on every append; dedup keys
// carry their ttl. Nothing else outlives what is live: inboxes, the ready
// list, owner keys, owned sets and the pending set empty out, and Redis
// deletes an empty list, set or sorted set.

// WithAuditRetention sets how long audit entries stay (default
// store.DefaultAuditRetention); 0 keeps them forever. Every append trims
// the audit stream of entries older than that (XADD MINID).
func WithAuditRetention(d time.Duration) Option { return func(c *config) { c.auditRetention = d } }

// auditMinID is the MINID of an audit append: stream ids are the server's
// milliseconds, so entries appended before now-auditRetention go. "0"
// trims nothing.
func (s *Store) auditMinID() string {
	if s.cfg.auditRetention <= 0 {
		return "0"
	}
	return strconv.FormatInt(time.Now().Add(-s.cfg.auditRetention).UnixMilli(), 10)
}

// retainSessionScript gives a session at rest, and its thread key, a TTL of
// the retention, or removes both TTLs when the session is not at rest. The
// state is read here, so of two writers the one that runs this last leaves
// the TTL that fits the state it leaves. The starter's set of sessions (see
// keys.starter) follows the same way: it expires a retention after the
// last of its sessions came to rest, and is kept while one is taken up. A
// session active, without ever resting, for a whole retention after a
// sibling rested would leave the set first; the bound it serves
// (MAX_SESSIONS_PER_USER) then undercounts that one session.
//
// The session's transcript, when one was saved, follows the session key.
//
// KEYS[1] session key    KEYS[2] owner key      KEYS[3] inbox list
// KEYS[4] thread key     KEYS[5] the starter's set of sessions
// KEYS[6] transcript key
// ARGV[1] retention ms (0: keep forever)       ARGV[2] "1" when a request of the session is pending
// ARGV[3] session id
//
// Returns 0 when the session does not exist, 1 when its keys now expire,
// 2 when they are kept.
var retainSessionScript = redis.NewScript(`
local raw = redis.call('GET', KEYS[1])
if not raw then
	return 0
end
local st = cjson.decode(raw).state
local thread = redis.call('GET', KEYS[4]) == ARGV[3]
local starter = redis.call('SISMEMBER', KEYS[5], ARGV[3]) == 1
if tonumber(ARGV[1]) > 0 and (st == 'idle' or st == 'failed') and ARGV[2] == '0'
	and redis.call('EXISTS', KEYS[2]) == 0 and redis.call('LLEN', KEYS[3]) == 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
	redis.call('PEXPIRE', KEYS[6], ARGV[1])
	if thread then
		redis.call('PEXPIRE', KEYS[4], ARGV[1])
	end
	if starter then
		redis.call('PEXPIRE', KEYS[5], ARGV[1])
	end
	return 1
end
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[6])
if thread then
	redis.call('PERSIST', KEYS[4])
end
if starter then
	redis.call('PERSIST', KEYS[5])
end
return 2
`)

// retainSession runs retainSessionScript for sess after a write that may
// have changed whether it is at rest.
func (s *Store) retainSession(ctx context.Context, sess store.Session) error {
	pending := "0"
	if sess.State.AtRest() {
		has, err := s.hasPending(ctx, sess.ID)
		if err != nil {
			return err
		}
		if has {
			pending = "1"
		}
	}
	// A session without a thread or a starter names keys that hold no
	// member of it: the script leaves them alone.
	keys := []string{s.keys.session(sess.ID), s.keys.owner(sess.ID), s.keys.inbox(sess.ID),
		s.keys.thread(sess.Thread.Channel, sess.Thread.TS), s.keys.starter(sess.StartedBy), s.keys.transcript(sess.ID)}
	err := retainSessionScript.Run(ctx, s.rdb, keys, s.cfg.retention.Milliseconds(), pending, sess.ID).Err()
	if err != nil {
		return fmt.Errorf("retain session %s: %w", sess.ID, err)
	}
	return nil
}

// retainIfAtRest re-runs retainSession for a session whose state says it
// may be at rest, after a write that does not change its record (an input
// queued, a request created or settled, a release). A session that is not
// at rest has no TTL already: the write that took it up removed it.
func (s *Store) retainIfAtRest(ctx context.Context, sessionID string) error {
	sess, err := s.getSession(ctx, s.rdb, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("retain session %s: %w", sessionID, err)
	}
	if !sess.State.AtRest() {
		return nil
	}
	return s.retainSession(ctx, sess)
}

// hasPending reports whether a request of the session is pending. Pending
// requests are few (each waits for a person), so it reads them all.
func (s *Store) hasPending(ctx context.Context, sessionID string) (bool, error) {
	ids, err := s.rdb.ZRange(ctx, s.keys.pending(), 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return false, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.keys.request(id), "session")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	for _, c := range cmds {
		if c.Val() == sessionID {
			return true, nil
		}
	}
	return false, nil
}
