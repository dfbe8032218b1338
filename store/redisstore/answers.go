package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// answerTries bounds how often Remember reads the index again when another
// Remember of the same form and scope changed it in between.
const answerTries = 10

// Replies of rememberAnswerScript.
const (
	rememberChanged = 0
	rememberStored  = 1
	rememberTaken   = -1
)

// rememberAnswerScript stores a remembered answer, indexes it by scope and
// fingerprint, drops the answer it replaces and records it. The Go caller
// read the index first: the script replaces only while the index still
// names what it read (compare-and-set), so the answer it drops is the one
// whose key it was given.
//
// KEYS[1] answer key     KEYS[2] index key      KEYS[3] answers zset
// KEYS[4] audit stream   KEYS[5] the replaced answer's key (any key when ARGV[5] is "")
// KEYS[6] chain head     KEYS[7] checkpoints
// ARGV[1] answer id      ARGV[2] answer JSON    ARGV[3] zset score
// ARGV[4] audit JSON     ARGV[5] the id the caller read from the index ("" for none)
// ARGV[6] audit cutoff, as appendRecordsScript's       ARGV[7] the entry's link midstate
//
// Returns 0 when the index changed since it was read (the caller reads
// again), -1 when the id names another answer (ErrExists), 1 when stored.
var rememberAnswerScript = redis.NewScript(chainLua + `
local old = redis.call('GET', KEYS[2]) or ''
if old ~= ARGV[5] then
	return 0
end
if old ~= ARGV[1] and redis.call('EXISTS', KEYS[1]) == 1 then
	return -1
end
if old ~= '' then
	redis.call('DEL', KEYS[5])
	redis.call('ZREM', KEYS[3], old)
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
appendAudit(KEYS[4], KEYS[6], KEYS[7], ARGV[4], ARGV[7], ARGV[6])
return 1
`)

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
	w, err := s.sessionWhere(ctx, a.SessionID)
	if err != nil {
		return a, fmt.Errorf("redisstore: remember answer: %w", err)
	}
	w.fill(&entry)
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
		n, err := s.run(ctx, rememberAnswerScript,
			[]string{s.keys.answer(a.ID), idx, s.keys.answers(), s.keys.audit(), oldKey, s.keys.auditHead(), s.keys.auditCheckpoints()},
			a.ID, body, strconv.FormatInt(a.At.UnixMicro(), 10), audit, old, s.auditCutoff(), mid,
		).Int()
		if err != nil {
			return a, fmt.Errorf("redisstore: remember answer for %s: %w", a.Scope.Key(), err)
		}
		switch n {
		case rememberStored:
			return a, nil
		case rememberTaken:
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
	out, err := listKept[store.RememberedAnswer](ctx, s, s.keys.answers(), s.keys.answer)
	if err != nil {
		return nil, fmt.Errorf("redisstore: list answers: %w", err)
	}
	return out, nil
}

// ForgetAnswer implements store.Answers (forgetKeptScript).
func (s *Store) ForgetAnswer(ctx context.Context, id, by, byName string) (store.RememberedAnswer, error) {
	if by == "" {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w: who forgets it is required", id, store.ErrInvalid)
	}
	a, raw, err := s.getAnswer(ctx, id)
	if err == nil {
		err = s.forgetKept(ctx, s.keys.answer(id), s.keys.answers(), s.keys.answerIndex(a.Scope.Key(), a.Fingerprint), id, raw,
			store.ForgottenAudit(a, by, byName, time.Now()))
	}
	if err != nil {
		return store.RememberedAnswer{}, fmt.Errorf("redisstore: forget answer %s: %w", id, err)
	}
	return a, nil
}
