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

// Standing rules (store.Standings) of each kind keep their own keys, as
// before they were one kind: each record's JSON at its own key, listed in
// a sorted set scored by when it was kept (unix microseconds); a
// remembered answer is also indexed by its scope and fingerprint, and a
// grant's key expires a little after the grant does.

// family is where records of kind live: the key of one, and the set that
// lists them.
func (s *Store) family(kind store.StandingKind) (key func(id string) string, zset string, err error) {
	switch kind {
	case store.StandingGrant:
		return s.keys.grant, s.keys.grants(), nil
	case store.StandingAnswer:
		return s.keys.answer, s.keys.answers(), nil
	}
	return nil, "", fmt.Errorf("%w: standing rule of unknown kind %q", store.ErrInvalid, kind)
}

// Keep implements store.Standings (addGrantScript, rememberAnswerScript).
func (s *Store) Keep(ctx context.Context, st store.Standing) (store.Standing, error) {
	if st.ID == "" {
		st.ID = string(st.Kind) + "-" + newID()
	}
	if st.At.IsZero() {
		st.At = time.Now()
	}
	if err := st.Validate(); err != nil {
		return st, fmt.Errorf("redisstore: keep: %w", err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		return st, fmt.Errorf("redisstore: keep %s: %w", st.ID, err)
	}
	entry := st.KeptAudit()
	w, err := s.sessionWhere(ctx, st.SessionID)
	if err != nil {
		return st, fmt.Errorf("redisstore: keep %s: %w", st.ID, err)
	}
	w.fill(&entry)
	audit, mid, err := auditArgs(entry)
	if err != nil {
		return st, fmt.Errorf("redisstore: keep %s: %w", st.ID, err)
	}
	if st.Kind == store.StandingGrant {
		err = s.addGrant(ctx, st, body, audit, mid)
	} else {
		err = s.remember(ctx, st, body, audit, mid)
	}
	if err != nil {
		return st, fmt.Errorf("redisstore: keep %s %s for %s: %w", st.Kind, st.ID, st.Scope.Key(), err)
	}
	return st, nil
}

// addGrantScript stores a grant, lists it and records it.
//
// KEYS[1] grant key      KEYS[2] grants zset    KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints
// ARGV[1] grant id       ARGV[2] grant JSON     ARGV[3] zset score
// ARGV[4] ms until it expires ("0": never)      ARGV[5] audit JSON
// ARGV[6] audit cutoff, as appendRecordsScript's       ARGV[7] the entry's link midstate
//
// Returns 0 when the id is taken (ErrExists), 1 when stored.
var addGrantScript = redis.NewScript(chainLua + `
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
if tonumber(ARGV[4]) > 0 then
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[4])
else
	redis.call('SET', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
appendAudit(KEYS[3], KEYS[4], KEYS[5], ARGV[5], ARGV[7], ARGV[6])
return 1
`)

// addGrant runs addGrantScript for g, its JSON and audit entry.
func (s *Store) addGrant(ctx context.Context, g store.Standing, body, audit []byte, mid string) error {
	ttl := int64(0)
	if !g.Expires.IsZero() {
		// Dropped by Redis a little after it stops applying: callers
		// check Live, so a grant never decides past its expiry.
		ttl = max(time.Until(g.Expires)+time.Minute, time.Minute).Milliseconds()
	}
	n, err := s.run(ctx, addGrantScript,
		[]string{s.keys.grant(g.ID), s.keys.grants(), s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints()},
		g.ID, body, strconv.FormatInt(g.At.UnixMicro(), 10), ttl, audit, s.auditCutoff(), mid,
	).Int()
	if err == nil && n == 0 {
		err = store.ErrExists
	}
	return err
}

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

// remember runs rememberAnswerScript for a, its JSON and audit entry,
// reading the index again while another Remember changes it.
func (s *Store) remember(ctx context.Context, a store.Standing, body, audit []byte, mid string) error {
	idx := s.keys.answerIndex(a.Scope.Key(), a.Fingerprint)
	for range answerTries {
		old, err := s.rdb.Get(ctx, idx).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		oldKey := s.keys.answer(a.ID) // any key of ours when nothing is replaced
		if old != "" {
			oldKey = s.keys.answer(old)
		}
		n, err := s.run(ctx, rememberAnswerScript,
			[]string{s.keys.answer(a.ID), idx, s.keys.answers(), s.keys.audit(), oldKey, s.keys.auditHead(), s.keys.auditCheckpoints()},
			a.ID, body, strconv.FormatInt(a.At.UnixMicro(), 10), audit, old, s.auditCutoff(), mid,
		).Int()
		switch {
		case err != nil:
			return err
		case n == rememberStored:
			return nil
		case n == rememberTaken:
			return store.ErrExists
		}
	}
	return errors.New("the index kept changing")
}

// get reads one record of kind and its JSON as stored.
func (s *Store) get(ctx context.Context, kind store.StandingKind, id string) (store.Standing, string, error) {
	st := store.Standing{}
	key, _, err := s.family(kind)
	if err != nil {
		return st, "", err
	}
	raw, err := s.rdb.Get(ctx, key(id)).Result()
	if errors.Is(err, redis.Nil) {
		return st, "", store.ErrNotFound
	}
	if err != nil {
		return st, "", err
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return st, "", fmt.Errorf("%s %s: %w", kind, id, err)
	}
	st.Kind = kind
	return st, raw, nil
}

// LookupAnswer implements store.Standings.
func (s *Store) LookupAnswer(ctx context.Context, scope store.Scope, fingerprint string) (store.Standing, error) {
	id, err := s.rdb.Get(ctx, s.keys.answerIndex(scope.Key(), fingerprint)).Result()
	if errors.Is(err, redis.Nil) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Standing{}, fmt.Errorf("redisstore: lookup answer for %s: %w", scope.Key(), err)
	}
	a, _, err := s.get(ctx, store.StandingAnswer, id)
	if err != nil {
		return a, fmt.Errorf("redisstore: lookup answer for %s: %w", scope.Key(), err)
	}
	return a, nil
}

