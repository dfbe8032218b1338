package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/slackgate/slackgate/store"
)

// bridge connects one process to the store: its output becomes events, its
// can_use_tool requests become store requests.
type bridge struct {
	worker *Worker
	sl     *slot // the session's place, to count requests waiting
	sess   store.Session
	log    zerolog.Logger
	turn   *turnState

	// toolNames, started and apiError are touched only on the reader
	// goroutine. apiError is the kind of the turn's failed API call, for
	// its result.
	toolNames map[string]string
	started   bool
	apiError  string
}

func newBridge(w *Worker, sl *slot, sess store.Session, turn *turnState, log zerolog.Logger) *bridge {
	return &bridge{worker: w, sl: sl, sess: sess, log: log, turn: turn, toolNames: make(map[string]string), started: sess.Started}
}

func (b *bridge) handlers() ConnHandlers {
	return ConnHandlers{OnMessage: b.onMessage, OnCanUseTool: b.onCanUseTool, OnElicitation: b.onElicitation}
}

func (b *bridge) publish(ctx context.Context, e store.Event) {
	b.worker.publish(ctx, b.sess.ID, e, b.log)
}

func (b *bridge) onMessage(ctx context.Context, m Message) {
	switch {
	case m.Result != nil:
		b.onResult(ctx, m.Result)
	case m.System != nil:
		b.onSystem(ctx, m.System)
	case m.Assistant != nil:
		b.onAssistant(ctx, m.Assistant)
	case m.User != nil:
		b.onUser(ctx, m.User)
	}
}

func (b *bridge) onResult(ctx context.Context, r *ResultMessage) {
	by, asked := b.turn.takeStop()
	b.turn.set(false, r.IsError)
	apiError := b.apiError
	b.apiError = ""
	b.publish(ctx, store.Event{Type: store.EventResult, IsError: r.IsError, Result: &store.Result{
		Subtype: r.Subtype, IsError: r.IsError, Turns: r.NumTurns, DurationMS: r.DurationMS,
		CostUSD: r.TotalCostUSD, Text: r.Result, Errors: r.Errors, APIError: apiError,
	}})
	if asked && r.IsError {
		// After the result, so the thread reads "turn ended with an
		// error", then who stopped it. A turn that finished on its own
		// before the interrupt landed was not stopped.
		b.publish(ctx, store.Event{Type: store.EventInterrupted, Text: by})
	}
}

func (b *bridge) onSystem(ctx context.Context, s *SystemMessage) {
	if s.Subtype != "init" {
		return // status lines also follow set_permission_mode between turns
	}
	b.turn.set(true, false) // init opens every turn
	if b.started {
		return
	}
	b.started = true
	// The CLI has taken the session id: from now on it must be resumed.
	if _, err := b.worker.st.UpdateSession(ctx, b.sess.ID, func(s *store.Session) error {
		s.Started = true
		return nil
	}); err != nil {
		b.log.Error().Err(err).Msg("marking session started")
	}
}

func (b *bridge) onAssistant(ctx context.Context, a *AssistantMessage) {
	b.turn.set(true, false)
	if a.ParentToolUseID != nil {
		return // a subagent's inner traffic: too chatty for the thread
	}
	if a.UUID != "" {
		b.turn.noteMessage(a.UUID)
	}
	if a.Error != "" {
		// The CLI's own line for a failed API call: the result that
		// follows carries its text, and this kind says what it means.
		b.apiError = a.Error
		return
	}
	blocks, err := a.Message.Blocks()
	if err != nil {
		b.log.Debug().Err(err).Msg("assistant content")
		return
	}
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			if strings.TrimSpace(bl.Text) != "" {
				b.publish(ctx, store.Event{Type: store.EventAssistantText, Text: bl.Text})
			}
		case "tool_use":
			b.toolNames[bl.ID] = bl.Name
			b.publish(ctx, store.Event{Type: store.EventToolUse, Tool: bl.Name, Input: bl.Input})
		}
	}
}

func (b *bridge) onUser(ctx context.Context, u *UserMessage) {
	if u.IsReplay || u.ParentToolUseID != nil {
		return
	}
	blocks, err := u.Message.Blocks()
	if err != nil {
		return
	}
	for _, bl := range blocks {
		if bl.Type != "tool_result" {
			continue
		}
		b.publish(ctx, store.Event{Type: store.EventToolResult, Tool: b.toolNames[bl.ToolUseID],
			Text: capText(toolResultText(bl.Content), MaxResultText), IsError: bl.IsError})
	}
}

// times is when a request made now was asked and when it expires (zero:
// never, without a RequestTimeout).
func (b *bridge) times() (now, deadline time.Time) {
	now = b.worker.clock.Now()
	if b.worker.cfg.RequestTimeout > 0 {
		deadline = now.Add(b.worker.cfg.RequestTimeout)
	}
	return now, deadline
}

