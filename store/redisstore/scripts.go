package redisstore

import "github.com/redis/go-redis/v9"

// One Lua script per atomic transition. Each documents its KEYS, ARGV and
// reply; a 0 (or a status code) in the reply is mapped to a store sentinel by
// the Go caller. Scripts never build key names themselves: every key they
// touch arrives in KEYS, and all keys share the store's hash tag.

// createRequest stores a new pending request and records its creation.
//
// KEYS[1] request hash   KEYS[2] pending zset   KEYS[3] audit stream   KEYS[4] events stream
// ARGV[1] request id     ARGV[2] body JSON      ARGV[3] session id     ARGV[4] kind
// ARGV[5] tool name      ARGV[6] pending score  ARGV[7] audit JSON     ARGV[8] event JSON
// ARGV[9] events MAXLEN (approximate)            ARGV[10] card JSON ("" when not posted yet)
// ARGV[11] audit MINID: entries older go (audit retention; "0" keeps all)
//
// Returns 0 when the id is taken (ErrExists), else the event's stream id.
// A pending request has no TTL; decideRequest gives it one.
var createRequest = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
redis.call('HSET', KEYS[1], 'body', ARGV[2], 'session', ARGV[3], 'kind', ARGV[4], 'tool', ARGV[5])
if ARGV[10] ~= '' then
	redis.call('HSET', KEYS[1], 'card', ARGV[10])
end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
redis.call('XADD', KEYS[3], 'MINID', ARGV[11], '*', 'a', ARGV[7])
return redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[9], '*', 'e', ARGV[8])
`)

// Replies of decideRequest.
const (
	decideNotFound = 0
	decideSettled  = 1
	decideTooLate  = 2
)

// decideRequest settles a request exactly once (compare-and-set on the
// decision field), then records and announces it. The audit entry and event
// arrive marshalled by the Go caller, as createRequest's do; they are
// appended only when this call settles the request.
//
// KEYS[1] request hash   KEYS[2] pending zset   KEYS[3] audit stream   KEYS[4] events stream
// ARGV[1] request id     ARGV[2] decision JSON  ARGV[3] audit JSON     ARGV[4] event JSON
// ARGV[5] events MAXLEN (approximate)           ARGV[6] retention of a settled request in ms (0: keep)
// ARGV[7] decided pub/sub channel               ARGV[8] audit MINID, as createRequest's
//
// The settled request's hash expires ARGV[6] ms from now (the retention).
// Returns {0} for an unknown id (ErrNotFound); {1, body, card} when this call
// settled it; {2, body, card, decision} when it was settled before
// (ErrAlreadyDecided), so the loser learns the winning decision.
var decideRequest = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision')
if not f[1] then
	return {0}
end
if f[3] then
	return {2, f[1], f[2] or '', f[3]}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], 'MINID', ARGV[8], '*', 'a', ARGV[3])
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[5], '*', 'e', ARGV[4])
if tonumber(ARGV[6]) > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[6])
end
redis.call('PUBLISH', ARGV[7], ARGV[2])
return {1, f[1], f[2] or ''}
`)

// Replies of refuseRequest.
const (
	refuseNotFound = 0
	refuseDone     = 1
	refuseChanged  = 2
)

// refuseRequest replaces a settled request's decision with a refusal, then
// records and announces it. The Go caller read the decision it refuses
// (the audit entry names its decider) and built the audit entry and event;
// the script swaps only while the decision is still the one it read
// (compare-and-set), so the entry never names another decision's decider.
// The hash keeps the expiry Decide gave it.
//
// KEYS[1] request hash   KEYS[2] audit stream   KEYS[3] events stream
// ARGV[1] the decision JSON the caller read      ARGV[2] refusal JSON
// ARGV[3] audit JSON     ARGV[4] event JSON     ARGV[5] events MAXLEN (approximate)
//
// Returns {0} for an unknown id (ErrNotFound); {1, body, card} when this call
// refused it; {2} when the decision is no longer the one read (the caller
// reads again).
var refuseRequest = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision')
if not f[1] then
	return {0}
end
if f[3] ~= ARGV[1] then
	return {2}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'a', ARGV[3])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'e', ARGV[4])
return {1, f[1], f[2] or ''}
`)

// setCard records where a request's card was posted.
//
// KEYS[1] request hash
// ARGV[1] card JSON
//
// Returns 0 for an unknown id (ErrNotFound), 1 when stored.
var setCard = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
redis.call('HSET', KEYS[1], 'card', ARGV[1])
return 1
`)

// createSession stores a new session, indexes it by thread and adds it to
// its starter's set (see keys.starter).
//
// KEYS[1] session key    KEYS[2] thread key    KEYS[3] starter set
// ARGV[1] session JSON   ARGV[2] session id
// ARGV[3] "1" when the session has a thread   ARGV[4] "1" when it has a starter
//
// Returns 0 when the id or the thread is taken (ErrExists), 1 when stored.
var createSession = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[2]) == 1 then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[3] == '1' then
	redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[4] == '1' then
	redis.call('SADD', KEYS[3], ARGV[2])
