package bot

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// apiToolRan is the body of POST /v1/tool-results: a tool that ran in a
// Claude session slackgate did not start (`slackgate hook` on PostToolUse
// and PostToolUseFailure). It is recorded in the audit log and shown as one
// line in the session's thread.
type apiToolRan struct {
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Failed: the tool reported an error; Error is its text (shortened by
	// the caller, cut again here).
	Failed  bool       `json:"failed"`
	Error   string     `json:"error,omitempty"`
	Session apiSession `json:"session"`
}

// apiMaxErrorText caps the error text a report may carry.
const apiMaxErrorText = 4000

func (n apiToolRan) validate() error {
	switch {
	case n.ToolName == "" || len(n.ToolName) > 256:
		return errors.New("tool_name is required (at most 256 bytes)")
	case len(n.Input) > apiMaxInput:
		return fmt.Errorf("input is larger than %d bytes", apiMaxInput)
	case !isJSONObject(n.Input):
		return errors.New("input must be a JSON object")
	case !sessionIDRE.MatchString(n.Session.ID):
		return errors.New("session.id is required: the Claude session id (letters, digits, - and _)")
	case len(n.Session.Host) > 256 || len(n.Session.Cwd) > 4096 || len(n.Session.Name) > 256:
		return errors.New("session.host, session.cwd or session.name is too long")
	case len(n.ToolUseID) > 256 || len(n.Error) > apiMaxErrorText:
		return fmt.Errorf("tool_use_id or error is too long (error: at most %d bytes)", apiMaxErrorText)
	}
	return nil
}

func (b *Bot) apiToolResult(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) {
	var body apiToolRan
	if !readJSONBody(w, r, &body) || !apiValid(w, body.validate(), body.Input) {
		return
	}
	if err := b.apiToolResultRate(tok); err != nil {
		apiFail(w, log, "record tool result", err)
		return
	}
	s, err := b.apiSessionFor(r.Context(), log, tok, body.Session, nil)
	if err != nil {
		apiFail(w, log, "open session", err)
		return
	}
	log = log.With().Str("session_id", s.ID).Str("tool", body.ToolName).Logger()
	result := store.ToolSucceeded
	if body.Failed {
		result = store.ToolFailed
	}
	// The client's word, marked so: ReportedBy in the log, the token's
	// name on the thread line.
	entry := store.AuditEntry{
		At: b.clock.Now(), Action: store.AuditToolRan, SessionID: s.ID, Tool: body.ToolName,
		Message: blocks.ToolSummary(body.ToolName, body.Input), ToolUseID: body.ToolUseID, Result: result,
		ReportedBy: tok.client(),
	}
	if err := b.st.AppendAudit(r.Context(), entry); err != nil {
		apiFail(w, log, "audit tool result", err)
		return
	}
	// Queued, not awaited: Claude Code waits for the hook, and a busy
	// channel's budget must not hold up the terminal.
	m := blocks.ToolRanMessage(body.ToolName, body.Input, body.Failed, body.Error, tok.Name)
	b.out.PostLater(log, s.Thread.Channel, s.Thread.TS, outMsg{Text: m.Text, Blocks: m.Blocks})
	log.Info().Str("result", result).Msg("api: tool result recorded")
	apiJSON(w, http.StatusCreated, map[string]string{"status": "recorded", "session_id": s.ID})
}
