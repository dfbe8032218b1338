package approvalapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// Limits bound what one token may do, so that a runaway script, or a
// command that read a hook's token, cannot flood a channel with threads
// and cards, fill the store, or bury the approvers. A call past a limit
// gets 429 with Retry-After and an error naming the limit; nothing is
// created. The counts every replica must agree on (open sessions, pending
// requests) come from the store; the per-minute rates are kept by each
// bot replica for itself, so N replicas behind a load balancer let a
// token up to N times the rate.
type Limits struct {
	// MaxSessions is how many sessions one token may have open: a
	// session is open from its first request or report until
	// sessionIdle passes without one. A new session past it is refused.
	MaxSessions int
	// MaxPending is how many of one token's requests may wait for a
	// person at once.
	MaxPending int
	// RequestsPerMinute and ToolResultsPerMinute bound the requests a
	// token creates and the tool results it reports, each with a burst of
	// a whole minute's worth.
	RequestsPerMinute    int
	ToolResultsPerMinute int
}

// The limits a token gets when Limits leaves them zero: more than a team
// running many sessions in parallel meets, little enough that a loop
// creating sessions or cards is stopped within a minute or two.
const (
	DefaultMaxSessions          = 100
	DefaultMaxPending           = 100
	DefaultRequestsPerMinute    = 60
	DefaultToolResultsPerMinute = 120
)

const (
	// sessionIdle is how long a session stays open without a request
	// or a report (see Limits.MaxSessions).
	sessionIdle = time.Hour
	// touchEvery is how stale a session's UpdatedAt may be before a
	// request or report in it writes it again.
	touchEvery = time.Minute
	// Retry-After for the counted limits: a hint, since what frees a
	// place (a person answering, a session going quiet) is not ours to
	// time.
	retryPending  = 30 * time.Second
	retrySessions = time.Minute
)

func (l Limits) withDefaults() Limits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.RequestsPerMinute <= 0 {
		l.RequestsPerMinute = DefaultRequestsPerMinute
	}
	if l.ToolResultsPerMinute <= 0 {
		l.ToolResultsPerMinute = DefaultToolResultsPerMinute
	}
	return l
}

// refusal is a call the API turns down on purpose: the status, the
// sentence the caller's person reads, and, for a limit, its name and when
// to try again.
type refusal struct {
	status     int
	msg        string
	limit      string
	retryAfter time.Duration
}

func (e *refusal) Error() string { return e.msg }

// errSlack marks a call's failure as Slack's (a session's thread could
// not be posted), not the store's.
var errSlack = errors.New("slack failed")

// fail answers a call that could not be done: a refusal as itself, a
// failure of Slack or the store (see StoreFailure) with its status and
// reason, logged.
func fail(w http.ResponseWriter, log zerolog.Logger, what string, err error) {
	var refused *refusal
	if errors.As(err, &refused) {
		log.Info().Str("limit", refused.limit).Msg("api: " + what + " refused: " + refused.msg)
		body := Error{Error: refused.msg}
		if refused.retryAfter > 0 {
			body.Limit, body.RetryAfter = refused.limit, int(math.Ceil(refused.retryAfter.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfter))
		}
		writeJSON(w, refused.status, body)
		return
	}
	log.Error().Err(err).Msg("api: " + what)
	status, reason := StoreFailure(err)
	if errors.Is(err, errSlack) {
		status, reason = http.StatusServiceUnavailable, "Slack did not take the session's thread"
	}
	if status >= 500 {
		reason += "; try again"
	}
	writeError(w, status, reason)
}

// StoreFailure is the one place a failed store call becomes words: the
// HTTP status an API call answers with, and the reason a person reads, in
// Slack (the bot says it too) or from the API's error.
func StoreFailure(err error) (status int, reason string) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, "it is no longer in the store"
	case errors.Is(err, store.ErrInvalid):
		return http.StatusBadRequest, "the store refused it as invalid"
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "the store did not answer in time"
	}
	return http.StatusServiceUnavailable, "the store is unavailable"
}

// rates are the per-minute budgets of each token on this replica.
type rates struct {
	mu      sync.Mutex
	buckets map[string]*outbox.Bucket
}

