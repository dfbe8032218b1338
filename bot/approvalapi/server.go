package approvalapi

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// Store is what the server reads and writes in the shared record: API
// sessions, their requests and long polls, each token's counts, and the
// tool runs it audits. It never decides a request itself: a withdrawal or
// an expiry goes through Host.Settle. Every backend (store.Store) is one.
type Store interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	CreateSession(ctx context.Context, s store.Session) error
	UpdateSession(ctx context.Context, id string, fn func(*store.Session) error) (store.Session, error)
	SessionsUpdatedSince(ctx context.Context, starter string, since time.Time) (int, error)

	CreateRequest(ctx context.Context, r store.Request) error
	GetRequest(ctx context.Context, id string) (store.Request, error)
	WaitDecision(ctx context.Context, id string) (store.Decision, error)
	Refuse(ctx context.Context, id string, d store.Decision) (store.Request, error)
	ListPending(ctx context.Context, sessionID string) ([]store.Request, error)
	CountPendingUnder(ctx context.Context, prefix string) (int, error)

	AppendAudit(ctx context.Context, a store.AuditEntry) error
}

var _ Store = store.Store(nil)

// Host is what the server needs of the bot that runs it: Slack for a
// session's thread and a tool run's line, and the one way a request is
// settled without a person.
type Host interface {
	// OpenThread posts the root of a new session's thread, as tok
	// reports it from: in tok's channel, or in the DM with its owner.
	OpenThread(ctx context.Context, log zerolog.Logger, tok Token, from Session) (store.MessageRef, error)
	// ToolRan shows a tool run tok reported in thread. It is queued, not
	// awaited: Claude Code waits for the hook, and a busy channel's
	// budget must not hold up the terminal.
	ToolRan(log zerolog.Logger, thread store.MessageRef, tok Token, ran ToolRan)
	// Settle settles request id with d, which no person signed (a
	// withdrawal, an expiry), exactly once as store.Decide does: it
	// returns the request as settled, with store.ErrAlreadyDecided when
	// another decision came first.
	Settle(ctx context.Context, id string, d store.Decision) (store.Request, error)
}

// ServerConfig is what the bot tells the server.
type ServerConfig struct {
	// Tokens are API_TOKENS; Limits bound each (zero fields take the
	// Default* values).
	Tokens []Token
	Limits Limits
	// SigningKey signs the sessions the server opens; its public half
	// checks every decision before the server returns it.
	SigningKey ed25519.PrivateKey
	// Sweep is how often, at least, the expiry sweeper lists the pending
	// requests (the bot's ReconcileInterval; zero: DefaultSweep).
	Sweep time.Duration
	Clock store.Clock
}

// DefaultSweep is ServerConfig.Sweep when it is zero.
const DefaultSweep = 30 * time.Second

// Server serves the approval API (see the package doc) and expires the
// requests whose client stopped polling (Run).
type Server struct {
	cfg   ServerConfig
	st    Store
	host  Host
	log   zerolog.Logger
	clock store.Clock

	// locks serialise, per key, what must not happen twice at once: open
	// one Claude session's thread (one thread per session), count a
	// token's sessions or pending requests with the write they admit.
	// rates and opening are the rest of the limits (limits.go); expiry
	// wakes the sweeper.
	locks   keyedLocks
	rates   rates
	opening opening
	expiry  expiry
	// armed, when set (tests), runs after the sweeper set its timer, due
	// at due.
	armed func(due time.Time)
}

// NewServer is the API of cfg's tokens over st, with host's Slack.
func NewServer(cfg ServerConfig, st Store, host Host, log zerolog.Logger) *Server {
	cfg.Limits = cfg.Limits.withDefaults()
	if cfg.Clock == nil {
		cfg.Clock = store.WallClock{}
	}
	cfg.Sweep = cmp.Or(cfg.Sweep, DefaultSweep)
	return &Server{cfg: cfg, st: st, host: host, log: log, clock: cfg.Clock, expiry: newExpiry()}
}

// Mount adds the API's routes to mux.
func (s *Server) Mount(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/requests", s.authed(s.create))
	mux.HandleFunc("GET /v1/requests/{id}", s.authed(s.get))
	mux.HandleFunc("DELETE /v1/requests/{id}", s.authed(s.withdraw))
	mux.HandleFunc("POST /v1/tool-results", s.authed(s.toolResult))
}

// withdrawnMessage is recorded when the caller withdraws a request: the
// reason it names, in the words the card shows.
func withdrawnMessage(w Withdrawal) string {
	switch w.Reason {
	case ReasonTerminal:
		return blocks.WithdrawnInTerminal
	case ReasonTimeout:
		return blocks.WithdrawnTimedOut(w.Waited)
	case ReasonUnanswered:
		return blocks.WithdrawnUnanswered(w.Waited)
	}
	return blocks.WithdrawnUnknown
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger)