// onCanUseTool records the request, waits for its decision (or its
// deadline) and returns the answer for Claude.
func (b *bridge) onCanUseTool(ctx context.Context, cliID string, c CanUseTool) (PermissionResult, bool) {
	now, deadline := b.times()
	req := NewRequest(b.sess.ID, cliID, c, now, deadline)
	b.placeFacts(&req)
	log := b.log.With().Str("request_id", req.ID).Str("tool", c.ToolName).Logger()
	d, answer, failed, err := b.ask(ctx, req, log)
	if failed != "" {
		return Deny("slackgate "+failed+" this permission request, so it was denied: "+err.Error(), false), true
	}
	if !answer {
		return PermissionResult{}, false
	}
	res, ok, err := ResultFor(req, d)
	if err != nil {
		log.Error().Err(err).Msg("building the answer")
		return Deny("slackgate could not build an answer from the decision: "+err.Error(), false), true
	}
	log.Info().Str("outcome", string(d.Outcome)).Str("by", d.By).Bool("sent", ok).Msg("request settled")
	return res, ok
}

// placeFacts records on req what only this machine knows, for the team
// policy: the home of the CLI's user and the real paths, and whose
// messages the turn answers (not_self). This worker keeps req as it made
// it and checks every decision's signature over it, so a store writer who
// changes them gets the decision refused.
func (b *bridge) placeFacts(req *store.Request) {
	req.TurnBy = b.turn.askers()
	req.Home = b.worker.home
	if b.worker.cfg.Resolve != nil {
		req.Resolved = b.worker.cfg.Resolve(req.ToolName, req.Input, b.sess.WorkDir, req.Home)
	}
}

// onElicitation records an MCP server's elicitation, waits for a person
// (or the deadline) and returns the answer for the server.
func (b *bridge) onElicitation(ctx context.Context, cliID string, e Elicitation) (ElicitResult, bool) {
	now, deadline := b.times()
	req := NewElicitationRequest(b.sess.ID, cliID, e, now, deadline)
	req.TurnBy = b.turn.askers()
	log := b.log.With().Str("request_id", req.ID).Str("mcp_server", e.MCPServerName).Logger()
	d, answer, failed, _ := b.ask(ctx, req, log)
	if failed != "" {
		return ElicitResult{Action: "cancel"}, true // nobody answered: the server must not wait forever
	}
	if !answer {
		return ElicitResult{}, false
	}
	res, ok, err := ElicitResultFor(d)
	if err != nil {
		log.Error().Err(err).Msg("building the answer")
		return ElicitResult{Action: "cancel"}, true
	}
	log.Info().Str("outcome", string(d.Outcome)).Str("by", d.By).Str("action", res.Action).Bool("sent", ok).Msg("elicitation settled")
	return res, ok
}

// ask records req, waits for its decision (or its deadline) and returns the
// decision the worker may act on (see checked). answer is false when
// nothing is to be sent: Claude withdrew the request, or its process
// ended. failed, when set, says what went wrong with the store ("could not
// record", "lost track of"; err is why): the caller must still answer, or
// the CLI waits forever.
func (b *bridge) ask(ctx context.Context, req store.Request, log zerolog.Logger) (d store.Decision, answer bool, failed string, err error) {
	// Counted as waiting before its card can exist, and until before
	// Claude has the answer.
	b.worker.cap.wait(b.sl, 1)
	defer b.worker.cap.wait(b.sl, -1)
	if err := b.worker.st.CreateRequest(ctx, req); err != nil {
		log.Error().Err(err).Msg("recording control request")
		return d, false, "could not record", err
	}
	log.Info().Str("kind", string(req.Kind)).Msg("waiting for a decision")
	d, expiredHere, err := b.awaitDecision(ctx, req.ID, log)
	if err != nil && ctx.Err() == nil {
		// The store failed us, not Claude.
		log.Error().Err(err).Msg("waiting for the decision")
		return d, false, "lost track of", err
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrWithdrawn) {
			b.withdrawn(ctx, req.ID, log)
		}
		// ErrStreamClosed: the session loop ends the pending requests with
		// the exit reason.
		return d, false, "", nil
	}
	return b.checked(ctx, req, d, expiredHere, log), true, "", nil
}

// awaitDecision waits for the request's decision while its deadline, if
// any, runs. The deadline is enforced through store.Decide, so a person
// deciding at the same moment and the expiry race fairly: exactly one
// wins, and the winner is what WaitDecision returns. expiredHere reports
// whether this worker's own expiry is what settled it.
func (b *bridge) awaitDecision(ctx context.Context, requestID string, log zerolog.Logger) (d store.Decision, expiredHere bool, err error) {
	waitCtx, stopDeadline := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if timeout := b.worker.cfg.RequestTimeout; timeout > 0 {
		timer := b.worker.clock.NewTimer(timeout)
		wg.Add(1)
		go func() {
			defer wg.Done()
			expiredHere = b.expireOn(waitCtx, timer, requestID, log)
		}()
	}
	d, err = b.worker.st.WaitDecision(ctx, requestID)
	stopDeadline()
	wg.Wait()
	return d, expiredHere, err
}

