package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// answerTries bounds how often Remember reads the index again when another
// Remember of the same form and scope changed it in between.
const answerTries = 10

// Remember implements store.Answers.
func (s *Store) Remember(ctx context.Context, a store.RememberedAnswer) (store.RememberedAnswer, error) {
	if err := a.Validate(); err != nil {
		return a, fmt.Errorf("redisstore: remember answer: %w", err)
	}
	if a.ID == "" {
		a.ID = "ans-" + newID()
	}
	if a.At.IsZero() {
		a.At = time.Now()
	}
	body, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("redisstore: remember answer: %w", err)
	}
	entry := store.RememberedAudit(a)
	if entry.Channel, entry.ThreadTS, err = s.sessionThread(ctx, a.SessionID); err != nil {
		return a, fmt.Errorf("redisstore: remember answer: %w", err)
	}
	audit, mid, err := auditArgs(entry)
	if err != nil {
		return a, fmt.Errorf("redisstore: remember answer: %w", err)
	}
	idx := s.keys.answerIndex(a.Scope.Key(), a.Fingerprint)
	for range answerTries {
		old, err := s.rdb.Get(ctx, idx).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return a, fmt.Errorf("redisstore: remember answer for %s: %w", a.Scope.Key(), err)
		}
		oldKey := s.keys.answer(a.ID) // any key of ours when nothing is replaced
		if old != "" {
			oldKey = s.keys.answer(old)
		}
		n, err := s.run(ctx, rememberAnswer,
			[]string{s.keys.answer(a.ID), idx, s.keys.answers(), s.keys.audit(), oldKey, s.keys.auditHead(), s.keys.auditCheckpoints()},
			a.ID, body, strconv.FormatInt(a.At.UnixMicro(), 10), audit, old, s.auditCutoff(), mid,
		).Int()
		if err != nil {
			return a, fmt.Errorf("redisstore: remember answer for %s: %w", a.Scope.Key(), err)
		}
		switch n {
		case 1:
			return a, nil
		case -1:
			return a, fmt.Errorf("redisstore: remember answer %s: %w", a.ID, store.ErrExists)
		}
	}
	return a, fmt.Errorf("redisstore: remember answer for %s: the index kept changing", a.Scope.Key())
}

// getAnswer reads one answer and its JSON as stored.
func (s *Store) getAnswer(ctx context.Context, id string) (store.RememberedAnswer, string, error) {
	var a store.RememberedAnswer
	raw, err := s.rdb.Get(ctx, s.keys.answer(id)).Result()
	if errors.Is(err, redis.Nil) {
		return a, "", store.ErrNotFound
	}
	if err != nil {
		return a, "", err
	}
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return a, "", fmt.Errorf("answer %s: %w", id, err)
	}
	return a, raw, nil
}

// LookupAnswer implements store.Answers.
func (s *Store) LookupAnswer(ctx context.Context, scope store.AnswerScope, fingerprint string) (store.RememberedAnswer, error) {
	id, err := s.rdb.Get(ctx, s.keys.answerIndex(scope.Key(), fingerprint)).Result()
	if errors.Is(err, redis.Nil) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: lookup answer for %s: %w", scope.Key(), err)
	}
	a, _, err := s.getAnswer(ctx, id)
	if err != nil {
		return a, fmt.Errorf("redisstore: lookup answer for %s: %w", scope.Key(), err)
	}
	return a, nil
}

// ListAnswers implements store.Answers.
func (s *Store) ListAnswers(ctx context.Context) ([]store.RememberedAnswer, error) {
	ids, err := s.rdb.ZRange(ctx, s.keys.answers(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list answers: %w", err)
	}
	slices.Reverse(ids) // newest first
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = s.keys.answer(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list answers: %w", err)
	}
	out := make([]store.RememberedAnswer, 0, len(vals))
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // forgotten between the two reads
		}
		var a store.RememberedAnswer
		if err := json.Unmarshal([]byte(raw), &a); err != nil {
			return nil, fmt.Errorf("redisstore: list answers: answer %s: %w", ids[i], err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ForgetAnswer implements store.Answers.
func (s *Store) ForgetAnswer(ctx context.Context, id, by, byName string) (store.RememberedAnswer, error) {
	if by == "" {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w: who forgets it is required", id, store.ErrInvalid)
	}
	a, raw, err := s.getAnswer(ctx, id)
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w", id, err)
	}
	audit, mid, err := auditArgs(store.ForgottenAudit(a, by, byName, time.Now()))
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w", id, err)
	}
	n, err := s.run(ctx, forgetAnswer,
		[]string{s.keys.answer(id), s.keys.answerIndex(a.Scope.Key(), a.Fingerprint), s.keys.answers(), s.keys.audit(),
			s.keys.auditHead(), s.keys.auditCheckpoints()},
		id, raw, audit, s.auditCutoff(), mid,
	).Int()
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w", id, err)
	}
	if n == 0 {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w", id, store.ErrNotFound)
	}
	return a, nil
}
