package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

// CreateRequest implements store.Requests.
func (s *Store) CreateRequest(ctx context.Context, r store.Request) error {
	if err := r.ValidateNew(); err != nil {
		return fmt.Errorf("redisstore: create request %q: %w", r.ID, err)
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	body := r
	body.Card = store.MessageRef{}
	bodyJSON, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("redisstore: create request %s: %w", r.ID, err)
	}
	cardJSON := ""
	if !r.Card.IsZero() {
		b, err := json.Marshal(r.Card)
		if err != nil {
			return fmt.Errorf("redisstore: create request %s: %w", r.ID, err)
		}
		cardJSON = string(b)
	}
	n, sess, err := s.createIndexed(ctx, r, bodyJSON, cardJSON)
	if err != nil {
		return fmt.Errorf("redisstore: create request %s: %w", r.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("redisstore: create request %s: %w", r.ID, store.ErrExists)
	}
	a := store.CreatedAudit(r)
	w := whereOf(sess)
	w.fill(&a)
	rec, err := newRecords(a, store.CreatedEvent(r))
	if err != nil {
		return fmt.Errorf("redisstore: create request %s: stored, but %w", r.ID, err)
	}
	rec.created, rec.thread = r.ID, w.encode()
	// A request holds its session, should it be at rest (a worker creates
	// requests only while it runs the session, so it rarely is).
	if err := s.afterRequest(ctx, rec, r.SessionID, ""); err != nil {
		return fmt.Errorf("redisstore: create request %s: stored, but %w", r.ID, err)
	}
	return nil
}

// createRequestScript stores a new pending request. The caller has already put
// its id into the pending indexes (index first: see keys.go).
//
// KEYS[1] request hash
// ARGV[1] body JSON      ARGV[2] session id     ARGV[3] kind
// ARGV[4] tool name      ARGV[5] card JSON ("" when not posted yet)
//
// Returns 0 when the id is taken (ErrExists), 1 when stored. A pending
// request has no TTL; decideRequestScript gives it one.
var createRequestScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
	return 0
end
redis.call('HSET', KEYS[1], 'body', ARGV[1], 'session', ARGV[2], 'kind', ARGV[3], 'tool', ARGV[4])
if ARGV[5] ~= '' then
	redis.call('HSET', KEYS[1], 'card', ARGV[5])
end
return 1
`)

// createIndexed puts a new request into the pending indexes and then
// stores it (createRequestScript, whose reply it returns): the
// indexes first, so no request is ever stored unindexed (keys.go). The
// script's pipeline also reads the request's session (nil when it has
// none), whose thread its audit entries carry.
func (s *Store) createIndexed(ctx context.Context, r store.Request, bodyJSON []byte, cardJSON string) (int64, []byte, error) {
	if err := s.indexPending(ctx, r.ID, r.SessionID); err != nil {
		return 0, nil, err
	}
	var created *redis.Cmd
	var sess *redis.StringCmd
	err := s.pipelineScripts(ctx, func(pipe redis.Pipeliner) error {
		sess = pipe.Get(ctx, s.keys.session(r.SessionID))
		var err error
		created, err = s.runIn(ctx, pipe, createRequestScript, []string{s.keys.request(r.ID)},
			bodyJSON, r.SessionID, string(r.Kind), r.ToolName, cardJSON)
		return err
	}, createRequestScript)
	if err != nil {
		return 0, nil, err
	}
	n, err := created.Int64()
	raw, _ := sess.Bytes() // redis.Nil: no session, no thread
	return n, raw, err
}

// records are what a transition appends to the logs, made ready in Go so
// no script builds JSON or hashes an entry's content: the audit entry's
// JSON and link midstate, and the event's JSON. created and thread, when
// set, record the thread on the request just created (setThreadScript).
type records struct {
	audit, event    []byte
	mid             string
	created, thread string
}

func newRecords(a store.AuditEntry, e store.Event) (records, error) {
	var rec records
	var err error
	if rec.audit, rec.mid, err = auditArgs(a); err != nil {
		return rec, fmt.Errorf("audit entry: %w", err)
	}
	if rec.event, err = json.Marshal(e); err != nil {
		return rec, fmt.Errorf("marshal event: %w", err)
	}
	return rec, nil
}

// appendArgs are appendRecordsScript's keys and arguments for rec.
func (s *Store) appendArgs(rec records) ([]string, []any) {
	return []string{s.keys.audit(), s.keys.events(), s.keys.auditHead(), s.keys.auditCheckpoints()},
		[]any{rec.audit, rec.event, s.cfg.eventsMaxLen, s.auditCutoff(), rec.mid}
}

// decodeRequest assembles a Request from its hash fields.
func decodeRequest(id, body, card, decision string, approvals ...string) (store.Request, error) {
	var r store.Request
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return store.Request{}, fmt.Errorf("decode request %s: %w", id, err)
	}
	if card != "" {
		if err := json.Unmarshal([]byte(card), &r.Card); err != nil {
			return store.Request{}, fmt.Errorf("decode card of %s: %w", id, err)
		}
	}
	if decision != "" {
		var d store.Decision
		if err := json.Unmarshal([]byte(decision), &d); err != nil {
			return store.Request{}, fmt.Errorf("decode decision of %s: %w", id, err)
		}
		r.Decision = &d
	}
	if len(approvals) > 0 && approvals[0] != "" {
		if err := json.Unmarshal([]byte(approvals[0]), &r.Approvals); err != nil {
			return store.Request{}, fmt.Errorf("decode approvals of %s: %w", id, err)
		}
	}
	return r, nil
}

// requestFields are the hash fields GetRequest reads, in this order: the
// body, card, decision and approvals, then reachFields and cardFields.
var requestFields = slices.Concat([]string{"body", "card", "decision", "approvals"}, reachFields, cardFields)

func fieldsToRequest(id string, vals []any) (store.Request, error) {
	str := func(v any) string { s, _ := v.(string); return s }
	if len(vals) != len(requestFields) || vals[0] == nil {
		return store.Request{}, store.ErrNotFound
	}
	r, err := decodeRequest(id, str(vals[0]), str(vals[1]), str(vals[2]), str(vals[3]))
	if err != nil {
		return r, err
	}
	if err := decodeReach(&r, str(vals[4]), str(vals[5]), str(vals[6])); err != nil {
		return r, err
	}
	return r, decodeCardState(&r, str(vals[7]), str(vals[8]), str(vals[9]), str(vals[10]), str(vals[11]))
}

// GetRequest implements store.Requests.
func (s *Store) GetRequest(ctx context.Context, id string) (store.Request, error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.request(id), requestFields...).Result()
	if err != nil {
		return store.Request{}, fmt.Errorf("redisstore: get request %s: %w", id, err)
	}
	r, err := fieldsToRequest(id, vals)
	if err != nil {
		return store.Request{}, fmt.Errorf("redisstore: get request %s: %w", id, err)
	}
	return r, nil
}

// Replies of decideRequestScript.
const (
	decideNotFound = 0
	decideSettled  = 1
	decideTooLate  = 2
)

// decideRequestScript settles a request exactly once (compare-and-set on the
// decision field) and announces it to WaitDecision. The caller then appends
// the audit entry and event (only when this call settled it) and removes
// the id from the pending indexes.
//
// KEYS[1] request hash
// ARGV[1] decision JSON  ARGV[2] retention of a settled request in ms (0: keep)
// ARGV[3] decided pub/sub channel
//
// The settled request's hash expires ARGV[2] ms from now (the retention).
// Returns {0} for an unknown id (ErrNotFound); {1, body, card, thread,
// approvals} when this call settled it (the approvals its audit entry
// names); {2, body, card, decision} when it was settled before
// (ErrAlreadyDecided), so the loser learns the winning decision.
var decideRequestScript = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'card', 'decision', 'thread', 'approvals')
if not f[1] then
	return {0}
end
if f[3] then
	return {2, f[1], f[2] or '', f[3]}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[1])
if tonumber(ARGV[2]) > 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('PUBLISH', ARGV[3], ARGV[1])
return {1, f[1], f[2] or '', f[4] or '', f[5] or ''}
`)

