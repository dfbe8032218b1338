package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
)

var _ store.Store = (*Store)(nil)

// ErrClosed is returned by calls made on, or blocked in, a closed Store.
var ErrClosed = fmt.Errorf("redisstore: %w", store.ErrClosed)

// Defaults of the options.
const (
	DefaultPrefix        = "slackgate"
	DefaultEventsMaxLen  = 100_000
	DefaultRetention     = store.DefaultRetention
	DefaultClaimIdle     = 30 * time.Second
	pingTimeout          = 3 * time.Second
	blockTimeout         = time.Second // longest a blocking read runs before ctx is checked again
	maxBackoff           = 2 * time.Second
	updateSessionRetries = 100
	defaultPoolSize      = 256
)

// Option tunes a Store.
type Option func(*config)

type config struct {
	prefix          string
	eventsMaxLen    int64
	retention       time.Duration
	auditRetention  time.Duration
	claimIdle       time.Duration
	redeliveryDelay time.Duration
}

// WithPrefix sets the key prefix (default "slackgate"). Every key's hash tag
// starts with it ("{prefix}" or "{prefix:…}", see keys.go), so it must not
// contain braces or glob characters.
// Stores with different prefixes on one server never see each other's data.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithEventsMaxLen caps the events stream at about n entries (XADD MAXLEN ~).
// The audit stream is trimmed by time only (WithAuditRetention).
func WithEventsMaxLen(n int64) Option { return func(c *config) { c.eventsMaxLen = n } }

// WithRetention sets how long a settled request, and a session at rest,
// stay before Redis expires them (default store.DefaultRetention); 0 keeps
// them forever.
func WithRetention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// WithClaimIdle sets how long an event may stay unacknowledged by a consumer
// before Consume on another consumer takes it over (the consumer is presumed
// dead). It must exceed the longest a handler runs.
func WithClaimIdle(d time.Duration) Option { return func(c *config) { c.claimIdle = d } }

// WithRedeliveryDelay sets the base of store.RedeliveryDelay: how long Consume
// waits before delivering again an event whose handler failed, doubling with
// every failure (default store.DefaultRedeliveryDelay).
func WithRedeliveryDelay(d time.Duration) Option { return func(c *config) { c.redeliveryDelay = d } }

// Store is a store.Store on Redis: one server, a Sentinel-managed primary or
// a Cluster (see New). It holds one connection pool (one per node on a
// cluster) and one pub/sub connection shared by every WaitDecision.
type Store struct {
	rdb  redis.UniversalClient
	keys keys
	cfg  config

	// ctx ends when Close is called; blocking calls watch it.
	ctx    context.Context
	cancel context.CancelFunc

	decisions *decisionHub
	wg        sync.WaitGroup // the pub/sub listener

	closeOnce sync.Once
	closeErr  error
}