end
return 1
`)

// enqueue appends an input to a session's inbox and marks the session ready
// when no worker owns it and it is not in the ready list already.
//
// KEYS[1] inbox list     KEYS[2] ready list     KEYS[3] owner key
// ARGV[1] session id     ARGV[2] input JSON
//
// Returns 1 when the session became ready, 0 otherwise.
var enqueue = redis.NewScript(`
redis.call('RPUSH', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 0 and not redis.call('LPOS', KEYS[2], ARGV[1]) then
	redis.call('RPUSH', KEYS[2], ARGV[1])
	return 1
end
return 0
`)

// claim takes a session out of the ready list and makes the worker its owner.
// Claim first waits with BLMOVE ready→ready (a rotation, so a worker that
// dies before this script runs leaves the session ready for another), then
// runs this script. A session another worker removed first, one owned
// already, or one whose inbox is empty is dropped from the list.
//
// KEYS[1] ready list     KEYS[2] owner key      KEYS[3] owned set of the worker
// KEYS[4] inbox list     KEYS[5] set of workers owning sessions
// ARGV[1] worker         ARGV[2] session id
//
// Returns 1 when the worker now owns the session, 0 when it was dropped.
var claim = redis.NewScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[2]) == 0 then
	return 0
end
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('LLEN', KEYS[4]) == 0 then
	return 0
end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[1])
return 1
`)

// Replies of takeInput.
const (
	takeNotOwner = 0
	takeEmpty    = 1
	takeInput    = 2
)

// takeInput pops the oldest input of a session for its owner. NextInput waits
// for input with BLMOVE inbox→inbox (LEFT LEFT: a blocking peek that leaves
// the list as it was) and then runs this script, so an input is only removed
// by the worker that owns the session at that instant.
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker
//
// Returns {0} when the worker does not own the session (ErrNotOwner), {1}
// when the inbox is empty, {2, input JSON} otherwise.
var takeInputScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return {0}
end
local v = redis.call('LPOP', KEYS[2])
if not v then
	return {1}
end
return {2, v}
`)

// requeue puts an input its owner took but could not deliver back at the
// head of the session's inbox.
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker         ARGV[2] input JSON
//
// Returns 0 when the worker does not own the session (ErrNotOwner), 1 when
// the input is back.
var requeue = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('LPUSH', KEYS[2], ARGV[2])
return 1
`)

// release gives up a worker's ownership of a session; a session with input
// left becomes ready again.
//
// KEYS[1] owner key      KEYS[2] owned set of the worker   KEYS[3] inbox list
// KEYS[4] ready list     KEYS[5] set of workers owning sessions
// ARGV[1] worker         ARGV[2] session id
//
// Returns 0 when the worker does not own the session (ErrNotOwner), 1 when released.
var release = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[2])
if redis.call('SCARD', KEYS[2]) == 0 then
	redis.call('SREM', KEYS[5], ARGV[1])
end
if redis.call('LLEN', KEYS[3]) > 0 and not redis.call('LPOS', KEYS[4], ARGV[2]) then
	redis.call('RPUSH', KEYS[4], ARGV[2])
end
return 1
`)

// takeOver moves a session from a dead worker to a live one. The dead
// worker's heartbeat key is read in the same script, so a worker that beats
// again keeps what it owns, and two workers taking over one session cannot
// both succeed: the second finds the owner changed.
//
// KEYS[1] owner key      KEYS[2] owned set of the dead worker
// KEYS[3] owned set of the new owner                KEYS[4] heartbeat of the dead worker
// KEYS[5] set of workers owning sessions
// ARGV[1] dead worker    ARGV[2] new owner          ARGV[3] session id
//
// Returns 0 when the dead worker does not own the session or is alive (ErrNotOwner), 1 when moved.
var takeOver = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('EXISTS', KEYS[4]) == 1 then
	return 0
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[3])
if redis.call('SCARD', KEYS[2]) == 0 then
	redis.call('SREM', KEYS[5], ARGV[1])
end
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('SADD', KEYS[5], ARGV[2])
return 1
`)

// rememberAnswer stores a remembered answer, indexes it by scope and
// fingerprint, drops the answer it replaces and records it. The Go caller
// read the index first: the script replaces only while the index still
// names what it read (compare-and-set), so the answer it drops is the one
// whose key it was given.
//
// KEYS[1] answer key     KEYS[2] index key      KEYS[3] answers zset
// KEYS[4] audit stream   KEYS[5] the replaced answer's key (any key when ARGV[5] is "")
// ARGV[1] answer id      ARGV[2] answer JSON    ARGV[3] zset score
// ARGV[4] audit JSON     ARGV[5] the id the caller read from the index ("" for none)
// ARGV[6] audit MINID, as createRequest's
//
// Returns 0 when the index changed since it was read (the caller reads
// again), 1 when stored.
var rememberAnswer = redis.NewScript(`
local old = redis.call('GET', KEYS[2]) or ''
if old ~= ARGV[5] then
	return 0
end
if old ~= '' then
	redis.call('DEL', KEYS[5])
	redis.call('ZREM', KEYS[3], old)
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('XADD', KEYS[4], 'MINID', ARGV[6], '*', 'a', ARGV[4])
return 1
`)

// forgetAnswer removes a remembered answer and records who forgot it. The
// Go caller read the answer (to name its index key and build the audit
// entry); the script removes it only while it is still the same.
//
// KEYS[1] answer key     KEYS[2] index key      KEYS[3] answers zset
// KEYS[4] audit stream
// ARGV[1] answer id      ARGV[2] the answer JSON the caller read
// ARGV[3] audit JSON     ARGV[4] audit MINID, as createRequest's
//
// Returns 0 when the answer is gone or changed (ErrNotFound), 1 when removed.
var forgetAnswer = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
	return 0
end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('DEL', KEYS[2])
end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('XADD', KEYS[4], 'MINID', ARGV[4], '*', 'a', ARGV[3])
return 1
`)
