package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
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

// Used reports whether anything was written under the store's prefix:
// any of the keys every request, event, answer, grant or audit entry
// writes (all in the prefix's own slot, so one EXISTS answers on a
// Cluster too). A command that only reads tells a wrong REDIS_KEY_PREFIX
// from an empty store by it.
func (s *Store) Used(ctx context.Context) (bool, error) {
	n, err := s.rdb.Exists(ctx, s.keys.events(), s.keys.audit(), s.keys.auditHead(), s.keys.answers(), s.keys.grants()).Result()
	if err != nil {
		return false, fmt.Errorf("redisstore: look for a store under %q: %w", s.cfg.prefix, err)
	}
	return n > 0, nil
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

// newID returns a random id for an input that came without one.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
