package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// indexGrace is how long an index entry may point at a record that does not
// exist yet: entries are written before their record (keys.go), so a reader
// meeting one in that window leaves it. Older ones were left by a process
// that died between the two steps, and the reader removes them.
const indexGrace = time.Minute

// indexScore is the score of an index entry added now.
func indexScore() float64 { return float64(time.Now().UnixMicro()) }

// indexStale reports whether an entry scored score, whose record is
// missing, is past indexGrace.
func indexStale(score float64) bool {
	return time.Now().Add(-indexGrace).UnixMicro() > int64(score)
}

// indexEntry is one member of a pending index, with the index it came from.
type indexEntry struct {
	index, id string
	score     float64
}

// readIndexes reads every entry of the given sorted sets in one pipeline
// (on a cluster, one per node holding them, run side by side).
func (s *Store) readIndexes(ctx context.Context, indexes []string) ([]indexEntry, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(indexes))
	for i, ix := range indexes {
		cmds[i] = pipe.ZRangeWithScores(ctx, ix, 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	var out []indexEntry
	for i, c := range cmds {
		for _, z := range c.Val() {
			id, _ := z.Member.(string)
			out = append(out, indexEntry{index: indexes[i], id: id, score: z.Score})
		}
	}
	return out, nil
}

// listIndexed returns the pending requests the given pending indexes name,
// oldest first, keeping only those of sessionID unless it is "". The
// requests are read in one pipeline. Entries whose request is settled, of
// another session, or missing past indexGrace are removed from their index
// (the repair of a step that did not happen; see keys.go).
func (s *Store) listIndexed(ctx context.Context, indexes []string, sessionID string) ([]store.Request, error) {
	entries, err := s.readIndexes(ctx, indexes)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(entries))
	for i, e := range entries {
		cmds[i] = pipe.HMGet(ctx, s.keys.request(e.id), requestFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	type found struct {
		r     store.Request
		score float64
	}
	var out []found
	stale := map[string][]any{} // index → ids to remove
	for i, cmd := range cmds {
		e := entries[i]
		r, err := fieldsToRequest(e.id, cmd.Val())
		switch {
		case errors.Is(err, store.ErrNotFound):
			if indexStale(e.score) {
				stale[e.index] = append(stale[e.index], e.id)
			}
			continue
		case err != nil:
			return nil, err
		case !r.Pending() || (sessionID != "" && r.SessionID != sessionID):
			stale[e.index] = append(stale[e.index], e.id)
			continue
		}
		out = append(out, found{r, e.score})
	}
	if err := s.dropStale(ctx, stale); err != nil {
		return nil, err
	}
	// CreatedAt orders them; the index score (when each was indexed) and the
	// id break ties the same way on every read.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.r.CreatedAt.Equal(b.r.CreatedAt) {
			return a.r.CreatedAt.Before(b.r.CreatedAt)
		}
		if a.score != b.score {
			return a.score < b.score
		}
		return a.r.ID < b.r.ID
	})
	reqs := make([]store.Request, len(out))
	for i, f := range out {
		reqs[i] = f.r
	}
	return reqs, nil
}

// dropStale removes stale index entries in one pipeline.
func (s *Store) dropStale(ctx context.Context, stale map[string][]any) error {
	if len(stale) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	for ix, ids := range stale {
		pipe.ZRem(ctx, ix, ids...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("drop stale index entries: %w", err)
	}
	return nil
}

// allPendingShards names every shard of the pending index.
func (k keys) allPendingShards() []string {
	out := make([]string, pendingShards)
	for i := range out {
		out[i] = k.pending(i)
	}
	return out
}

// ListPending implements store.Requests. Without a session it merges the
// shards of the pending index; with one it reads that session's own index.
// Either way it is two pipelines, whatever the number of requests.
func (s *Store) ListPending(ctx context.Context, sessionID string) ([]store.Request, error) {
	indexes := s.keys.allPendingShards()
	if sessionID != "" {
		indexes = []string{s.keys.sessionPending(sessionID)}
	}
	reqs, err := s.listIndexed(ctx, indexes, sessionID)
	if err != nil {
		return nil, fmt.Errorf("redisstore: list pending: %w", err)
	}
	return reqs, nil
}

// indexPending adds a request to the pending indexes (before it is stored).
func (s *Store) indexPending(ctx context.Context, id, sessionID string) error {
	score := indexScore()
	pipe := s.rdb.Pipeline()
	pipe.ZAddNX(ctx, s.keys.pendingOf(id), redis.Z{Score: score, Member: id})
	pipe.ZAddNX(ctx, s.keys.sessionPending(sessionID), redis.Z{Score: score, Member: id})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}