// New connects to the Redis at rawURL, as REDIS_URL: a single server
// (redis:// or rediss://), a Cluster or Sentinel (the forms are listed in
// url.go), and checks it answers, failing fast with an error that names the
// URL with its password masked.
func New(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	cfg := config{
		prefix:          DefaultPrefix,
		eventsMaxLen:    DefaultEventsMaxLen,
		retention:       DefaultRetention,
		auditRetention:  store.DefaultAuditRetention,
		claimIdle:       DefaultClaimIdle,
		redeliveryDelay: store.DefaultRedeliveryDelay,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.prefix == "" || strings.ContainsAny(cfg.prefix, "{}*?[]\\") {
		return nil, fmt.Errorf("redisstore: prefix %q: must be non-empty without braces or glob characters: %w", cfg.prefix, store.ErrInvalid)
	}
	if cfg.eventsMaxLen <= 0 || cfg.retention < 0 || cfg.auditRetention < 0 || cfg.claimIdle <= 0 || cfg.redeliveryDelay <= 0 {
		return nil, fmt.Errorf("redisstore: options must be positive: %w", store.ErrInvalid)
	}
	masked := MaskURL(rawURL)
	rdb, err := dial(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redisstore: parse %s: %w", masked, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := ping(pctx, rdb); err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("redisstore: cannot reach %s (is redis-server running and the URL right?): %w", masked, err)
	}
	s := &Store{rdb: rdb, keys: newKeys(cfg.prefix), cfg: cfg}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.decisions, err = startDecisionHub(pctx, s)
	if err != nil {
		s.cancel()
		_ = rdb.Close()
		return nil, fmt.Errorf("redisstore: subscribe on %s: %w", masked, err)
	}
	return s, nil
}

// MaskURL returns rawURL with any password replaced by "***", fit for logs
// and errors.
func MaskURL(rawURL string) string {
	if !strings.Contains(rawURL, "://") && !strings.Contains(rawURL, "@") {
		return rawURL // a bare seed list "host:port,host:port" carries no password
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		// Cut the userinfo by hand: everything between "://" and the last "@".
		if i := strings.Index(rawURL, "://"); i >= 0 {
			if j := strings.LastIndex(rawURL, "@"); j > i {
				return rawURL[:i+3] + "***" + rawURL[j:]
			}
		}
		return "<unparseable url>"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			// url.URL.String would escape the stars; swap in a placeholder
			// that needs no escaping, then replace it.
			u.User = url.UserPassword(u.User.Username(), "MASKED")
			return strings.Replace(u.String(), ":MASKED@", ":***@", 1)
		}
	}
	return u.String()
}

// Close stops the pub/sub listener and closes the connections. Calls blocked
// in WaitDecision, Claim, NextInput or Consume return ErrClosed. A second
// Close does nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		err := s.decisions.close()
		s.wg.Wait()
		s.closeErr = errors.Join(err, s.rdb.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("redisstore: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// Client exposes the underlying go-redis client (for health checks and
// tests): a *redis.Client for one server or Sentinel, a *redis.ClusterClient
// for a cluster.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// stopped returns the error a blocking call returns when ctx or the Store
// ended, or nil while both are live.
func (s *Store) stopped(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// backoff waits d (doubling it for next time) unless ctx or the Store ends
// first. Blocking loops call it after a failed Redis call so a lost
// connection is retried without spinning.
func (s *Store) backoff(ctx context.Context, d *time.Duration) error {
	t := time.NewTimer(*d)
	defer t.Stop()
	*d = min(*d*2, maxBackoff)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ctx.Done():
		return ErrClosed
	case <-t.C:
		return nil
	}
}

// --- requests ---

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
	a.Channel, a.ThreadTS = threadOf(sess)
	rec, err := newRecords(a, store.CreatedEvent(r))
	if err != nil {
		return fmt.Errorf("redisstore: create request %s: stored, but %w", r.ID, err)
	}
	rec.created, rec.thread = r.ID, encodeThread(a.Channel, a.ThreadTS)
	// A request holds its session, should it be at rest (a worker creates
	// requests only while it runs the session, so it rarely is).
	if err := s.afterRequest(ctx, rec, r.SessionID, ""); err != nil {
		return fmt.Errorf("redisstore: create request %s: stored, but %w", r.ID, err)
	}
	return nil
}

// createIndexed puts a new request into the pending indexes and then
// stores it (the createRequest script, whose reply it returns): the
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
		created, err = s.runIn(ctx, pipe, createRequest, []string{s.keys.request(r.ID)},
			bodyJSON, r.SessionID, string(r.Kind), r.ToolName, cardJSON)
		return err
	}, createRequest)
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
// set, record the thread on the request just created (setThread).
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

// appendArgs are the appendRecords script's keys and arguments for rec.
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
// body, card, decision and approvals, then reachFields.
var requestFields = append([]string{"body", "card", "decision", "approvals"}, reachFields...)