// take spends one call of key's budget (perMinute a minute, a minute's
// worth at once), or says how long until one is left.
func (r *rates) take(key string, perMinute int, now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[string]*outbox.Bucket{}
	}
	b := r.buckets[key]
	if b == nil {
		nb := outbox.NewBucket(float64(perMinute)/60, perMinute)
		b = &nb
		r.buckets[key] = b
	}
	if b.Take(now) {
		return true, 0
	}
	return false, b.ReadyAt(now).Sub(now)
}

// rate is one of a token's per-minute budgets: its key in rates, the
// setting that sets it, what it counts and what a call past it loses.
type rate struct{ key, setting, counts, lost string }

var (
	requestRate    = rate{"requests", "API_REQUESTS_PER_MINUTE", "requests", "this one was not created"}
	toolResultRate = rate{"results", "API_TOOL_RESULTS_PER_MINUTE", "tool results", "this one was not recorded"}
)

// spend spends one call of tok's budget r, perMinute a minute.
func (s *Server) spend(tok Token, r rate, perMinute int) error {
	ok, wait := s.rates.take(r.key+":"+tok.Name, perMinute, s.clock.Now())
	if ok {
		return nil
	}
	return &refusal{status: http.StatusTooManyRequests, limit: r.setting, retryAfter: wait,
		msg: fmt.Sprintf("API token %s sent %d %s within a minute, the most it may (%s=%d); %s. Try again in %s.",
			tok.Name, perMinute, r.counts, r.setting, perMinute, r.lost, wait.Round(time.Second))}
}

// underPending refuses a new request while tok has MaxPending waiting
// already. The count is the store's, so every replica sees the same one;
// the caller holds tok's pending lock until its request exists.
func (s *Server) underPending(ctx context.Context, tok Token) error {
	limit := s.cfg.Limits.MaxPending
	n, err := s.st.CountPendingUnder(ctx, tok.sessionPrefix())
	if err != nil {
		return fmt.Errorf("approvalapi: count pending requests of token %s: %w", tok.Name, err)
	}
	if n < limit {
		return nil
	}
	return &refusal{status: http.StatusTooManyRequests, limit: "API_MAX_PENDING", retryAfter: retryPending,
		msg: fmt.Sprintf("API token %s has %d requests waiting for a person, the most it may have (API_MAX_PENDING=%d); this one was not created. Try again once some are answered or withdrawn.",
			tok.Name, n, limit)}
}

// opening counts, per token, the sessions this server is opening right
// now: they are not in the store's count until their thread is posted.
type opening struct {
	mu      sync.Mutex
	opening map[string]int
}

func (o *opening) add(token string, d int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.opening == nil {
		o.opening = map[string]int{}
	}
	o.opening[token] += d
	n := o.opening[token]
	if n == 0 {
		delete(o.opening, token)
	}
	return n
}

// admitSession lets tok open one more session unless it has MaxSessions
// open (in the store, or being opened by this server); release gives the
// place back once the session exists or failed to.
func (s *Server) admitSession(ctx context.Context, tok Token) (release func(), err error) {
	unlock := s.locks.lock("sessions-of:" + tok.Name)
	defer unlock()
	limit := s.cfg.Limits.MaxSessions
	n, err := s.st.SessionsUpdatedSince(ctx, tok.client(), s.clock.Now().Add(-sessionIdle))
	if err != nil {
		return nil, fmt.Errorf("approvalapi: count open sessions of token %s: %w", tok.Name, err)
	}
	if opening := s.opening.add(tok.Name, 1); n+opening > limit {
		s.opening.add(tok.Name, -1)
		return nil, &refusal{status: http.StatusTooManyRequests, limit: "API_MAX_SESSIONS", retryAfter: retrySessions,
			msg: fmt.Sprintf("API token %s has %d sessions open (used within the last %s), the most it may have (API_MAX_SESSIONS=%d); no new session was opened. Use an open one, or try again once one has been quiet for %s.",
				tok.Name, n+opening-1, sessionIdle, limit, sessionIdle)}
	}
	return func() { s.opening.add(tok.Name, -1) }, nil
}

// keyedLocks lock by exact key. Unlike stripes, two keys never share a
// lock, so a lock held across a Slack call (a session's first post) makes
// only callers of the same key wait. A key's entry lives while it is held
// or waited for.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	refs int
}

// lock takes key's lock and returns its unlock.
func (k *keyedLocks) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
