package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// One Lua script per atomic step. Each documents its KEYS, ARGV and reply; a
// 0 (or a status code) in the reply is mapped to a store sentinel by the Go
// caller. Scripts never build key names themselves: every key they touch
// arrives in KEYS, and all of a script's keys share one hash tag (one
// cluster slot; see keys.go for the groups and TestScriptKeysShareASlot).
// A transition spanning groups runs one script per group, in the order
// keys.go argues for.

// appendRecords appends a transition's audit entry, linked into the audit
// chain (chainLua), and its event to the two logs, in the global slot.
//
// KEYS[1] audit stream   KEYS[2] events stream  KEYS[3] chain head
// KEYS[4] checkpoints
// ARGV[1] audit JSON     ARGV[2] event JSON     ARGV[3] events MAXLEN (approximate)
// ARGV[4] audit cutoff (unix ms; "0" keeps all) ARGV[5] the entry's link midstate
//
// Returns the event's stream id.
var appendRecords = redis.NewScript(chainLua + `
appendAudit(KEYS[1], KEYS[3], KEYS[4], ARGV[1], ARGV[5], ARGV[4])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[2])
`)

// createRequest stores a new pending request. The caller has already put
// its id into the pending indexes (index first: see keys.go).
//
// KEYS[1] request hash
// ARGV[1] body JSON      ARGV[2] session id     ARGV[3] kind
// ARGV[4] tool name      ARGV[5] card JSON ("" when not posted yet)
//
// Returns 0 when the id is taken (ErrExists), 1 when stored. A pending
// request has no TTL; decideRequest gives it one.
var createRequest = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
redis.call('HSET', KEYS[1], 'body', ARGV[1], 'session', ARGV[2], 'kind', ARGV[3], 'tool', ARGV[4])
if ARGV[5] ~= '' then
	redis.call('HSET', KEYS[1], 'card', ARGV[5])
end
return 1
`)

// Replies of decideRequest.
const (
	decideNotFound = 0
	decideSettled  = 1
	decideTooLate  = 2
)

// decideRequest settles a request exactly once (compare-and-set on the
// decision field) and announces it to WaitDecision. The caller then appends
// the audit entry and event (only when this call settled it) and removes
// the id from the pending indexes.
//
// KEYS[1] request hash
// ARGV[1] decision JSON  ARGV[2] retention of a settled request in ms (0: keep)
// ARGV[3] decided pub/sub channel
//
// The settled request's hash expires ARGV[2] ms from now (the retention).
// Returns {0} for an unknown id (ErrNotFound); {1, body, card, thread} when
// this call settled it; {2, body, card, decision} when it was settled
// before (ErrAlreadyDecided), so the loser learns the winning decision.
var decideRequest = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision', 'thread')
if not f[1] then
	return {0}
end
if f[3] then
	return {2, f[1], f[2] or '', f[3]}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[1])
if tonumber(ARGV[2]) > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('PUBLISH', ARGV[3], ARGV[1])
return {1, f[1], f[2] or '', f[4] or ''}
`)

// Replies of approveRequest.
const (
	approveNotFound = 0
	approveCounted  = 1
	approveTooLate  = 2
	approveChanged  = 3
)

// approveRequest records one approval of a pending request that needs
// several (store.Approvals.Approve): the approvals field is a JSON array
// the script appends to as text (Go wrote each element), approvals_n
// counts them, approver:<user id> marks who approved, and approves is the
// canonical input the first approval approved, which every later one must
// equal.
//
// KEYS[1] request hash
// ARGV[1] approver's user id  ARGV[2] the approval's JSON
// ARGV[3] approvals needed    ARGV[4] the canonical input it approves
//
// Returns {0} for an unknown id (ErrNotFound); {2, body, card, decision}
// when settled (ErrAlreadyDecided); {3} when it approves another input
// (ErrInputChanged); otherwise {1, n, last}: n approvals now, last 1 when
// this call made them ARGV[3]. A person who approved already, or an
// approval once ARGV[3] are in, changes nothing (last 0).
var approveRequest = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision', 'approvals_n', 'approves')
if not f[1] then
	return {0}
end
if f[3] then
	return {2, f[1], f[2] or '', f[3]}
end
local n = tonumber(f[4] or '0')
if redis.call('HEXISTS', KEYS[1], 'approver:' .. ARGV[1]) == 1 or n >= tonumber(ARGV[3]) then
	return {1, n, 0}
