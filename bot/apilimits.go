package bot

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

	"github.com/slackgate/slackgate/bot/approvalapi"
)

// APILimits bound what one approval API token may do, so that a runaway
// script, or a command that read a hook's token, cannot flood a channel
// with threads and cards, fill the store, or bury the approvers. A call
// past a limit gets 429 with Retry-After and an error naming the limit;
// nothing is created. The counts every replica must agree on (open
// sessions, pending requests) come from the store; the per-minute rates
// are kept by each bot replica for itself, so N replicas behind a load
// balancer let a token up to N times the rate.
type APILimits struct {
	// MaxSessions is how many sessions one token may have open: a
	// session is open from its first request or report until
	// apiSessionIdle passes without one. A new session past it is refused.
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

// The limits a token gets when Config leaves them zero: more than a team
// running many sessions in parallel meets, little enough that a loop
// creating sessions or cards is stopped within a minute or two.
const (
	DefaultAPIMaxSessions          = 100
	DefaultAPIMaxPending           = 100
	DefaultAPIRequestsPerMinute    = 60
	DefaultAPIToolResultsPerMinute = 120
)

const (
	// apiSessionIdle is how long a session stays open without a request
	// or a report (see APILimits.MaxSessions).
	apiSessionIdle = time.Hour
	// apiTouchEvery is how stale a session's UpdatedAt may be before a
	// request or report in it writes it again.
	apiTouchEvery = time.Minute
	// Retry-After for the counted limits: a hint, since what frees a
	// place (a person answering, a session going quiet) is not ours to
	// time.
	apiRetryPending  = 30 * time.Second
	apiRetrySessions = time.Minute
)

func (l APILimits) withDefaults() APILimits {
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultAPIMaxSessions
	}
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultAPIMaxPending
	}
	if l.RequestsPerMinute <= 0 {
		l.RequestsPerMinute = DefaultAPIRequestsPerMinute
	}
	if l.ToolResultsPerMinute <= 0 {
		l.ToolResultsPerMinute = DefaultAPIToolResultsPerMinute
	}
	return l
}

// apiRefusal is a call the API turns down on purpose: the status, the
// sentence the caller's person reads, and, for a limit, its name and when
// to try again.
type apiRefusal struct {
	status     int
	msg        string
	limit      string
	retryAfter time.Duration
}

func (e *apiRefusal) Error() string { return e.msg }

// errSlack marks an API call's failure as Slack's (a session's thread could
// not be posted), not the store's.
var errSlack = errors.New("slack failed")

// apiFail answers a call that could not be done: a refusal as itself, a
// failure of Slack or the store (see storeFailure) with its status and
// reason, logged.
func apiFail(w http.ResponseWriter, log zerolog.Logger, what string, err error) {
	var refused *apiRefusal
	if errors.As(err, &refused) {
		log.Info().Str("limit", refused.limit).Msg("api: " + what + " refused: " + refused.msg)
		body := approvalapi.Error{Error: refused.msg}
		if refused.retryAfter > 0 {
			body.Limit, body.RetryAfter = refused.limit, int(math.Ceil(refused.retryAfter.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfter))
		}
		apiJSON(w, refused.status, body)
		return
	}
	log.Error().Err(err).Msg("api: " + what)
	status, reason := storeFailure(err)
	if errors.Is(err, errSlack) {
		status, reason = http.StatusServiceUnavailable, "Slack did not take the session's thread"
	}
	if status >= 500 {
		reason += "; try again"
	}
	apiError(w, status, reason)
}

// apiRates are the per-minute budgets of each token on this replica.
type apiRates struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

// take spends one call of key's budget (perMinute a minute, a minute's
// worth at once), or says how long until one is left.
func (r *apiRates) take(key string, perMinute int, now time.Time) (bool, time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[string]*bucket{}
	}
	b := r.buckets[key]
	if b == nil {
		nb := newBucket(float64(perMinute)/60, perMinute)
		b = &nb
		r.buckets[key] = b
	}
	if b.take(now, laneCard) {
		return true, 0
	}
	return false, b.readyAt(now, laneCard).Sub(now)
}