// Kept implements store.Standings. An id whose key is gone (a grant
// expired, or a record was forgotten between the two reads) is skipped and
// dropped from the set, best effort: the next list tries again.
func (s *Store) Kept(ctx context.Context, kind store.StandingKind) ([]store.Standing, error) {
	keyOf, zset, err := s.family(kind)
	if err != nil {
		return nil, fmt.Errorf("redisstore: list: %w", err)
	}
	ids, err := s.rdb.ZRange(ctx, zset, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list %ss: %w", kind, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Reverse(ids)
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = keyOf(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list %ss: %w", kind, err)
	}
	out := make([]store.Standing, 0, len(vals))
	var gone []any
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			gone = append(gone, ids[i])
			continue
		}
		var st store.Standing
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return nil, fmt.Errorf("redisstore: list %ss: %s: %w", kind, ids[i], err)
		}
		st.Kind = kind
		out = append(out, st)
	}
	if len(gone) > 0 {
		_ = s.rdb.ZRem(ctx, zset, gone...).Err()
	}
	return out, nil
}

// forgetKeptScript removes a kept record and records who forgot it, while
// it is still the record the caller read; and its index entry, when one
// is given and still names it.
//
// KEYS[1] record key     KEYS[2] its sorted set  KEYS[3] audit stream
// KEYS[4] chain head     KEYS[5] checkpoints     KEYS[6] index key (KEYS[1] for none)
// ARGV[1] record id      ARGV[2] the JSON the caller read
// ARGV[3] audit JSON     ARGV[4] audit cutoff, as appendRecordsScript's
// ARGV[5] the entry's link midstate
//
// Returns 0 when the record is gone or changed (ErrNotFound), 1 when removed.
var forgetKeptScript = redis.NewScript(chainLua + `
if redis.call('GET', KEYS[1]) ~= ARGV[2] then
	return 0
end
redis.call('DEL', KEYS[1])
if KEYS[6] ~= KEYS[1] and redis.call('GET', KEYS[6]) == ARGV[1] then
	redis.call('DEL', KEYS[6])
end
redis.call('ZREM', KEYS[2], ARGV[1])
appendAudit(KEYS[3], KEYS[4], KEYS[5], ARGV[3], ARGV[5], ARGV[4])
return 1
`)

// Forget implements store.Standings (forgetKeptScript).
func (s *Store) Forget(ctx context.Context, kind store.StandingKind, id, by, byName string) (store.Standing, error) {
	if by == "" {
		return store.Standing{}, fmt.Errorf("redisstore: forget %s %s: %w: who forgets it is required", kind, id, store.ErrInvalid)
	}
	st, raw, err := s.get(ctx, kind, id)
	if err == nil {
		err = s.forget(ctx, st, raw, by, byName)
	}
	if err != nil {
		return store.Standing{}, fmt.Errorf("redisstore: forget %s %s: %w", kind, id, err)
	}
	return st, nil
}

// forget removes st, read as raw, and its index entry, appending who
// forgot it to the audit log; store.ErrNotFound when it changed or went
// since it was read.
func (s *Store) forget(ctx context.Context, st store.Standing, raw, by, byName string) error {
	key, zset, err := s.family(st.Kind)
	if err != nil {
		return err
	}
	index := key(st.ID)
	if st.Kind == store.StandingAnswer {
		index = s.keys.answerIndex(st.Scope.Key(), st.Fingerprint)
	}
	audit, mid, err := auditArgs(st.ForgottenAudit(by, byName, time.Now()))
	if err != nil {
		return err
	}
	n, err := s.run(ctx, forgetKeptScript,
		[]string{key(st.ID), zset, s.keys.audit(), s.keys.auditHead(), s.keys.auditCheckpoints(), index},
		st.ID, raw, audit, s.auditCutoff(), mid,
	).Int()
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	return err
}