end
if n > 0 and f[5] ~= ARGV[4] then
	return {3}
end
local list = '[' .. ARGV[2] .. ']'
if n > 0 then
	local old = redis.call('HGET', KEYS[1], 'approvals')
	list = string.sub(old, 1, -2) .. ',' .. ARGV[2] .. ']'
else
	redis.call('HSET', KEYS[1], 'approves', ARGV[4])
end
n = n + 1
redis.call('HSET', KEYS[1], 'approvals', list, 'approvals_n', n, 'approver:' .. ARGV[1], 1)
local last = 0
if n == tonumber(ARGV[3]) then
	last = 1
end
return {1, n, last}
`)

// setThread records, after a request's creation, the thread of its
// session, which its later audit entries carry: only while the request
// exists, so a late call leaves no hash of its own behind.
//
// KEYS[1] request hash
// ARGV[1] "<channel> <thread ts>"
//
// Returns 1 when set, 0 when the request is gone.
var setThread = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
redis.call('HSET', KEYS[1], 'thread', ARGV[1])
return 1
`)

// Replies of refuseRequest.
const (
	refuseNotFound = 0
	refuseDone     = 1
	refuseChanged  = 2
)

// refuseRequest replaces a settled request's decision with a refusal. The
// Go caller read the decision it refuses (the audit entry it appends after
// names its decider); the script swaps only while the decision is still the
// one it read (compare-and-set), so the entry never names another
// decision's decider. The hash keeps the expiry Decide gave it.
//
// KEYS[1] request hash
// ARGV[1] the decision JSON the caller read      ARGV[2] refusal JSON
//
// Returns {0} for an unknown id (ErrNotFound); {1} when this call refused
// it; {2} when the decision is no longer the one read (the caller reads
// again).
var refuseRequest = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'decision')
if not f[1] then
	return {0}
end
if f[2] ~= ARGV[1] then
	return {2}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[2])
return {1}
`)

// setCard records where a request's card was posted.
//
// KEYS[1] request hash
// ARGV[1] card JSON
//
// Returns 0 for an unknown id (ErrNotFound), 1 when stored and the request
// is pending, 2 when stored and it is settled.
var setCard = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
redis.call('HSET', KEYS[1], 'card', ARGV[1])
return 1 + redis.call('HEXISTS', KEYS[1], 'decision')
`)

// claimThread claims a Slack thread's index entry for a new session, before
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
var claimThread = redis.NewScript(`
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

// unclaimThread drops a thread entry that still names the session, after
// the session turned out to exist already.
//
// KEYS[1] thread hash
// ARGV[1] session id
//
// Returns 1 when dropped, 0 when it names another session.
var unclaimThread = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
return 1
`)

// createSession stores a new session. The caller has already added it to
// its starter's set and claimed its thread entry.
//
// KEYS[1] session key
// ARGV[1] session JSON
//
// Returns 0 when the id is taken (ErrExists), 1 when stored.
var createSession = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
`)

// enqueue appends an input to a session's inbox. The caller then marks the
// session ready (markReady) when the reply says no worker owns it.
//
// KEYS[1] inbox list     KEYS[2] owner key
// ARGV[1] input JSON
//
// Returns 1 when no worker owns the session, 0 otherwise.
var enqueue = redis.NewScript(`
redis.call('RPUSH', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 then
	return 1
end
return 0
`)

// markReady ends an input's (or a repair's) work in the global slot: puts
// the session on the ready list when asked and it is not there already, and
// strikes the operation's note from the arriving set.
//
// KEYS[1] ready list     KEYS[2] arriving set
// ARGV[1] session id     ARGV[2] "1" to mark it ready
// ARGV[3] the operation's member of the arriving set
//
// Returns 1 when added to the ready list, 0 otherwise.
var markReady = redis.NewScript(`
redis.call('ZREM', KEYS[2], ARGV[3])
if ARGV[2] ~= '1' or redis.call('LPOS', KEYS[1], ARGV[1]) then
	return 0
end
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1
`)

// addOwned records, before a worker tries to own a session, that it may:
// the session joins the worker's owned set and the worker the owners set,
// so a worker that dies between this and claiming is still found dead with
// the session. For a take-over, the dead worker's heartbeat is checked in
// the same step, so a worker that beats again keeps what it owns.
//
// KEYS[1] owned set of the worker   KEYS[2] set of workers owning sessions
// KEYS[3] heartbeat of the worker taken over from (a take-over), or KEYS[1]
// ARGV[1] worker         ARGV[2] session id     ARGV[3] "1" for a take-over
//
// Returns 0 when the worker taken over from is alive (ErrNotOwner), 1 when recorded.
var addOwned = redis.NewScript(`
if ARGV[3] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then
	return 0
end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`)

// setOwner is the compare-and-set that decides who owns a session: claim
// (ARGV[2] = "", the session must be unowned and have input) or take-over
// (ARGV[2] = the dead worker, who must still own it).
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] new owner      ARGV[2] expected owner ("" for none)
//
// Returns {1} when ARGV[1] now owns the session, {0, current owner or ""}
// otherwise.
var setOwner = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if ARGV[2] == '' then
	if cur or redis.call('LLEN', KEYS[2]) == 0 then
		return {0, cur or ''}
	end
elseif cur ~= ARGV[2] then
	return {0, cur or ''}
end
redis.call('SET', KEYS[1], ARGV[1])
return {1}
`)

