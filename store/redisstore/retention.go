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

// Retention (see store.Store) on Redis is key expiry: decideRequestScript gives a
// settled request's hash a TTL; retainSession gives a session at rest, and
// its thread and transcript keys, a TTL, and takes it away when the session
// is taken up again; the audit stream is trimmed on every append, up to a
// checkpoint (auditchain.go); dedup keys
// carry their ttl. Nothing else outlives what is live: inboxes, the ready
// list, owner keys, owned sets and the pending indexes empty out, and Redis
// deletes an empty list, set or sorted set.

// WithAuditRetention sets how long audit entries stay (default
// store.DefaultAuditRetention); 0 keeps them forever. Every append trims
// the audit stream of entries older than that, up to the newest
// checkpoint among them (see auditchain.go).
func WithAuditRetention(d time.Duration) Option { return func(c *config) { c.auditRetention = d } }

// auditCutoff is the time, in unix ms, before which an audit entry is due:
// stream ids are the server's milliseconds, so entries appended before
// now-auditRetention may go. "0" trims nothing.
func (s *Store) auditCutoff() string {
	if s.cfg.auditRetention <= 0 {
		return "0"
	}
	return strconv.FormatInt(time.Now().Add(-s.cfg.auditRetention).UnixMilli(), 10)
}

// retainSessionScript gives a session at rest a TTL of the retention, or
// removes it when the session is not at rest; the caller then applies the
// same to its thread entry (retainThreadScript) and its starter's set
// (retainStarterScript), which live in other slots. The state is read here, so of
// two writers the one that runs this last leaves the TTL that fits the
// state it leaves; the reply carries this slot's time, so of two callers'
// follow-ups on the thread entry the later decision wins there too. The
// starter's set follows without that ordering: it expires a retention after
// one of its sessions came to rest, and is kept while one is taken up. A
// session active, without ever resting, for a whole retention after a
// sibling rested would leave the set first; the bound it serves
// (MAX_SESSIONS_PER_USER) then undercounts that one session.
//
// The session's transcript, when one was saved, follows the session key.
//
// KEYS[1] session key    KEYS[2] owner key      KEYS[3] inbox list
// KEYS[4] transcript key
// ARGV[1] retention ms (0: keep forever)       ARGV[2] "1" when a request of the session is pending
//
// Returns {0} when the session does not exist, {1, time} when its keys now
// expire, {2, time} when they are kept; time is the server's, in unix µs.
var retainSessionScript = redis.NewScript(`
local raw = redis.call('GET', KEYS[1])
if not raw then
	return {0}
end
local t = redis.call('TIME')
local now = t[1] .. string.format('%06d', tonumber(t[2]))
local st = cjson.decode(raw).state
if tonumber(ARGV[1]) > 0 and (st == 'idle' or st == 'failed') and ARGV[2] == '0'
	and redis.call('EXISTS', KEYS[2]) == 0 and redis.call('LLEN', KEYS[3]) == 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
	redis.call('PEXPIRE', KEYS[4], ARGV[1])
	return {1, now}
end
redis.call('PERSIST', KEYS[1])
redis.call('PERSIST', KEYS[4])
return {2, now}
`)

// retainThreadScript applies retainSessionScript's verdict to a session's thread
// entry, unless a later verdict was applied already.
//
// KEYS[1] thread hash
// ARGV[1] session id     ARGV[2] "1" to expire, "0" to keep
// ARGV[3] retention ms   ARGV[4] the verdict's time (unix µs)
//
// Returns 1 when applied, 0 when the entry names another session or holds a later verdict.
var retainThreadScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'id', 'ret')
if cur[1] ~= ARGV[1] or (cur[2] and tonumber(cur[2]) > tonumber(ARGV[4])) then
	return 0
end
redis.call('HSET', KEYS[1], 'ret', ARGV[4])
if ARGV[2] == '1' then
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
	redis.call('PERSIST', KEYS[1])
end
return 1
`)

// retainStarterScript applies retainSessionScript's verdict to the set of
// sessions of the session's starter.
//
// KEYS[1] the starter's set of sessions
// ARGV[1] session id     ARGV[2] "1" to expire, "0" to keep
// ARGV[3] retention ms
//
// Returns 1 when applied, 0 when the session is not in the set.
var retainStarterScript = redis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
	return 0
end
if ARGV[2] == '1' then
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
	redis.call('PERSIST', KEYS[1])
end
return 1
`)

// retainSession runs retainSessionScript for sess after a write that may
// have changed whether it is at rest, then applies its verdict to the
// session's thread entry and starter's set.
func (s *Store) retainSession(ctx context.Context, sess store.Session) error {
	pending := "0"
	if sess.State.AtRest() {
		has, err := s.hasPending(ctx, sess.ID)
		if err != nil {
			return fmt.Errorf("retain session %s: %w", sess.ID, err)
		}
		if has {
			pending = "1"
		}
	}
	ms := s.cfg.retention.Milliseconds()
	res, err := s.run(ctx, retainSessionScript,
		[]string{s.keys.session(sess.ID), s.keys.owner(sess.ID), s.keys.inbox(sess.ID), s.keys.transcript(sess.ID)}, ms, pending).Slice()
	if err != nil {
		return fmt.Errorf("retain session %s: %w", sess.ID, err)
	}
	code, _ := res[0].(int64)
	if code == 0 {
		return nil
	}
	at, _ := res[1].(string)
	expire := flag(code == 1)
	if !sess.Thread.IsZero() {
		err := s.run(ctx, retainThreadScript, []string{s.keys.thread(sess.Thread.Channel, sess.Thread.TS)}, sess.ID, expire, ms, at).Err()
		if err != nil {
			return fmt.Errorf("retain thread of session %s: %w", sess.ID, err)
		}
	}
	if sess.StartedBy != "" {
		if err := s.run(ctx, retainStarterScript, []string{s.keys.starter(sess.StartedBy)}, sess.ID, expire, ms).Err(); err != nil {
			return fmt.Errorf("retain starter set of session %s: %w", sess.ID, err)
		}
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

// hasPending reports whether a request of the session is pending: it reads
// the session's own pending index (O(its pending requests)) and checks each
// entry against its request, dropping stale ones (see indexGrace).
func (s *Store) hasPending(ctx context.Context, sessionID string) (bool, error) {
	reqs, err := s.listIndexed(ctx, []string{s.keys.sessionPending(sessionID)}, sessionID)
	if err != nil {
		return false, err
	}
	return len(reqs) > 0, nil
}
