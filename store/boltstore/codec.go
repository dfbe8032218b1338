package boltstore

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	return b.Put(key, data)
}

// getJSON decodes the value at key into v; found is false when there is none.
func getJSON(b *bolt.Bucket, key []byte, v any) (found bool, err error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

func jsonUnmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
