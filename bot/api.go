package bot

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
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/store"
)

// The approval API lets Claude Code sessions slackgate did not start (a
// terminal, a CI job, through `slackgate hook`) put their permission
// prompts and questions on the same cards, before the same approvers:
//
//	POST   /v1/requests            create a request; 201 {"id", "status":"pending", ...}
//	GET    /v1/requests/{id}?wait= its state, waiting up to wait (≤ approvalapi.MaxWait) for a decision
//	DELETE /v1/requests/{id}       withdraw it, saying why (approvalapi.Withdrawal)
//	POST   /v1/tool-results        a tool that ran (the hook's PostToolUse): audited, one thread line
//
// The bodies are package approvalapi's, which holds the client too.
//
// Every call carries "Authorization: Bearer <token>" (API_TOKENS); a
// request belongs to the token that created it, and another token is told
// it does not exist. Each Claude session id gets one store.Session whose
// thread lives in the token's channel. Such a session never has queued
// input, so no worker ever claims it.
//
// A token is a hook's credential, and the hook runs as the same user as
// the commands Claude runs, so the API grants a token no more than a
// hook's job: create, poll and withdraw its own requests, and report tool
// results in its own sessions. Nothing a token sends decides anything (a
// decision comes only from an approver in Slack, signed), and everything
// it says about itself is shown as its claim: the thread's root names the
// token that reports the host, directory and user, and each tool_ran line
// and audit entry names the token that reported it (ReportedBy). Its
// limits (APILimits) bound how much of Slack, the store and the approvers'
// attention one token can take, and an API request expires at its
// deadline whether or not its client still polls (apiexpire.go).

// apiSessionPrefix starts the store id of every API session: it names the
// token, so requests are owned by it, and it can never be a UUID a
// Slack-started session has.
const apiSessionPrefix = "api."

// withdrawnMessage is recorded when the caller withdraws a request: the
// reason it names, in the words the card shows.
func withdrawnMessage(w approvalapi.Withdrawal) string {
	switch w.Reason {
	case approvalapi.ReasonTerminal:
		return blocks.WithdrawnInTerminal
	case approvalapi.ReasonTimeout:
		return blocks.WithdrawnTimedOut(w.Waited)
	case approvalapi.ReasonUnanswered:
		return blocks.WithdrawnUnanswered(w.Waited)
	}
	return blocks.WithdrawnUnknown
}

// elsewhereText answers a thread reply in an API session's thread.
const elsewhereText = "This Claude session runs elsewhere (in a terminal or a job, through the approval API): messages here do not reach it. Answer its cards here; talk to it where it runs."

// apiSessionID is the store id of a Claude session seen through tok.
func apiSessionID(tok APIToken, claudeSession string) string {
	return apiSessionPrefix + tok.Name + "." + claudeSession
}

// isAPISession reports whether a session was opened by the approval API.
func isAPISession(id string) bool { return strings.HasPrefix(id, apiSessionPrefix) }

// elsewhere tells user that an API session cannot be talked to from Slack
// and reports whether s is one; followUp calls it before queueing anything.
func (b *Bot) elsewhere(ctx context.Context, s store.Session, user string) bool {
	if !isAPISession(s.ID) {
		return false
	}
	b.tellUser(ctx, s.Thread, user, elsewhereText)
	return true
}

// mountAPI adds the API's routes to mux when tokens are configured.
func (b *Bot) mountAPI(mux *http.ServeMux) {
	if len(b.cfg.APITokens) == 0 {
		return
	}
	mux.HandleFunc("POST /v1/requests", b.authed(b.apiCreate))
	mux.HandleFunc("GET /v1/requests/{id}", b.authed(b.apiGet))
	mux.HandleFunc("DELETE /v1/requests/{id}", b.authed(b.apiDelete))
	mux.HandleFunc("POST /v1/tool-results", b.authed(b.apiToolResult))
}

