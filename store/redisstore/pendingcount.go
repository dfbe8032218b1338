package redisstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CountPending implements store.Requests. It reads the indexes ListPending
// reads, and of each request only its session and whether it has a
// decision (two short hash fields, no JSON): two pipelines, like
// ListPending, without its decoding. Entries it finds stale are removed
// by the same rules as listIndexed's.
func (s *Store) CountPending(ctx context.Context, sessionID string) (int, error) {
	indexes := s.keys.allPendingShards()
	if sessionID != "" {
		indexes = []string{s.keys.sessionPending(sessionID)}
	}
	n, err := s.countIndexed(ctx, indexes, sessionID, "")
	if err != nil {
		return 0, fmt.Errorf("redisstore: count pending: %w", err)
	}
	return n, nil
}

// CountPendingUnder implements store.Counts: CountPending(ctx, "")'s
// reads, counting only the requests whose session id starts with prefix.
func (s *Store) CountPendingUnder(ctx context.Context, prefix string) (int, error) {
	n, err := s.countIndexed(ctx, s.keys.allPendingShards(), "", prefix)
	if err != nil {
		return 0, fmt.Errorf("redisstore: count pending under %q: %w", prefix, err)
	}
	return n, nil
}

// countIndexed counts the pending requests the given pending indexes name,
// keeping only those of sessionID unless it is "", and of those only the
// ones whose session id starts with prefix.
func (s *Store) countIndexed(ctx context.Context, indexes []string, sessionID, prefix string) (int, error) {
	entries, err := s.readIndexes(ctx, indexes)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(entries))
	for i, e := range entries {
		cmds[i] = pipe.HMGet(ctx, s.keys.request(e.id), "session", "decision")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := 0
	stale := map[string][]any{} // index → ids to remove
	for i, cmd := range cmds {
		e := entries[i]
		// Every request hash has its session field from its creation on
		// (createRequestScript), so a missing one is a missing request.
		vals := cmd.Val()
		session, _ := vals[0].(string)
		switch {
		case vals[0] == nil:
			if indexStale(e.score) {
				stale[e.index] = append(stale[e.index], e.id)
			}
		case vals[1] != nil || (sessionID != "" && session != sessionID):
			stale[e.index] = append(stale[e.index], e.id)
		case strings.HasPrefix(session, prefix):
			n++
		}
	}
	if err := s.dropStale(ctx, stale); err != nil {
		return 0, err
	}
	return n, nil
}
