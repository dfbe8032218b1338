package approvalapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

func (s *Server) create(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger) {
	var body NewRequest
	if !readJSONBody(w, r, &body) {
		return
	}
	timeout, invalid := body.Validate()
	if !valid(w, invalid, body.Input) {
		return
	}
	if err := s.spend(tok, requestRate, s.cfg.Limits.RequestsPerMinute); err != nil {
		fail(w, log, "create request", err)
		return
	}
	sess, err := s.sessionFor(r.Context(), log, tok, body.Session, s.underPending)
	if err != nil {
		fail(w, log, "open session", err)
		return
	}
	now := s.clock.Now()
	req := store.Request{
		ID: uuid.NewString(), SessionID: sess.ID, Kind: store.KindOf(body.ToolName, body.Input), ToolCall: body.Call(),
		Suggestions: body.Suggestions, Home: body.Home, Resolved: body.Resolved, CreatedAt: now, Deadline: now.Add(timeout),
	}
	req.CLIRequestID = cmp.Or(body.ToolUseID, req.ID)
	if err := s.createUnderPending(r.Context(), tok, req); err != nil {
		fail(w, log, "create request", err)
		return
	}
	s.expiry.due(req.Deadline)
	log.Info().Str("request_id", req.ID).Str("session_id", sess.ID).Str("tool", req.ToolName).Msg("api: request created")
	writeJSON(w, http.StatusCreated, RequestStatus{ID: req.ID, SessionID: sess.ID, Kind: req.Kind, Status: StatusPending, Deadline: req.Deadline})
}

// createUnderPending creates req unless tok has MaxPending requests
// waiting already; tok's lock makes its concurrent calls count one after
// another (replicas may each pass one).
func (s *Server) createUnderPending(ctx context.Context, tok Token, req store.Request) error {
	unlock := s.locks.lock("pending-of:" + tok.Name)
	defer unlock()
	if err := s.underPending(ctx, tok); err != nil {
		return err
	}
	if err := s.st.CreateRequest(ctx, req); err != nil {
		return fmt.Errorf("approvalapi: create request %s: %w", req.ID, err)
	}
	return nil
}

// valid answers a body that failed validation (invalid: 413 when its
// input is too large, else 400) and reports whether it passed.
func valid(w http.ResponseWriter, invalid error, input json.RawMessage) bool {
	if invalid == nil {
		return true
	}
	code := http.StatusBadRequest
	if TooLarge(input) {
		code = http.StatusRequestEntityTooLarge
	}
	writeError(w, code, invalid.Error())
	return false
}

// sessionFor returns the store session of a Claude session seen through
// tok, opening its thread the first time (Host.OpenThread). It is held
// idle with nothing queued, so no worker claims it. Only calls for the
// same Claude session wait for each other (one thread per session); a new
// session must pass precheck (nil: none) and tok's open-sessions limit
// before anything is posted.
func (s *Server) sessionFor(ctx context.Context, log zerolog.Logger, tok Token, from Session,
	precheck func(context.Context, Token) error) (store.Session, error) {
	id := tok.sessionID(from.ID)
	unlock := s.locks.lock("session:" + id)
	defer unlock()
	sess, err := s.st.GetSession(ctx, id)
	switch {
	case err == nil:
		return s.touch(ctx, sess)
	case !errors.Is(err, store.ErrNotFound):
		return sess, fmt.Errorf("approvalapi: get session %s: %w", id, err)
	}
	if precheck != nil {
		if err := precheck(ctx, tok); err != nil {
			return sess, err
		}
	}
	release, err := s.admitSession(ctx, tok)
	if err != nil {
		return sess, err
	}
	defer release()
	thread, err := s.host.OpenThread(ctx, log, tok, from)
	if err != nil {
		return sess, fmt.Errorf("approvalapi: open the thread of session %s: %w: %w", id, errSlack, err)
	}
	now := s.clock.Now()
	sess = store.Session{
		ID: id, Thread: thread, WorkDir: from.Cwd, StartedBy: tok.client(),
		State: store.SessionIdle, Started: true, CreatedAt: now, UpdatedAt: now, API: true,
	}
	// Signed as an API session: no worker runs it, whatever is queued.
	if err := store.SignSession(s.cfg.SigningKey, &sess); err != nil {
		return sess, fmt.Errorf("approvalapi: sign session %s: %w", id, err)
	}
	if err := s.st.CreateSession(ctx, sess); errors.Is(err, store.ErrExists) {
		return s.st.GetSession(ctx, id) // another replica opened it a moment ago
	} else if err != nil {
		return sess, fmt.Errorf("approvalapi: create session %s: %w", id, err)
	}
	log.Info().Str("session_id", id).Str("channel", thread.Channel).Msg("api: session opened")
	return sess, nil
}

// touch records that sess is in use now, so it counts as open (see
// Limits.MaxSessions); it writes at most once every touchEvery.
func (s *Server) touch(ctx context.Context, sess store.Session) (store.Session, error) {
	now := s.clock.Now()
	if now.Sub(sess.UpdatedAt) < touchEvery {
		return sess, nil
	}
	touched, err := s.st.UpdateSession(ctx, sess.ID, func(x *store.Session) error {
		x.UpdatedAt = now
		return nil
	})
	if err != nil {
		return sess, fmt.Errorf("approvalapi: touch session %s: %w", sess.ID, err)
	}
	return touched, nil
}

// readJSONBody reads an API call's JSON body, at most MaxBody bytes, into
// v; when it cannot, it answers the call (413 or 400, saying why) and
// returns false.
func readJSONBody(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBody))
			return false
		}
		writeError(w, http.StatusBadRequest, "cannot read body")
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		writeError(w, http.StatusBadRequest, "body is not valid JSON: "+err.Error())
		return false
	}
	return true
}