// apiHandler is what Socket Mode serves on HTTPAddr: the API and a health
// check, none of the Slack routes (they need HTTP mode's signing secret).
func (b *Bot) apiHandler() http.Handler {
	mux := http.NewServeMux()
	b.mountAPI(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

type apiHandlerFunc func(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger)

// authed refuses a call without a known bearer token before anything is
// read or created.
func (b *Bot) authed(next apiHandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		tok, known := tokenFor(b.cfg.APITokens, strings.TrimSpace(bearer))
		if !ok || !known {
			b.log.Warn().Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Msg("api call without a valid token")
			w.Header().Set("WWW-Authenticate", `Bearer realm="slackgate"`)
			apiError(w, http.StatusUnauthorized, "missing or unknown bearer token (API_TOKENS)")
			return
		}
		next(w, r, tok, b.log.With().Str("api_token", tok.Name).Logger())
	}
}

func apiError(w http.ResponseWriter, code int, msg string) {
	apiJSON(w, code, approvalapi.Error{Error: msg})
}

func apiJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiOwned loads the request named in the path if tok owns it; otherwise
// it answers 404 (or 503) and returns false.
func (b *Bot) apiOwned(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) (store.Request, bool) {
	req, err := b.st.GetRequest(r.Context(), r.PathValue("id"))
	if err == nil && !strings.HasPrefix(req.SessionID, apiSessionPrefix+tok.Name+".") {
		err = store.ErrNotFound
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		apiError(w, http.StatusNotFound, "no such request")
		return store.Request{}, false
	case err != nil:
		apiFail(w, log, "get request", err)
		return store.Request{}, false
	}
	return req, true
}

func (b *Bot) apiGet(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) {
	wait := time.Duration(0)
	if s := r.URL.Query().Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			apiError(w, http.StatusBadRequest, "wait must be a duration such as 30s")
			return
		}
		wait = min(d, approvalapi.MaxWait)
	}
	req, ok := b.apiOwned(w, r, tok, log)
	if !ok {
		return
	}
	log = log.With().Str("request_id", req.ID).Str("session_id", req.SessionID).Logger()
	req, err := b.apiAwait(r.Context(), req, wait)
	if err != nil {
		if r.Context().Err() != nil {
			return // the caller went away
		}
		apiFail(w, log, "wait for decision", err)
		return
	}
	apiJSON(w, http.StatusOK, b.apiStatus(r.Context(), log, req))
}

// apiAwait waits up to wait (and no later than the request's deadline) for
// req's decision; a request past its deadline is settled as expired.
func (b *Bot) apiAwait(ctx context.Context, req store.Request, wait time.Duration) (store.Request, error) {
	if req.Pending() && wait > 0 {
		if !req.Deadline.IsZero() {
			wait = min(wait, max(req.Deadline.Sub(b.clock.Now()), 0))
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err := b.st.WaitDecision(wctx, req.ID)
		cancel()
		if err != nil && (ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded)) {
			return req, err
		}
		if req, err = b.st.GetRequest(ctx, req.ID); err != nil {
			return req, err
		}
	}
	if req.Pending() && !req.Deadline.IsZero() && !b.clock.Now().Before(req.Deadline) {
		return b.apiExpire(ctx, req)
	}
	return req, nil
}

func (b *Bot) apiDelete(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) {
	why, err := approvalapi.ParseWithdrawal(r.URL.Query())
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	req, ok := b.apiOwned(w, r, tok, log)
	if !ok {
		return
	}
	log = log.With().Str("request_id", req.ID).Str("session_id", req.SessionID).Logger()
	d := store.Decision{Outcome: store.OutcomeCancelled, At: b.clock.Now(), Message: withdrawnMessage(why)}
	settled, err := b.st.Decide(r.Context(), req.ID, d)
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		apiFail(w, log, "withdraw request", err)
		return
	}
	if err == nil {
		log.Info().Msg("api: request withdrawn")
	}
	apiJSON(w, http.StatusOK, b.apiStatus(r.Context(), log, settled))
}

// apiStatus describes req. A person's decision counts only when it
// verifies with this bot's key, as a worker would check it; one that does
// not is refused (and recorded so), never returned as its claim.
func (b *Bot) apiStatus(ctx context.Context, log zerolog.Logger, req store.Request) approvalapi.RequestStatus {
	st := approvalapi.RequestStatus{ID: req.ID, SessionID: req.SessionID, Kind: req.Kind, Status: approvalapi.StatusPending, Deadline: req.Deadline}
	if req.Pending() {
		return st
	}
	st.Status = approvalapi.StatusDecided
	d := *req.Decision
	if d.Outcome == store.OutcomeAllow || d.Outcome == store.OutcomeDeny {
		pub := b.cfg.SigningKey.Public().(ed25519.PublicKey)
		if err := store.VerifyDecision(pub, req, d); err != nil {
			log.Warn().Err(err).Msg("api: refusing a decision that does not verify")
			d = store.Decision{Outcome: store.OutcomeRefused, At: b.clock.Now(), Message: err.Error()}
			if _, rerr := b.st.Refuse(ctx, req.ID, d); rerr != nil {
				log.Error().Err(rerr).Msg("api: record refusal")
			}
		}
	}
	st.Decision = apiDecisionFor(req, d)
	return st
}

func apiDecisionFor(req store.Request, d store.Decision) *approvalapi.Decision {
	out := &approvalapi.Decision{Outcome: d.Outcome, By: d.By, ByName: d.ByName, Message: d.Message, Interrupt: d.Interrupt, Rule: d.Rule}
	switch d.Outcome {
	case store.OutcomeAllow:
		// The facts the signature covered: the client checks them against
		// what it sent.
		out.Facts = approvalapi.Facts(req.Home, req.Resolved)
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
		return nil, fmt.Errorf("bot: question input is not an object")
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("bot: answers: %w", err)
	}
	obj["answers"] = a
	return json.Marshal(obj)
}
