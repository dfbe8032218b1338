package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// apiNewRequest is the body of POST /v1/requests.
type apiNewRequest struct {
	ToolName    string             `json:"tool_name"`
	Input       json.RawMessage    `json:"input"`
	ToolUseID   string             `json:"tool_use_id,omitempty"`
	Title       string             `json:"title,omitempty"`
	Description string             `json:"description,omitempty"`
	Suggestions []store.Suggestion `json:"permission_suggestions,omitempty"`
	// Timeout is how long the request waits for a person ("10m"); past
	// it, it is settled as expired. Default apiDefaultTimeout.
	Timeout string     `json:"timeout,omitempty"`
	Session apiSession `json:"session"`
}

// apiSession says where a request comes from.
type apiSession struct {
	ID   string `json:"id"`             // the Claude session id
	Host string `json:"host,omitempty"` // the machine it runs on
	Cwd  string `json:"cwd,omitempty"`  // its working directory
	Name string `json:"name,omitempty"` // who runs it (a display name)
}

var sessionIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// validate checks the body and returns the request's timeout.
func (n apiNewRequest) validate() (time.Duration, error) {
	switch {
	case n.ToolName == "" || len(n.ToolName) > 256:
		return 0, errors.New("tool_name is required (at most 256 bytes)")
	case len(n.Input) > apiMaxInput:
		return 0, fmt.Errorf("input is larger than %d bytes", apiMaxInput)
	case !isJSONObject(n.Input):
		return 0, errors.New("input must be a JSON object")
	case !sessionIDRE.MatchString(n.Session.ID):
		return 0, errors.New("session.id is required: the Claude session id (letters, digits, - and _)")
	case len(n.Session.Host) > 256 || len(n.Session.Cwd) > 4096 || len(n.Session.Name) > 256:
		return 0, errors.New("session.host, session.cwd or session.name is too long")
	case len(n.Title) > 1000 || len(n.Description) > 4000 || len(n.ToolUseID) > 256 || len(n.Suggestions) > 32:
		return 0, errors.New("title, description, tool_use_id or permission_suggestions is too long")
	}
	if n.Timeout == "" {
		return apiDefaultTimeout, nil
	}
	d, err := time.ParseDuration(n.Timeout)
	if err != nil || d < time.Second || d > apiMaxTimeout {
		return 0, fmt.Errorf("timeout must be a duration between 1s and %s", apiMaxTimeout)
	}
	return d, nil
}

func isJSONObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && obj != nil
}

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
	var body apiNewRequest
	if !readJSONBody(w, r, &body) {
		return
	}
	timeout, invalid := body.validate()
	s, ok := b.apiValidSession(w, r, tok, log, invalid, body.Input, body.Session)
	if !ok {
		return
	}
	now := b.clock.Now()
	req := store.Request{
		ID: uuid.NewString(), SessionID: s.ID, Kind: apiKind(body.ToolName, body.Input),
		ToolName: body.ToolName, Input: body.Input, ToolUseID: body.ToolUseID, Title: body.Title,
		Description: body.Description, Suggestions: body.Suggestions,
		CreatedAt: now, Deadline: now.Add(timeout),
	}
	req.CLIRequestID = cmp.Or(body.ToolUseID, req.ID)
	if err := b.st.CreateRequest(r.Context(), req); err != nil {
		log.Error().Err(err).Msg("api: create request")
		apiError(w, http.StatusServiceUnavailable, "the store is unavailable; try again")
		return
	}
	log.Info().Str("request_id", req.ID).Str("session_id", s.ID).Str("tool", req.ToolName).Msg("api: request created")
	apiJSON(w, http.StatusCreated, apiRequestStatus{ID: req.ID, SessionID: s.ID, Kind: req.Kind, Status: "pending", Deadline: req.Deadline})
}

// apiSessionFor returns the store session of a Claude session seen through
// tok, opening its thread the first time: a root message in the token's
// channel. It is held idle with nothing queued, so no worker claims it.
// apiValidSession answers a body that failed validation (invalid: 413
// when its input is over apiMaxInput, else 400) or whose session cannot be
// opened (503), and otherwise returns the session the body names.
func (b *Bot) apiValidSession(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger,
	invalid error, input json.RawMessage, from apiSession) (store.Session, bool) {
	if invalid != nil {
		code := http.StatusBadRequest
		if len(input) > apiMaxInput {
			code = http.StatusRequestEntityTooLarge
		}
		apiError(w, code, invalid.Error())
		return store.Session{}, false
	}
	s, err := b.apiSessionFor(r.Context(), log, tok, from)
	if err != nil {
		log.Error().Err(err).Msg("api: open session")
		apiError(w, http.StatusServiceUnavailable, "cannot open the session's thread in Slack or the store; try again")
		return store.Session{}, false
	}
	return s, true
}

func (b *Bot) apiSessionFor(ctx context.Context, log zerolog.Logger, tok APIToken, from apiSession) (store.Session, error) {
	id := apiSessionID(tok, from.ID)
	b.apiSessions.Lock()
	defer b.apiSessions.Unlock()
	s, err := b.st.GetSession(ctx, id)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return s, err
	}
	text := fmt.Sprintf("Claude Code session on *%s* in `%s`", blocks.Escape(cmp.Or(from.Host, "an unnamed host")), blocks.Escape(cmp.Or(from.Cwd, "?")))
	if from.Name != "" {
		text += " (" + blocks.Escape(from.Name) + ")"
	}
	text += fmt.Sprintf(", through the approval API (token %s). Its requests appear in this thread.", tok.Name)
	channel, err := b.apiChannel(ctx, tok)
	if err != nil {
		return s, err
	}
	ts, err := b.out.Post(ctx, log, channel, "", outMsg{Text: text})
	if err != nil {
		return s, fmt.Errorf("bot: post api session root in %s: %w", channel, err)
	}
	now := b.clock.Now()
	s = store.Session{
		ID: id, Thread: store.MessageRef{Channel: channel, TS: ts}, WorkDir: from.Cwd,
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

// apiChannel is where tok's session threads go: its channel, or the DM
// with its owner, opened (or found) with conversations.open.
func (b *Bot) apiChannel(ctx context.Context, tok APIToken) (string, error) {
	if tok.User == "" {
		return tok.Channel, nil
	}
	ch, _, _, err := b.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{tok.User}})
	if err != nil {
		return "", fmt.Errorf("bot: open a DM with %s for api token %s (the app needs im:write): %w", tok.User, tok.Name, err)
	}
	return ch.ID, nil
}

// readJSONBody reads an API call's JSON body, at most apiMaxBody bytes,
// into v; when it cannot, it answers the call (413 or 400, saying why) and
// returns false.
func readJSONBody(w http.ResponseWriter, r *http.Request, v any) bool {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, apiMaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", apiMaxBody))
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