func fieldsToRequest(id string, vals []any) (store.Request, error) {
	str := func(v any) string { s, _ := v.(string); return s }
	if len(vals) != len(requestFields) || vals[0] == nil {
		return store.Request{}, store.ErrNotFound
	}
	r, err := decodeRequest(id, str(vals[0]), str(vals[1]), str(vals[2]), str(vals[3]))
	if err != nil {
		return r, err
	}
	return r, decodeReach(&r, str(vals[4]), str(vals[5]), str(vals[6]))
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
	res, err := s.run(ctx, decideRequest, []string{s.keys.request(id)},
		dJSON, s.cfg.retention.Milliseconds(), s.keys.decided(id),
	).Slice()
	if err != nil {
		return store.Request{}, fmt.Errorf("redisstore: decide %s: %w", id, err)
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
	case decideSettled:
		r, err := s.settled(ctx, id, str(1), str(2), str(3), d)
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
// with d, body, card and thread being what the script returned: the logs
// hear of it and the indexes let it go (a crash before leaves entries
// readers skip and remove); its session, at rest, may have waited only for
// this request.
func (s *Store) settled(ctx context.Context, id, body, card, thread string, d store.Decision) (store.Request, error) {
	r, err := decodeRequest(id, body, card, "")
	if err != nil {
		return store.Request{}, err
	}
	r.Decision = &d
	a := store.SettledAudit(r, d)
	a.Channel, a.ThreadTS = decodeThread(thread)
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
	a.Channel, a.ThreadTS = decodeThread(thread)
	rec, err := newRecords(a, store.SettledEvent(r, d))
	if err != nil {
		return store.Request{}, false, err
	}
	res, err := s.run(ctx, refuseRequest, []string{s.keys.request(id)}, read, dJSON).Slice()
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

// afterRequest finishes a request's creation or settlement in one pipeline
// (one round trip per node): it appends the audit entry and event, records
// a created request's thread, removes request unindex ("" for none) from
// the pending indexes, and reads the session, then retains the session
// should it be at rest.
func (s *Store) afterRequest(ctx context.Context, rec records, sessionID, unindex string) error {
	var get *redis.StringCmd
	err := s.pipelineScripts(ctx, func(pipe redis.Pipeliner) error {
		keys, args := s.appendArgs(rec)
		if _, err := s.runIn(ctx, pipe, appendRecords, keys, args...); err != nil {
			return err
		}
		if rec.created != "" && rec.thread != "" {
			// By its source: a NOSCRIPT for it would send the pipeline, and
			// so the audit entry, again.
			if _, err := s.evalIn(ctx, pipe, setThread, []string{s.keys.request(rec.created)}, rec.thread); err != nil {
				return err
			}
		}
		if unindex != "" {
			pipe.ZRem(ctx, s.keys.pendingOf(unindex), unindex)
			pipe.ZRem(ctx, s.keys.sessionPending(sessionID), unindex)
		}
		get = pipe.Get(ctx, s.keys.session(sessionID))
		return nil
	}, appendRecords)
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

// appendRecords appends a transition's audit entry and event (see the
// appendRecords script). It runs after the transition, in the global slot:
// a process dying between the two loses these two records, never the
// transition, and the readers of the logs are built for that (the bot
// reconciles pending requests from the index at start, and WaitDecision
// hears decisions by pub/sub and by reading the request).
func (s *Store) appendRecords(ctx context.Context, rec records) error {
	keys, args := s.appendArgs(rec)
	err := s.run(ctx, appendRecords, keys, args...).Err()
	if err != nil {
		return fmt.Errorf("append audit entry and event: %w", err)
	}
	return nil
}

// SetCard implements store.Requests.
func (s *Store) SetCard(ctx context.Context, id string, card store.MessageRef) (pending bool, err error) {
	cJSON, err := json.Marshal(card)
	if err != nil {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, err)
	}
	n, err := s.run(ctx, setCard, []string{s.keys.request(id)}, cJSON).Int()
	if err != nil {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, err)
	}
	if n == 0 {
		return false, fmt.Errorf("redisstore: set card %s: %w", id, store.ErrNotFound)
	}
	return n == 1, nil
}

// newID returns a random id for an input that came without one.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