// Decide implements store.Requests. One script settles the request and
// returns its body, from which the audit entry and event are built (the
// body never changes once created), so no read precedes it.
func (s *Store) Decide(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	if err := d.Validate(); err != nil {
		return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, err)
	}
	dJSON, err := json.Marshal(d)
	if err != nil {
		return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, err)
	}
	res, err := s.run(ctx, decideRequestScript, []string{s.keys.request(id)},
		dJSON, s.cfg.retention.Milliseconds(), s.keys.decided(id),
	).Slice()
	if err != nil {
		return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, err)
	}
	str := func(i int) string { return replyString(res, i) }
	code, _ := res[0].(int64)
	switch code {
	case decideSettled:
		r, err := s.settled(ctx, id, str(1), str(2), str(3), str(4), d)
		if err != nil {
			return r, fmt.Errorf("redisstore: decide %s: settled, but %w", id, err)
		}
		return r, nil
	case decideTooLate:
		r, err := decodeRequest(id, str(1), str(2), str(3))
		if err != nil {
			return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, err)
		}
		return r, fmt.Errorf("redisstore: decide %s: %w", id, store.ErrAlreadyDecided)
	default:
		return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, store.ErrNotFound)
	}
}

// settled finishes what Decide's script began when it settled request id
// with d, body, card, thread and approvals being what the script returned: the logs
// hear of it and the indexes let it go (a crash before leaves entries
// readers skip and remove); its session, at rest, may have waited only for
// this request.
func (s *Store) settled(ctx context.Context, id, body, card, thread, approvals string, d store.Decision) (store.Request, error) {
	r, err := decodeRequest(id, body, card, "", approvals)
	if err != nil {
		return store.Request{}, err
	}
	r.Decision = &d
	a := store.SettledAudit(r, d)
	decodeWhere(thread).fill(&a)
	rec, err := newRecords(a, store.SettledEvent(r, d))
	if err != nil {
		return r, err
	}
	return r, s.afterRequest(ctx, rec, r.SessionID, id)
}

