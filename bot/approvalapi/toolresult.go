package approvalapi

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

func (s *Server) toolResult(w http.ResponseWriter, r *http.Request, tok Token, log zerolog.Logger) {
	var body ToolRan
	if !readJSONBody(w, r, &body) || !valid(w, body.Validate(), body.Input) {
		return
	}
	if err := s.spend(tok, toolResultRate, s.cfg.Limits.ToolResultsPerMinute); err != nil {
		fail(w, log, "record tool result", err)
		return
	}
	sess, err := s.sessionFor(r.Context(), log, tok, body.Session, nil)
	if err != nil {
		fail(w, log, "open session", err)
		return
	}
	log = log.With().Str("session_id", sess.ID).Str("tool", body.ToolName).Logger()
	result := store.ToolSucceeded
	if body.Failed {
		result = store.ToolFailed
	}
	// The client's word, marked so: ReportedBy in the log, the token's
	// name on the thread line.
	entry := store.AuditEntry{
		At: s.clock.Now(), Action: store.AuditToolRan, SessionID: sess.ID, Tool: body.ToolName,
		Message: blocks.ToolSummary(body.ToolName, body.Input), ToolUseID: body.ToolUseID, Result: result,
		ReportedBy: tok.client(),
	}
	if err := s.st.AppendAudit(r.Context(), entry); err != nil {
		fail(w, log, "audit tool result", err)
		return
	}
	s.host.ToolRan(log, sess.Thread, tok, body)
	log.Info().Str("result", result).Msg("api: tool result recorded")
	writeJSON(w, http.StatusCreated, Recorded{Status: "recorded", SessionID: sess.ID})
}
