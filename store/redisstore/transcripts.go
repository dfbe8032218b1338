package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// SaveTranscript implements store.Transcripts.
func (s *Store) SaveTranscript(ctx context.Context, sessionID string, data []byte) error {
	if err := store.ValidateTranscript(sessionID, data); err != nil {
		return fmt.Errorf("redisstore: save transcript: %w", err)
	}
	keys := []string{s.keys.session(sessionID), s.keys.transcript(sessionID)}
	n, err := s.run(ctx, saveTranscript, keys, data).Int()
	if err != nil {
		return fmt.Errorf("redisstore: save transcript of %s: %w", sessionID, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: save transcript of %s: %w", sessionID, store.ErrNotFound)
	}
	return nil
}

// LoadTranscript implements store.Transcripts.
func (s *Store) LoadTranscript(ctx context.Context, sessionID string) ([]byte, error) {
	data, err := s.rdb.Get(ctx, s.keys.transcript(sessionID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: load transcript of %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: load transcript of %s: %w", sessionID, err)
	}
	return data, nil
}
