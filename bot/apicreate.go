package bot

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
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/store"
)

// apiKind gives a request its kind by the rule relay follows.
func apiKind(tool string, input json.RawMessage) store.Kind {
	switch {
	case tool == "ExitPlanMode":
		return store.KindPlan
	case store.IsQuestionForm(tool, input):
		return store.KindQuestion
	}
	return store.KindTool
}

func (b *Bot) apiCreate(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) {
	var body approvalapi.NewRequest
	if !readJSONBody(w, r, &body) {
		return
	}
	timeout, invalid := body.Validate()
	if !apiValid(w, invalid, body.Input) {
		return
	}
	if err := b.apiSpend(tok, apiRequestRate, b.cfg.APILimits.RequestsPerMinute); err != nil {
		apiFail(w, log, "create request", err)
		return
	}
	s, err := b.apiSessionFor(r.Context(), log, tok, body.Session, b.apiUnderPending)
	if err != nil {
		apiFail(w, log, "open session", err)
		return
	}
	now := b.clock.Now()
	req := store.Request{
		ID: uuid.NewString(), SessionID: s.ID, Kind: apiKind(body.ToolName, body.Input),
		ToolName: body.ToolName, Input: body.Input, ToolUseID: body.ToolUseID, Title: body.Title,
		Description: body.Description, Suggestions: body.Suggestions, Home: body.Home, Resolved: body.Resolved,
		CreatedAt: now, Deadline: now.Add(timeout),
	}
	req.CLIRequestID = cmp.Or(body.ToolUseID, req.ID)
	if err := b.apiCreateUnderPending(r.Context(), tok, req); err != nil {
		apiFail(w, log, "create request", err)
		return
	}
	b.apiExpiry.due(req.Deadline)
	log.Info().Str("request_id", req.ID).Str("session_id", s.ID).Str("tool", req.ToolName).Msg("api: request created")
	apiJSON(w, http.StatusCreated, approvalapi.RequestStatus{ID: req.ID, SessionID: s.ID, Kind: req.Kind, Status: approvalapi.StatusPending, Deadline: req.Deadline})
}

// apiCreateUnderPending creates req unless tok has MaxPending requests
// waiting already; tok's lock makes its concurrent calls count one after
// another (replicas may each pass one).
func (b *Bot) apiCreateUnderPending(ctx context.Context, tok APIToken, req store.Request) error {
	unlock := b.apiLocks.lock("pending-of:" + tok.Name)
	defer unlock()
	if err := b.apiUnderPending(ctx, tok); err != nil {
		return err
	}
	if err := b.st.CreateRequest(ctx, req); err != nil {
		return fmt.Errorf("bot: create api request %s: %w", req.ID, err)
	}
	return nil
}

// apiValid answers a body that failed validation (invalid: 413 when its
// input is too large, else 400) and reports whether it passed.
func apiValid(w http.ResponseWriter, invalid error, input json.RawMessage) bool {
	if invalid == nil {
		return true
	}
	code := http.StatusBadRequest
	if approvalapi.TooLarge(input) {
		code = http.StatusRequestEntityTooLarge
	}
	apiError(w, code, invalid.Error())
	return false
}

// apiSessionFor returns the store session of a Claude session seen through
// tok, opening its thread the first time: a root message in the token's
// channel. It is held idle with nothing queued, so no worker claims it.
// Only calls for the same Claude session wait for each other (one thread
// per session); a new session must pass precheck (nil: none) and tok's
// open-sessions limit before anything is posted.
func (b *Bot) apiSessionFor(ctx context.Context, log zerolog.Logger, tok APIToken, from approvalapi.Session,
	precheck func(context.Context, APIToken) error) (store.Session, error) {
	id := apiSessionID(tok, from.ID)
	unlock := b.apiLocks.lock("session:" + id)
	defer unlock()
	s, err := b.st.GetSession(ctx, id)
	switch {
	case err == nil:
		return b.apiTouch(ctx, s)
	case !errors.Is(err, store.ErrNotFound):
		return s, fmt.Errorf("bot: get api session %s: %w", id, err)
	}
	if precheck != nil {
		if err := precheck(ctx, tok); err != nil {
			return s, err
		}
	}
	release, err := b.apiAdmitSession(ctx, tok)
	if err != nil {
		return s, err
	}
	defer release()
	channel, err := b.apiChannel(ctx, tok)
	if err != nil {
		return s, err
	}
	root := blocks.APISessionRoot(tok.Name, from.Host, from.Cwd, from.Name)
	ts, err := b.out.Post(ctx, log, channel, "", outMsg{Text: root.Text, Blocks: root.Blocks})
	if err != nil {
		return s, fmt.Errorf("bot: post api session root in %s: %w: %w", channel, errSlack, err)
	}
	now := b.clock.Now()
	s = store.Session{
		ID: id, Thread: store.MessageRef{Channel: channel, TS: ts}, WorkDir: from.Cwd, StartedBy: tok.client(),
		State: store.SessionIdle, Started: true, CreatedAt: now, UpdatedAt: now, API: true,
	}
	// Signed as an API session: no worker runs it, whatever is queued.
	if err := store.SignSession(b.cfg.SigningKey, &s); err != nil {
		return s, fmt.Errorf("bot: sign api session %s: %w", id, err)
	}
	if err := b.st.CreateSession(ctx, s); errors.Is(err, store.ErrExists) {
		return b.st.GetSession(ctx, id) // another replica opened it a moment ago
	} else if err != nil {
		return s, fmt.Errorf("bot: create api session %s: %w", id, err)
	}
	log.Info().Str("session_id", id).Str("channel", channel).Msg("api: session opened")
	return s, nil
}

// apiTouch records that s is in use now, so it counts as open (see
// APILimits.MaxSessions); it writes at most once every apiTouchEvery.
func (b *Bot) apiTouch(ctx context.Context, s store.Session) (store.Session, error) {
	now := b.clock.Now()
	if now.Sub(s.UpdatedAt) < apiTouchEvery {
		return s, nil
	}
	touched, err := b.st.UpdateSession(ctx, s.ID, func(x *store.Session) error {
		x.UpdatedAt = now
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("bot: touch api session %s: %w", s.ID, err)
	}
	return touched, nil
}

// apiChannel is where tok's session threads go: its channel, or the DM
// with its owner, opened (or found) with conversations.open.
func (b *Bot) apiChannel(ctx context.Context, tok APIToken) (string, error) {
	if tok.User == "" {
		return tok.Channel, nil
	}
	ch, _, _, err := b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{tok.User}})
	if err != nil {
		return "", fmt.Errorf("bot: open a DM with %s for api token %s (the app needs im:write): %w: %w", tok.User, tok.Name, errSlack, err)
	}
	return ch.ID, nil
}

// readJSONBody reads an API call's JSON body, at most approvalapi.MaxBody bytes,
// into v; when it cannot, it answers the call (413 or 400, saying why) and
// returns false.
func readJSONBody(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, approvalapi.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", approvalapi.MaxBody))
			return false
		}
		apiError(w, http.StatusBadRequest, "cannot read body")
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		apiError(w, http.StatusBadRequest, "body is not valid JSON: "+err.Error())
		return false
	}
	return true
}