// settleOwned finishes a claim or take-over in the global slot: drops the
// session from the ready list (a claim), from the owned set of the worker
// that lost it (a take-over; also when that worker's entry was stale), and
// from the new worker's set when it did not get it; workers left owning
// nothing leave the owners set.
//
// KEYS[1] ready list     KEYS[2] owned set of the worker claiming
// KEYS[3] owned set of the worker taken over from (or KEYS[2])
// KEYS[4] set of workers owning sessions
// ARGV[1] worker claiming                ARGV[2] worker taken over from ("" for a claim)
// ARGV[3] session id     ARGV[4] "1" when setOwner made ARGV[1] the owner
// ARGV[5] the owner setOwner found ("" when none or when it won)
//
// Returns 1.
var settleOwned = redis.NewScript(`
if ARGV[2] == '' then
	redis.call('LREM', KEYS[1], 1, ARGV[3])
elseif ARGV[5] ~= ARGV[2] then
	redis.call('SREM', KEYS[3], ARGV[3])
	if redis.call('SCARD', KEYS[3]) == 0 then
		redis.call('SREM', KEYS[4], ARGV[2])
	end
end
if ARGV[4] ~= '1' and ARGV[5] ~= ARGV[1] then
	redis.call('SREM', KEYS[2], ARGV[3])
	if redis.call('SCARD', KEYS[2]) == 0 then
		redis.call('SREM', KEYS[4], ARGV[1])
	end
end
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

// Replies of release.
const (
	releaseNotOwner  = 0
	releaseEmpty     = 1
	releaseWithInput = 2
)

// release gives up a worker's ownership of a session, in the session's
// slot. The caller then drops it from the worker's owned set and, when input
// is left, marks it ready (releaseOwned).
//
// KEYS[1] owner key      KEYS[2] inbox list
// ARGV[1] worker
//
// Returns 0 when the worker does not own the session (ErrNotOwner), 1 when
// released with an empty inbox, 2 when released with input left.
var release = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
	return 0
end
redis.call('DEL', KEYS[1])
if redis.call('LLEN', KEYS[2]) > 0 then
	return 2
end
return 1
`)

// releaseOwned finishes a release in the global slot, striking its note
// from the arriving set.
//
// KEYS[1] owned set of the worker   KEYS[2] set of workers owning sessions
// KEYS[3] ready list     KEYS[4] arriving set
// ARGV[1] worker         ARGV[2] session id     ARGV[3] "1" when input is left
// ARGV[4] the release's member of the arriving set
//
// Returns 1.
var releaseOwned = redis.NewScript(`
redis.call('ZREM', KEYS[4], ARGV[4])
redis.call('SREM', KEYS[1], ARGV[2])
if redis.call('SCARD', KEYS[1]) == 0 then
	redis.call('SREM', KEYS[2], ARGV[1])
end
if ARGV[3] == '1' and not redis.call('LPOS', KEYS[3], ARGV[2]) then
	redis.call('RPUSH', KEYS[3], ARGV[2])
end
return 1
`)

// run runs a script after checking its keys share a cluster slot.
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if err := oneSlot(keys); err != nil {
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	return script.Run(ctx, s.rdb, keys, args...)
}