// apiRate is one of a token's per-minute budgets: its key in apiRates,
// the setting that sets it, what it counts and what a call past it loses.
type apiRate struct{ key, setting, counts, lost string }

var (
	apiRequestRate    = apiRate{"requests", "API_REQUESTS_PER_MINUTE", "requests", "this one was not created"}
	apiToolResultRate = apiRate{"results", "API_TOOL_RESULTS_PER_MINUTE", "tool results", "this one was not recorded"}
)

// apiSpend spends one call of tok's budget rate, perMinute a minute.
func (b *Bot) apiSpend(tok APIToken, rate apiRate, perMinute int) error {
	ok, wait := b.apiRates.take(rate.key+":"+tok.Name, perMinute, b.clock.Now())
	if ok {
		return nil
	}
	return &apiRefusal{status: http.StatusTooManyRequests, limit: rate.setting, retryAfter: wait,
		msg: fmt.Sprintf("API token %s sent %d %s within a minute, the most it may (%s=%d); %s. Try again in %s.",
			tok.Name, perMinute, rate.counts, rate.setting, perMinute, rate.lost, wait.Round(time.Second))}
}

// apiUnderPending refuses a new request while tok has MaxPending waiting
// already. The count is the store's, so every replica sees the same one;
// the caller holds tok's pending lock until its request exists.
func (b *Bot) apiUnderPending(ctx context.Context, tok APIToken) error {
	limit := b.cfg.APILimits.MaxPending
	n, err := b.st.CountPendingUnder(ctx, apiSessionPrefix+tok.Name+".")
	if err != nil {
		return fmt.Errorf("bot: count pending requests of api token %s: %w", tok.Name, err)
	}
	if n < limit {
		return nil
	}
	return &apiRefusal{status: http.StatusTooManyRequests, limit: "API_MAX_PENDING", retryAfter: apiRetryPending,
		msg: fmt.Sprintf("API token %s has %d requests waiting for a person, the most it may have (API_MAX_PENDING=%d); this one was not created. Try again once some are answered or withdrawn.",
			tok.Name, n, limit)}
}

// apiOpening counts, per token, the sessions this bot is opening right
// now: they are not in the store's count until their thread is posted.
type apiOpening struct {
	mu      sync.Mutex
	opening map[string]int
}

func (o *apiOpening) add(token string, d int) int {
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

// apiAdmitSession lets tok open one more session unless it has MaxSessions
// open (in the store, or being opened by this bot); release gives the
// place back once the session exists or failed to.
func (b *Bot) apiAdmitSession(ctx context.Context, tok APIToken) (release func(), err error) {
	unlock := b.apiLocks.lock("sessions-of:" + tok.Name)
	defer unlock()
	limit := b.cfg.APILimits.MaxSessions
	n, err := b.st.SessionsUpdatedSince(ctx, tok.client(), b.clock.Now().Add(-apiSessionIdle))
	if err != nil {
		return nil, fmt.Errorf("bot: count open sessions of api token %s: %w", tok.Name, err)
	}
	if opening := b.apiOpening.add(tok.Name, 1); n+opening > limit {
		b.apiOpening.add(tok.Name, -1)
		return nil, &apiRefusal{status: http.StatusTooManyRequests, limit: "API_MAX_SESSIONS", retryAfter: apiRetrySessions,
			msg: fmt.Sprintf("API token %s has %d sessions open (used within the last %s), the most it may have (API_MAX_SESSIONS=%d); no new session was opened. Use an open one, or try again once one has been quiet for %s.",
				tok.Name, n+opening-1, apiSessionIdle, limit, apiSessionIdle)}
	}
	return func() { b.apiOpening.add(tok.Name, -1) }, nil
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
