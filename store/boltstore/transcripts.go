package boltstore

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/slackgate/slackgate/store"
)

// bktTranscripts maps a session id to its transcript as the worker saved
// it. expireSession deletes the entry with its session.
var bktTranscripts = []byte("transcripts")

// SaveTranscript implements store.Transcripts.
func (s *Store) SaveTranscript(ctx context.Context, sessionID string, data []byte) error {
	if err := store.ValidateTranscript(sessionID, data); err != nil {
		return fmt.Errorf("boltstore: save transcript: %w", err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bktSessions).Get([]byte(sessionID)) == nil {
			return store.ErrNotFound
		}
		// bbolt keeps the slice until the commit; the caller's may change.
		return tx.Bucket(bktTranscripts).Put([]byte(sessionID), bytes.Clone(data))
	})
	if err != nil {
		return fmt.Errorf("boltstore: save transcript of %s: %w", sessionID, err)
	}
	return nil
}

// LoadTranscript implements store.Transcripts.
func (s *Store) LoadTranscript(ctx context.Context, sessionID string) ([]byte, error) {
	var data []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bktTranscripts).Get([]byte(sessionID))
		if v == nil {
			return store.ErrNotFound
		}
		data = bytes.Clone(v) // v is valid only inside the transaction
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("boltstore: load transcript of %s: %w", sessionID, err)
	}
	return data, nil
}
