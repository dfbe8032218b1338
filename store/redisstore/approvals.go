package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/slackgate/slackgate/store"
)

// Approve implements store.Approvals with one script on the request's hash
// (approveRequest), then reads the request back for its approvals.
func (s *Store) Approve(ctx context.Context, id string, a store.Approval, need int) (store.Request, bool, error) {
	if err := store.ValidateApprove(a, need); err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	aJSON, err := json.Marshal(a)
	if err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	res, err := s.run(ctx, approveRequest, []string{s.keys.request(id)}, a.By, aJSON, need, a.Approves()).Slice()
	if err != nil {
		return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
	}
	str := func(i int) string {
		if i < len(res) {
			v, _ := res[i].(string)
			return v
		}
		return ""
	}
	code, _ := res[0].(int64)
	switch code {
	case approveCounted:
		last, _ := res[2].(int64)
		r, err := s.GetRequest(ctx, id)
		if err != nil {
			return r, false, fmt.Errorf("redisstore: approve %s: counted, but %w", id, err)
		}
		return r, last == 1, nil
	case approveTooLate:
		r, err := decodeRequest(id, str(1), str(2), str(3))
		if err != nil {
			return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
		}
		return r, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrAlreadyDecided)
	case approveChanged:
		r, err := s.GetRequest(ctx, id)
		if err != nil {
			return r, false, fmt.Errorf("redisstore: approve %s: %w", id, err)
		}
		return r, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrInputChanged)
	}
	return store.Request{}, false, fmt.Errorf("redisstore: approve %s: %w", id, store.ErrNotFound)
}