// refuseTries bounds how often Refuse reads again a decision that changed
// under it; only a writer racing the worker changes a settled decision.
const refuseTries = 5

// Refuse implements store.Requests.
func (s *Store) Refuse(ctx context.Context, id string, d store.Decision) (store.Request, error) {
	if err := d.ValidateRefusal(); err != nil {
		return store.Request{}, fmt.Errorf("redisstore: refuse %s: %w", id, err)
	}
	for range refuseTries {
		r, done, err := s.refuseOnce(ctx, id, d)
		if err != nil {
			return store.Request{}, fmt.Errorf("redisstore: refuse %s: %w", id, err)
		}
		if done {
			return r, nil
		}
	}
	return store.Request{}, fmt.Errorf("redisstore: refuse %s: the decision kept changing", id)
}

// Replies of refuseRequestScript.
const (
	refuseNotFound = 0
	refuseDone     = 1
	refuseChanged  = 2
)

// refuseRequestScript replaces a settled request's decision with a refusal. The
// Go caller read the decision it refuses (the audit entry it appends after
// names its decider); the script swaps only while the decision is still the
// one it read (compare-and-set), so the entry never names another
// decision's decider. The hash keeps the expiry Decide gave it.
//
// KEYS[1] request hash
// ARGV[1] the decision JSON the caller read      ARGV[2] refusal JSON
//
// Returns {0} for an unknown id (ErrNotFound); {1} when this call refused
// it; {2} when the decision is no longer the one read (the caller reads
// again).
var refuseRequestScript = redis.NewScript(`
local f = redis.call('HMGET', KEYS[1], 'body', 'decision')
if not f[1] then
	return {0}
end
if f[2] ~= ARGV[1] then
	return {2}
end
redis.call('HSET', KEYS[1], 'decision', ARGV[2])
return {1}
`)