// runIn queues a script, by its SHA, in a pipeline after checking its keys
// share a cluster slot, and returns its reply-to-be; see pipelineScripts
// for the pipeline's sending.
func (s *Store) runIn(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if err := oneSlot(keys); err != nil {
		return nil, err
	}
	return script.EvalSha(ctx, pipe, keys, args...), nil
}

// evalIn queues a script by its source (EVAL), after checking its keys
// share a cluster slot: for a small script in a pipeline beside another
// that is not safe to repeat, which a NOSCRIPT reply to this one would
// otherwise send again (see pipelineScripts).
func (s *Store) evalIn(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if err := oneSlot(keys); err != nil {
		return nil, err
	}
	return script.Eval(ctx, pipe, keys, args...), nil
}

// saveTranscript stores a session's transcript with the expiry its session
// has now, so the two go together: none while the session is held, the
// session's own TTL once it rests (retainSessionScript keeps them in step
// after that).
//
// KEYS[1] session key    KEYS[2] transcript key
// ARGV[1] the transcript
//
// Returns 0 when the session does not exist (ErrNotFound), 1 when stored.
var saveTranscript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then
	return 0
end
redis.call('SET', KEYS[2], ARGV[1])
if ttl > 0 then
	redis.call('PEXPIRE', KEYS[2], ttl)
end
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
// KEYS[6] chain head     KEYS[7] checkpoints
// ARGV[1] answer id      ARGV[2] answer JSON    ARGV[3] zset score
// ARGV[4] audit JSON     ARGV[5] the id the caller read from the index ("" for none)
// ARGV[6] audit cutoff, as appendRecords'       ARGV[7] the entry's link midstate
//
// Returns 0 when the index changed since it was read (the caller reads
// again), -1 when the id names another answer (ErrExists), 1 when stored.
var rememberAnswer = redis.NewScript(chainLua + `
local old = redis.call('GET', KEYS[2]) or ''
if old ~= ARGV[5] then
	return 0
end
if old ~= ARGV[1] and redis.call('EXISTS', KEYS[1]) == 1 then
	return -1
end
if old ~= '' then
	redis.call('DEL', KEYS[5])
	redis.call('ZREM', KEYS[3], old)
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
appendAudit(KEYS[4], KEYS[6], KEYS[7], ARGV[4], ARGV[7], ARGV[6])
return 1
`)

// forgetAnswer removes a remembered answer and records who forgot it. The
// Go caller read the answer (to name its index key and build the audit
// entry); the script removes it only while it is still the same.
//
// KEYS[1] answer key     KEYS[2] index key      KEYS[3] answers zset
// KEYS[4] audit stream   KEYS[5] chain head     KEYS[6] checkpoints
// ARGV[1] answer id      ARGV[2] the answer JSON the caller read
// ARGV[3] audit JSON     ARGV[4] audit cutoff, as appendRecords'
// ARGV[5] the entry's link midstate
//
// Returns 0 when the answer is gone or changed (ErrNotFound), 1 when removed.
var forgetAnswer = redis.NewScript(chainLua + `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
	return 0
end
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then
	redis.call('DEL', KEYS[2])
end
redis.call('ZREM', KEYS[3], ARGV[1])
appendAudit(KEYS[4], KEYS[5], KEYS[6], ARGV[3], ARGV[5], ARGV[4])
return 1
`)

// addGrant stores a grant, lists it and records it.
//
// KEYS[1] grant key      KEYS[2] grants zset    KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints
// ARGV[1] grant id       ARGV[2] grant JSON     ARGV[3] zset score
// ARGV[4] ms until it expires ("0": never)      ARGV[5] audit JSON
// ARGV[6] audit cutoff, as appendRecords'       ARGV[7] the entry's link midstate
//
// Returns 0 when the id is taken (ErrExists), 1 when stored.
var addGrant = redis.NewScript(chainLua + `
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

// forgetGrant removes a grant and records who forgot it, while it is still
// the grant the caller read.
//
// KEYS[1] grant key      KEYS[2] grants zset    KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints
// ARGV[1] grant id       ARGV[2] the grant JSON the caller read
// ARGV[3] audit JSON     ARGV[4] audit cutoff   ARGV[5] the entry's link midstate
//
// Returns 0 when the grant is gone or changed (ErrNotFound), 1 when removed.
var forgetGrant = redis.NewScript(chainLua + `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
	return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
appendAudit(KEYS[3], KEYS[4], KEYS[5], ARGV[3], ARGV[5], ARGV[4])
return 1
`)