// authed refuses a call without a known bearer token before anything is
// read or created.
func (s *Server) authed(next handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tok, known := tokenFor(s.cfg.Tokens, strings.TrimSpace(bearer))
		if !ok || !known {
			s.log.Warn().Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Msg("api call without a valid token")
			w.Header().Set("WWW-Authenticate", `Bearer realm="slackgate"`)
			writeError(w, http.StatusUnauthorized, "missing or unknown bearer token (API_TOKENS)")
			return
		}
		next(w, r, tok, s.log.With().Str("api_token", tok.Name).Logger())
	}
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, Error{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// owned loads the request named in the path if tok owns it; otherwise
// it answers 404 (or 503) and returns false.
func (s *Server) owned(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger) (store.Request, bool) {
	req, err := s.st.GetRequest(r.Context(), r.PathValue("id"))
	if err == nil && !strings.HasPrefix(req.SessionID, tok.sessionPrefix()) {
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no such request")
		return store.Request{}, false
	case err != nil:
		fail(w, log, "get request", err)
		return store.Request{}, false
	}
	return req, true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger) {
	wait := time.Duration(0)
	if q := r.URL.Query().Get("wait"); q != "" {
		d, err := time.ParseDuration(q)
		if err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "wait must be a duration such as 30s")
			return
		}
		wait = min(d, MaxWait)
	}
	req, ok := s.owned(w, r, tok, log)
	if !ok {
		return
	}
	log = log.With().Str("request_id", req.ID).Str("session_id", req.SessionID).Logger()
	req, err := s.await(r.Context(), req, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the caller went away
		}
		fail(w, log, "wait for decision", err)
		return
	}
	writeJSON(w, http.StatusOK, s.status(r.Context(), log, req))
}

// await waits up to wait (and no later than the request's deadline) for
// req's decision; a request past its deadline is settled as expired.
func (s *Server) await(ctx context.Context, req store.Request, wait time.Duration) (store.Request, error) {
	if req.Pending() && wait > 0 {
		if !req.Deadline.IsZero() {
			wait = min(wait, max(req.Deadline.Sub(s.clock.Now()), 0))
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err := s.st.WaitDecision(wctx, req.ID)
		cancel()
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return req, err
		}
		if req, err = s.st.GetRequest(ctx, req.ID); err != nil {
			return req, err
		}
	}
	if req.Pending() && !req.Deadline.IsZero() && !s.clock.Now().Before(req.Deadline) {
		return s.expire(ctx, req)
	}
	return req, nil
}

func (s *Server) withdraw(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger) {
	why, err := ParseWithdrawal(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req, ok := s.owned(w, r, tok, log)
	if !ok {
		return
	}
	log = log.With().Str("request_id", req.ID).Str("session_id", req.SessionID).Logger()
	d := store.Decision{Outcome: store.OutcomeCancelled, At: s.clock.Now(), Message: withdrawnMessage(why)}
	settled, err := s.host.Settle(r.Context(), req.ID, d)
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		fail(w, log, "withdraw request", err)
		return
	}
	if err == nil {
		log.Info().Msg("api: request withdrawn")
	}
	writeJSON(w, http.StatusOK, s.status(r.Context(), log, settled))
}

// status describes req. A person's decision counts only when it verifies
// with the bot's key, as a worker would check it; one that does not is
// refused (and recorded so), never returned as its claim.
func (s *Server) status(ctx context.Context, log zerolog.Logger, req store.Request) RequestStatus {
	st := RequestStatus{ID: req.ID, SessionID: req.SessionID, Kind: req.Kind, Status: StatusPending, Deadline: req.Deadline}
	if req.Pending() {
		return st
	}
	st.Status = StatusDecided
	d := *req.Decision
	if d.Outcome == store.OutcomeAllow || d.Outcome == store.OutcomeDeny {
		pub := s.cfg.SigningKey.Public().(ed25519.PublicKey)
		if err := store.VerifyDecision(pub, req, d); err != nil {
			log.Warn().Err(err).Msg("api: refusing a decision that does not verify")
			d = store.Decision{Outcome: store.OutcomeRefused, At: s.clock.Now(), Message: err.Error()}
			if _, rerr := s.st.Refuse(ctx, req.ID, d); rerr != nil {
				log.Error().Err(rerr).Msg("api: record refusal")
			}
		}
	}
	st.Decision = DecisionFor(req, d)
	return st
}

// DecisionFor is d, req's decision, as the API returns it: an allow with
// the whole input to run and the facts it was made on, a deny or an
// expiry with what Claude is told.
func DecisionFor(req store.Request, d store.Decision) *Decision {
	out := &Decision{Outcome: d.Outcome, By: d.By, ByName: d.ByName, Message: d.Message, Interrupt: d.Interrupt, Rule: d.Rule}
	switch d.Outcome {
	case store.OutcomeAllow:
		// The facts the signature covered: the client checks them against
		// what it sent.
		out.Facts = Facts(req.Home, req.Resolved)
		input := cmp.Or(string(d.UpdatedInput), string(req.Input), "{}")
		out.UpdatedInput = json.RawMessage(input)
		if len(d.Answers) > 0 {
			if merged, err := mergeAnswers(out.UpdatedInput, d.Answers); err == nil {
				out.UpdatedInput = merged
			}
		}
		out.Permissions, out.Answers = d.Permissions, d.Answers
	case store.OutcomeDeny:
		if strings.TrimSpace(out.Message) == "" {
			out.Message = "Denied by " + cmp.Or(d.ByName, d.By, "a person") + " in Slack."
		}
	case store.OutcomeExpired:
		out.Message = cmp.Or(out.Message, "Nobody answered in time.")
	case store.OutcomeRefused:
		out.Message = "slackgate refused a decision it could not verify; the request was denied."
	}
	return out
}

// mergeAnswers adds answers to a question's input, keeping every other
// field: Claude Code replaces the input with what the hook returns.
func mergeAnswers(input json.RawMessage, answers map[string]string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("approvalapi: question input is not an object")
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("approvalapi: answers: %w", err)
	}
	obj["answers"] = a
	return json.Marshal(obj)
}
