package redisstore

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// Every key the store touches is built here. On Redis Cluster a key's slot
// is the hash of its hash tag (the text between its first "{" and the next
// "}"), and a Lua script may only touch keys of one slot. So the keys are
// grouped by tag, each group one slot:
//
//	{P}                 the global slot: the events and audit streams (with
//	                    the audit chain's head and checkpoints), the
//	                    ready list and its arriving notes, the set of workers
//	                    owning sessions, each worker's owned set and heartbeat
//	{P:s:<session>}     one session: its record, inbox, owner, pending index
//	{P:r:<request>}     one request's hash
//	{P:p:<n>}           shard n of the pending index (pendingShards of them)
//	{P:t:<chan>:<ts>}   the thread → session index entry of one Slack thread
//	{P:u:<user>}        the set of sessions one Slack user started
//	{P:d:<key>}         one dedup mark
//	{P:a:<sink>}        one audit sink: its claim and its cursor
//
// (P is the prefix.) Sessions and requests, the bulk of the data and of the
// commands, spread over the cluster with their ids. What stays in {P} is
// either one ordered log that must stay one key to stay ordered (events,
// audit: one stream each, read in order by consumer groups and the audit
// command; the ready list, on which every idle worker blocks) or small and
// only touched by the worker bookkeeping, which must change atomically with
// the heartbeat it checks (owners, owned sets, heartbeats). The pending
// index is hot (every request enters and leaves it, and a bot reads all of
// it when it starts), so it is split over pendingShards slots by a hash of
// the request id and merged on read; each session also keeps its own
// pending index, so "has S pending requests" reads only S's.
//
// A transition that touches several groups is several steps, each atomic in
// its slot. They are ordered so that a process dying between two leaves a
// state readers tolerate and a later call repairs:
//
//   - an index entry is written before the record it points at, and removed
//     after the record stops qualifying, so no record is ever missing from
//     its index; readers check the record itself and skip entries whose
//     record is gone, settled or not theirs, removing them (entries whose
//     record is missing only once older than indexGrace: a creation may be
//     between its two steps). This covers the pending shards, the session
//     pending indexes, the starter sets and the thread entries (a thread
//     claimed by a creation that died is taken over after indexGrace);
//   - ownership is decided by a compare-and-set on the session's owner key,
//     and only after the worker's owned set names the session, so a worker
//     dying mid-claim is still found by DeadWorkers; the take-over then
//     finds the owner key says otherwise and drops the entry;
//   - a request's audit entry and event are appended after its hash
//     changed, and only by the call that changed it (so never twice). A
//     process dying in between loses those two records, not the
//     transition: a created request is still listed by ListPending (the bot
//     reconciles it at start), a settled one still wakes WaitDecision
//     (pub/sub and the hash);
//   - an input is pushed to the session's inbox before the session is
//     marked ready (and a release drops the owner before marking it ready
//     when input is left), and both are noted in the arriving set first
//     and struck from it with the ready mark. A process dying in between
//     leaves the input queued, the session not ready and the note: a
//     worker waiting in Claim finds notes older than indexGrace and marks
//     their sessions ready when they have input and no owner.
//
// A key of a new kind of per-session data is k.sess(sessionID, "name"),
// per-request data k.req(requestID, "name"): it then moves with its session
// (or request) and may share a script with the session's other keys. Only
// a single ordered log shared by everything belongs in k.global.

// pendingShards is how many slots the pending index is split over. Merging
// reads one sorted set per shard in one pipeline, so more shards cost the
// bot's reconcile little; 16 spreads the index over any cluster of up to 16
// primaries.
const pendingShards = 16

// keys builds the names of one store's keys from its prefix.
type keys struct {
	prefix string
}

func newKeys(prefix string) keys { return keys{prefix: prefix} }

// global names a key in the {P} slot.
func (k keys) global(name string) string { return "{" + k.prefix + "}:" + name }

// in names a key in the slot of tag "{P:kind:id}".
func (k keys) in(kind, id, name string) string {
	return "{" + k.prefix + ":" + kind + ":" + id + "}:" + name
}

// sess names a key of one session's slot.
func (k keys) sess(sessionID, name string) string { return k.in("s", sessionID, name) }

// req names a key of one request's slot.
func (k keys) req(requestID, name string) string { return k.in("r", requestID, name) }

// request is a hash: body (the Request's JSON without Card and Decision),
// card, decision (JSON, absent while pending), session, kind, tool, and
// the fields of its reach (reach.go) and its card's state (cards.go).
func (k keys) request(id string) string { return k.req(id, "req") }

// pendingShard is the shard of the pending index a request id belongs to.
func pendingShard(id string) int { return int(crc32.ChecksumIEEE([]byte(id)) % pendingShards) }

// pending is shard n of the pending index: a sorted set of ids of requests
// that may be pending, scored by when the entry was added (unix
// microseconds; see indexGrace).
func (k keys) pending(n int) string { return k.in("p", strconv.Itoa(n), "pending") }

// pendingOf is the shard of the pending index holding request id.
func (k keys) pendingOf(id string) string { return k.pending(pendingShard(id)) }

// sessionPending is a session's own pending index, scored as pending.
func (k keys) sessionPending(sessionID string) string { return k.sess(sessionID, "pending") }

// session is the Session's JSON.
func (k keys) session(id string) string { return k.sess(id, "sess") }

// thread maps a Slack thread to the session living in it: a hash with the
// session id ("id"), when the entry was claimed ("at", unix µs) and the
// session-slot time of the last retention applied to it ("ret").
func (k keys) thread(channel, ts string) string { return k.in("t", channel+":"+ts, "thread") }