// checked returns the decision the worker may act on. A person's decision
// counts only when its signature verifies over the request as this worker
// created it (not as the store now has it) and every permission update it
// carries is one of that request's own suggestions, for the session
// (store.CheckPermissions: the bot read the rule from the store, where a
// writer may have swapped it); an expiry only when this
// worker made it, in its own words, and an end only when this worker ended
// the request (shutting down) while this bridge waited, or when the session
// is no longer this worker's (it was counted lost and taken over). A waiting bridge
// never sees a genuine cancellation: Claude withdraws a request by
// cancelling the bridge's context, and the cancellation is recorded after.
// Anything else was written by someone who could reach the store but not a
// bot's key: it is refused (recorded, audited, shown on the card) and
// Claude is told no, so the turn neither hangs nor runs it.
func (b *bridge) checked(ctx context.Context, req store.Request, d store.Decision, expiredHere bool, log zerolog.Logger) store.Decision {
	var err error
	switch d.Outcome {
	case store.OutcomeAllow, store.OutcomeDeny:
		err = store.VerifyDecision(b.worker.cfg.VerifyKey, req, d)
		if err == nil {
			// A bot signs the rule it read from the store at the click;
			// only one this worker's CLI suggested reaches it.
			err = store.CheckPermissions(req, d.Permissions)
		}
	case store.OutcomeExpired:
		if expiredHere {
			d.Message = ExpiredMessage(b.worker.cfg.RequestTimeout)
			return d
		}
		err = errors.New("an expiry this worker did not make")
	case store.OutcomeRefused:
		err = errors.New("a refusal this worker did not make")
	case store.OutcomeEnded:
		if _, ours := b.worker.endedHere.LoadAndDelete(req.ID); ours {
			return d // the process is being stopped: nothing reaches Claude
		}
		if !b.worker.ownsSession(ctx, req.SessionID, log) {
			// This worker was counted lost and another took the session
			// over and ended its requests: the end stands, and nothing
			// from this process may act on the session any more.
			log.Warn().Msg("the session was taken over by another worker: its end stands")
			return d
		}
		err = errors.New("an end this worker did not make")
	default:
		err = fmt.Errorf("a %s outcome, which no one writes while Claude waits", d.Outcome)
	}
	if err == nil {
		return d
	}
	log.Error().Err(err).Str("claimed_outcome", string(d.Outcome)).Str("claimed_by", d.By).
		Msg("refusing a decision that does not verify")
	refusal := store.Decision{Outcome: store.OutcomeRefused, At: b.worker.clock.Now(),
		Message: fmt.Sprintf("The %s decision claiming to be from %s did not verify: %v", d.Outcome, cmp.Or(d.By, "nobody"), err)}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := b.worker.st.Refuse(rctx, req.ID, refusal); err != nil {
		log.Error().Err(err).Msg("recording the refusal")
	}
	return refusal
}

// expireOn decides the request as expired when timer fires, unless ctx
// ends first (the decision came, or Claude no longer waits). It reports
// whether its expiry settled the request.
func (b *bridge) expireOn(ctx context.Context, timer store.Timer, requestID string, log zerolog.Logger) bool {
	defer timer.Stop()
	select {
	case <-timer.C():
	case <-ctx.Done():
		return false
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	timeout := b.worker.cfg.RequestTimeout
	_, err := b.worker.st.Decide(dctx, requestID, store.Decision{Outcome: store.OutcomeExpired, At: b.worker.clock.Now(),
		Message: ExpiredMessage(timeout)})
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		log.Error().Err(err).Msg("expiring request")
	}
	return err == nil
}

// withdrawn settles a request Claude took back as cancelled, naming who
// stopped the turn when a person did.
func (b *bridge) withdrawn(ctx context.Context, requestID string, log zerolog.Logger) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	d := store.Decision{Outcome: store.OutcomeCancelled, At: b.worker.clock.Now(),
		Message: "Claude withdrew this request (the turn was interrupted or it was answered another way)"}
	if by, stopped := b.turn.stopper(); stopped {
		d.By, d.Message = by, "Claude's turn was stopped"
	}
	_, err := b.worker.st.Decide(dctx, requestID, d)
	if err != nil && !errors.Is(err, store.ErrAlreadyDecided) {
		log.Error().Err(err).Msg("cancelling withdrawn request")
	}
	log.Info().Msg("request withdrawn by claude")
}

// toolResultText flattens a tool_result's content (a string or blocks).
func toolResultText(raw []byte) string {
	m := APIMessage{Content: raw}
	blocks, err := m.Blocks()
	if err != nil {
		return string(raw)
	}
	var sb strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(bl.Text)
		}
	}
	return sb.String()
}

// capText shortens s to at most n bytes on a rune boundary, marking the cut.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
