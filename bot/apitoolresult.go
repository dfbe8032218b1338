package bot

import (
	"net/http"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/store"
)

func (b *Bot) apiToolResult(w http.ResponseWriter, r *http.Request, tok APIToken, log zerolog.Logger) {
	var body approvalapi.ToolRan
	if !readJSONBody(w, r, &body) || !apiValid(w, body.Validate(), body.Input) {
		return
	}
	if err := b.apiSpend(tok, apiToolResultRate, b.cfg.APILimits.ToolResultsPerMinute); err != nil {
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
	apiJSON(w, http.StatusCreated, approvalapi.Recorded{Status: "recorded", SessionID: s.ID})
}
