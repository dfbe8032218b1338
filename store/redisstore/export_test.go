package redisstore

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// Waiters reports how many WaitDecision calls are registered, so tests can
// act once a waiter is surely blocked.
func Waiters(s *Store) int {
	s.decisions.mu.Lock()
	defer s.decisions.mu.Unlock()
	n := 0
	for _, set := range s.decisions.waiters {
		n += len(set)
	}
	return n
}

// Dial makes a client for a REDIS_URL, as New does, without a Store.
func Dial(rawURL string) (redis.UniversalClient, error) { return dial(rawURL) }

// Key names one of a prefix's keys, for tests that look at them: kind is
// "request", "session", "thread" (id "channel:ts"), "heartbeat", "owned"
// (id a worker), "pending-shard" (the shard holding request id),
// "session-pending", "events", "audit", "audithead", "auditcps", or
// "sink-claim" and "sink-cursor" (id an audit sink).
func Key(prefix, kind, id string) string {
	k := newKeys(prefix)
	switch kind {
	case "request":
		return k.request(id)
	case "session":
		return k.session(id)
	case "thread":
		for i := range id {
			if id[i] == ':' {
				return k.thread(id[:i], id[i+1:])
			}
		}
	case "heartbeat":
		return k.heartbeat(id)
	case "owned":
		return k.owned(id)
	case "owners":
		return k.owners()
	case "arriving":
		return k.arriving()
	case "inbox":
		return k.inbox(id)
	case "ready":
		return k.ready()
	case "pending-shard":
		return k.pendingOf(id)
	case "session-pending":
		return k.sessionPending(id)
	case "events":
		return k.events()
	case "audit":
		return k.audit()
	case "audithead":
		return k.auditHead()
	case "auditcps":
		return k.auditCheckpoints()
	case "sink-claim":
		return k.sinkClaim(id)
	case "sink-cursor":
		return k.sinkCursor(id)
	}
	panic("redisstore.Key: unknown kind " + kind)
}

// Slot is the cluster slot of a key, as the store computes it.
func Slot(key string) int { return slot(key) }

// IndexGrace is how long an index entry may wait for its record.
const IndexGrace = indexGrace

// linkScript runs chainLua's auditLink alone (KEYS[1] is any key of the
// global slot, for the slot check).
var linkScript = redis.NewScript(chainLua + `
return auditLink(ARGV[1], ARGV[2], tonumber(ARGV[3]))
`)

// AuditLinkByScript finishes a link in Redis as every audit append does.
func AuditLinkByScript(ctx context.Context, s *Store, midstate, prev string, seq uint64) (string, error) {
	return s.run(ctx, linkScript, []string{s.keys.auditHead()}, midstate, prev, strconv.FormatUint(seq, 10)).Text()
}

// WriteApprovals writes a request's approvals straight into its hash, as
// text, the way someone with access to Redis but no bot's key could.
func WriteApprovals(ctx context.Context, s *Store, id string, as []store.Approval) error {
	text, err := json.Marshal(as)
	if err != nil {
		return err
	}
	return s.rdb.HSet(ctx, s.keys.request(id), "approvals", text).Err()
}
