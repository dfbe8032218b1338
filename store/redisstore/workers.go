package redisstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Heartbeat implements store.Workers: the key lives ttl on the server, so
// a worker's death is judged by Redis' clock alone.
func (s *Store) Heartbeat(ctx context.Context, worker string, ttl time.Duration) error {
	if worker == "" || ttl <= 0 {
		return fmt.Errorf("redisstore: heartbeat %q for %s: %w", worker, ttl, store.ErrInvalid)
	}
	if err := s.rdb.Set(ctx, s.keys.heartbeat(worker), "1", ttl).Err(); err != nil {
		return fmt.Errorf("redisstore: heartbeat %s: %w", worker, err)
	}
	return nil
}

// DeadWorkers implements store.Workers.
func (s *Store) DeadWorkers(ctx context.Context) ([]string, error) {
	workers, err := s.rdb.SMembers(ctx, s.keys.owners()).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: dead workers: %w", err)
	}
	if len(workers) == 0 {
		return nil, nil
	}
	p := s.rdb.Pipeline()
	alive := make([]interface{ Val() int64 }, len(workers))
	for i, w := range workers {
		alive[i] = p.Exists(ctx, s.keys.heartbeat(w))
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: dead workers: %w", err)
	}
	var dead []string
	for i, w := range workers {
		if alive[i].Val() == 0 {
			dead = append(dead, w)
		}
	}
	slices.Sort(dead)
	return dead, nil
}

// TakeOver implements store.Workers.
func (s *Store) TakeOver(ctx context.Context, sessionID, dead, worker string) error {
	if worker == "" || dead == "" || worker == dead {
		return fmt.Errorf("redisstore: take over %s from %q by %q: %w", sessionID, dead, worker, store.ErrInvalid)
	}
	won, err := s.changeOwner(ctx, sessionID, dead, worker)
	if err != nil {
		return fmt.Errorf("redisstore: take over %s from %s: %w", sessionID, dead, err)
	}
	if !won {
		return fmt.Errorf("redisstore: take over %s from %s: %w", sessionID, dead, store.ErrNotOwner)
	}
	return nil
}