// transcript is the session's transcript as the worker saved it (opaque
// bytes), in the session's slot; it expires with the session.
func (k keys) transcript(sessionID string) string { return k.sess(sessionID, "transcript") }

// starter is a sorted set of the ids of the sessions a Slack user started,
// scored by when each was added, so their active sessions are counted
// without a scan. Ids of sessions that no longer exist are dropped when
// they are next counted.
func (k keys) starter(user string) string { return k.in("u", user, "started") }

// inbox is a list of the session's queued Input JSON, oldest first.
func (k keys) inbox(sessionID string) string { return k.sess(sessionID, "inbox") }

// ready is a list of session ids with input and no owner, each at most once.
func (k keys) ready() string { return k.global("ready") }

// arriving is a sorted set of the inputs and releases between their two
// steps (the session's inbox and owner, then the ready list): members are
// "<op id>:<session id>", scored by when the operation began (unix µs).
// An entry older than indexGrace was left by a process that died between
// the steps; an idle Claim finishes its work (see Store.repairArrivals).
func (k keys) arriving() string { return k.global("arriving") }

// owner holds the name of the worker that owns a session.
func (k keys) owner(sessionID string) string { return k.sess(sessionID, "owner") }

// owned is the set of session ids a worker owns (or is claiming).
func (k keys) owned(worker string) string { return k.global("owned:" + worker) }

// owners is the set of workers that own at least one session, so dead
// ones are found without a scan.
func (k keys) owners() string { return k.global("owners") }

// heartbeat exists while a worker is alive: each beat sets it with the
// worker's ttl, and it expires on the server when the beats stop.
func (k keys) heartbeat(worker string) string { return k.global("hb:" + worker) }

// events is the stream the Bus publishes to; one field "e" holds the Event's JSON.
func (k keys) events() string { return k.global("events") }

// audit is the append-only audit stream: field "a" holds the AuditEntry's
// JSON, "n", "p" and "h" its link in the chain (auditchain.go).
func (k keys) audit() string { return k.global("audit") }

// auditHead is a hash of the audit chain's newest link: n (seq), h (hash),
// id (the entry's stream id).
func (k keys) auditHead() string { return k.global("audithead") }

// auditCheckpoints is a sorted set of the audit chain's kept checkpoints,
// scored by seq; members are "<entry id> <checkpoint JSON>".
func (k keys) auditCheckpoints() string { return k.global("auditcps") }

// decided is the pub/sub channel a request's Decision is published on
// (payload: the Decision's JSON). Channels are not keys: classic PUBLISH
// reaches subscribers on every node of a cluster, so one pattern
// subscription per Store covers every request whichever node it lives on.
func (k keys) decided(id string) string { return k.global("decided:" + id) }

// decidedPattern matches every decided channel of this store.
func (k keys) decidedPattern() string { return k.global("decided:*") }

// requestIDFromChannel returns the request id a decided channel names.
func (k keys) requestIDFromChannel(channel string) (string, bool) {
	p := k.global("decided:")
	if len(channel) < len(p) || channel[:len(p)] != p {
		return "", false
	}
	return channel[len(p):], true
}

// dedup marks a key FirstSeen has seen; it expires with the caller's ttl.
func (k keys) dedup(key string) string { return k.in("d", key, "dedup") }

// sinkClaim holds the name of an audit sink's holder, with the claim's
// ttl; sinkCursor the sink's store.AuditCursor (JSON), kept for good.
func (k keys) sinkClaim(sink string) string  { return k.in("a", sink, "claim") }
func (k keys) sinkCursor(sink string) string { return k.in("a", sink, "cursor") }

// slot is the Redis Cluster slot of key: CRC16 (XMODEM) of its hash tag, or
// of the whole key when it has none, modulo 16384.
func slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// oneSlot checks that a script's keys share a slot, as Redis Cluster
// requires; a single server would run a script that breaks this, so the
// check runs on every call, whatever the server.
func oneSlot(keys []string) error {
	for _, k := range keys[1:] {
		if slot(k) != slot(keys[0]) {
			return fmt.Errorf("script keys %q and %q are in different cluster slots", keys[0], k)
		}
	}
	return nil
}

// Remembered answers live in the global slot, with the audit stream their
// scripts append to: they are few, written at the pace people click, and
// remembering one replaces another atomically.

// answer is a remembered answer's JSON (store.Standing).
func (k keys) answer(id string) string { return k.global("answer:" + id) }

// answerIndex maps a scope and a question form's fingerprint to the id of
// the answer remembered for them.
func (k keys) answerIndex(scopeKey, fingerprint string) string {
	return k.global("answeridx:" + fingerprint + ":" + scopeKey)
}

// answers is a sorted set of remembered answer ids scored by when they
// were remembered (unix microseconds), for listing them without a scan.
func (k keys) answers() string { return k.global("answers") }

// Grants and tombstones live in the global slot too, for the same reasons.

// grant is a grant's JSON (store.Standing); it expires with the grant.
func (k keys) grant(id string) string { return k.global("grant:" + id) }

// grants is a sorted set of grant ids scored by when they were added (unix
// microseconds); an id whose grant expired is skipped and dropped.
func (k keys) grants() string { return k.global("grants") }

// tombstones is a hash of one kind's tombstones: id → Tombstone JSON
// (store.Tombstones), kept forever.
func (k keys) tombstones(kind string) string { return k.global("tombstones:" + kind) }
