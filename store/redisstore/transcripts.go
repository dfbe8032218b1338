package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// saveTranscriptScript stores a session's transcript with the expiry its session
// has now, so the two go together: none while the session is held, the
// session's own TTL once it rests (retainSessionScript keeps them in step
// after that).
//
// KEYS[1] session key    KEYS[2] transcript key
// ARGV[1] the transcript
//
// Returns 0 when the session does not exist (ErrNotFound), 1 when stored.
var saveTranscriptScript = redis.NewScript(`
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

// SaveTranscript implements store.Transcripts.
func (s *Store) SaveTranscript(ctx context.Context, sessionID string, data []byte) error {
	if err := store.ValidateTranscript(sessionID, data); err != nil {
		return fmt.Errorf("redisstore: save transcript: %w", err)
	}
	keys := []string{s.keys.session(sessionID), s.keys.transcript(sessionID)}
	n, err := s.run(ctx, saveTranscriptScript, keys, data).Int()
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