// refuseOnce reads the request's decision and swaps in d if it is still
// that decision; done is false when it changed meanwhile.
func (s *Store) refuseOnce(ctx context.Context, id string, d store.Decision) (r store.Request, done bool, err error) {
	vals, err := s.rdb.HMGet(ctx, s.keys.request(id), slices.Concat(requestFields, []string{"thread"})...).Result()
	if err != nil {
		return store.Request{}, false, err
	}
	if r, err = fieldsToRequest(id, vals[:len(requestFields)]); err != nil {
		return store.Request{}, false, err
	}
	if err := r.CanRefuse(); err != nil {
		return store.Request{}, false, err
	}
	read, _ := vals[2].(string)
	dJSON, err := json.Marshal(d)
	if err != nil {
		return store.Request{}, false, err
	}
	a := store.RefusedAudit(r, *r.Decision, d)
	thread, _ := vals[len(requestFields)].(string)
	decodeWhere(thread).fill(&a)
	rec, err := newRecords(a, store.SettledEvent(r, d))
	if err != nil {
		return store.Request{}, false, err
	}
	res, err := s.run(ctx, refuseRequestScript, []string{s.keys.request(id)}, read, dJSON).Slice()
	if err != nil {
		return store.Request{}, false, err
	}
	switch code, _ := res[0].(int64); code {
	case refuseDone:
		r.Decision = &d
		if err := s.appendRecords(ctx, rec); err != nil {
			return r, false, fmt.Errorf("refused, but %w", err)
		}
		return r, true, nil
	case refuseChanged:
		return store.Request{}, false, nil
	default:
		return store.Request{}, false, store.ErrNotFound
	}
}

// setThreadScript records, after a request's creation, the thread and working
// directory of its session, which its later audit entries carry: only
// while the request exists, so a late call leaves no hash of its own
// behind.
//
// KEYS[1] request hash
// ARGV[1] "<channel> <thread ts> <workdir>"
//
// Returns 1 when set, 0 when the request is gone.
var setThreadScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
redis.call('HSET', KEYS[1], 'thread', ARGV[1])
return 1
`)

// afterRequest finishes a request's creation or settlement in one pipeline
// (one round trip per node): it appends the audit entry and event, records
// a created request's thread, removes request unindex ("" for none) from
// the pending indexes, and reads the session, then retains the session
// should it be at rest.
func (s *Store) afterRequest(ctx context.Context, rec records, sessionID, unindex string) error {
	var get *redis.StringCmd
	err := s.pipelineScripts(ctx, func(pipe redis.Pipeliner) error {
		keys, args := s.appendArgs(rec)
		if _, err := s.runIn(ctx, pipe, appendRecordsScript, keys, args...); err != nil {
			return err
		}
		if rec.created != "" && rec.thread != "" {
			// By its source: a NOSCRIPT for it would send the pipeline, and
			// so the audit entry, again.
			if _, err := s.evalIn(ctx, pipe, setThreadScript, []string{s.keys.request(rec.created)}, rec.thread); err != nil {
				return err
			}
		}
		if unindex != "" {
			pipe.ZRem(ctx, s.keys.pendingOf(unindex), unindex)
			pipe.ZRem(ctx, s.keys.sessionPending(sessionID), unindex)
		}
		get = pipe.Get(ctx, s.keys.session(sessionID))
		return nil
	}, appendRecordsScript)
	if err != nil {
		return fmt.Errorf("append audit entry and event: %w", err)
	}
	raw, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read session %s: %w", sessionID, err)
	}
	var sess store.Session
	if err := json.Unmarshal(raw, &sess); err != nil {
		return fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	if !sess.State.AtRest() {
		return nil
	}
	return s.retainSession(ctx, sess)
}

// pipelineScripts runs a pipeline that calls the given scripts by their SHA
// (s.runIn). Should the server not know one (NOSCRIPT: a new or restarted
// server), the scripts are loaded and the pipeline sent again, so every
// command in it must be safe to repeat. A redis.Nil reply is not an error.
func (s *Store) pipelineScripts(ctx context.Context, build func(redis.Pipeliner) error, scripts ...*redis.Script) error {
	for attempt := 0; ; attempt++ {
		pipe := s.rdb.Pipeline()
		if err := build(pipe); err != nil {
			return err
		}
		cmds, err := pipe.Exec(ctx)
		if errors.Is(err, redis.Nil) {
			err = nil // a missing key; a real error of another command is found below
		}
		for _, c := range cmds {
			if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
				err = e
				break
			}
		}
		if err == nil || attempt > 0 || !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err
		}
		for _, sc := range scripts {
			if err := sc.Load(ctx, s.rdb).Err(); err != nil {
				return err
			}
		}
	}
}

// appendRecordsScript appends a transition's audit entry, linked into the audit
// chain (chainLua), and its event to the two logs, in the global slot.
//
// KEYS[1] audit stream   KEYS[2] events stream  KEYS[3] chain head
// KEYS[4] checkpoints
// ARGV[1] audit JSON     ARGV[2] event JSON     ARGV[3] events MAXLEN (approximate)
// ARGV[4] audit cutoff (unix ms; "0" keeps all) ARGV[5] the entry's link midstate
//
// Returns the event's stream id.
var appendRecordsScript = redis.NewScript(chainLua + `
appendAudit(KEYS[1], KEYS[3], KEYS[4], ARGV[1], ARGV[5], ARGV[4])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'e', ARGV[2])
`)

// appendRecords appends a transition's audit entry and event (see
// appendRecordsScript). It runs after the transition, in the global slot:
// a process dying between the two loses these two records, never the
// transition, and the readers of the logs are built for that (the bot
// reconciles pending requests from the index at start, and WaitDecision
// hears decisions by pub/sub and by reading the request).
func (s *Store) appendRecords(ctx context.Context, rec records) error {
	keys, args := s.appendArgs(rec)
	err := s.run(ctx, appendRecordsScript, keys, args...).Err()
	if err != nil {
		return fmt.Errorf("append audit entry and event: %w", err)
	}
	return nil
}

// Replies of setCardScript and addCopyScript.
const (
	refNotFound = 0
	refPending  = 1
	refSettled  = 2
)

// setCardScript records where a request's card was posted.
//
// KEYS[1] request hash
// ARGV[1] card JSON
//
// Returns 0 for an unknown id (ErrNotFound), 1 when stored and the request
// is pending, 2 when stored and it is settled.
var setCardScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
	return 0
end
redis.call('HSET', KEYS[1], 'card', ARGV[1])
return 1 + redis.call('HEXISTS', KEYS[1], 'decision')
`)

// SetCard implements store.Requests.
func (s *Store) SetCard(ctx context.Context, id string, card store.MessageRef) (pending bool, err error) {
	cJSON, err := json.Marshal(card)
	if err != nil {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, err)
	}
	n, err := s.run(ctx, setCardScript, []string{s.keys.request(id)}, cJSON).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, err)
	}
	if n == refNotFound {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, store.ErrNotFound)
	}
	return n == refPending, nil
}

// replyString is element i of a script's reply as a string ("" when the
// reply is shorter or the element is no string).
func replyString(res []any, i int) string {
	if i < len(res) {
		v, _ := res[i].(string)
		return v
	}
	return ""
}
