package relay

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/slackgate/slackgate/store"
)

// NewRequest turns a can_use_tool request into a pending store.Request with
// a fresh id. deadline is zero when requests never expire.
func NewRequest(sessionID, cliRequestID string, c CanUseTool, now, deadline time.Time) store.Request {
	r := store.Request{
		ID: uuid.NewString(), SessionID: sessionID, CLIRequestID: cliRequestID, Kind: store.KindOf(c.ToolName, c.Input),
		ToolCall: c.ToolCall, CreatedAt: now, Deadline: deadline,
	}
	for _, raw := range c.Suggestions {
		var s store.Suggestion
		// A suggestion of a shape we do not know is left out rather than
		// failing the request: the person can still allow or deny.
		if err := json.Unmarshal(raw, &s); err == nil && s.Type != "" {
			r.Suggestions = append(r.Suggestions, s)
		}
	}
	return r
}

// ElicitationTool is the ToolName of every elicitation request: the audit
// log's "tool" for them (the server is in MCPServer).
const ElicitationTool = "elicitation"

// NewElicitationRequest turns an elicitation into a pending store.Request
// with a fresh id. Its input is the request as the CLI sent it, so the
// signature of a decision covers exactly what the person was shown.
func NewElicitationRequest(sessionID, cliRequestID string, e Elicitation, now, deadline time.Time) store.Request {
	input := e.Raw
	if len(input) == 0 {
		input, _ = json.Marshal(e)
	}
	return store.Request{
		ID: uuid.NewString(), SessionID: sessionID, CLIRequestID: cliRequestID, Kind: store.KindElicitation,
		ToolCall: store.ToolCall{ToolName: ElicitationTool, DisplayName: e.DisplayName, Input: input, Description: e.Description,
			Title: e.Title, MCPServer: e.MCPServerName},
		CreatedAt: now, Deadline: deadline,
	}
}

// ElicitResultFor builds the answer to a settled elicitation: a person's
// submission is accept with its content (none for a URL visited), their
// Decline decline, their Cancel (Skipped) and nobody answering in time
// cancel, a refused decision decline. ok is false when nothing must be
// sent (cancelled or ended: Claude no longer waits).
func ElicitResultFor(d store.Decision) (res ElicitResult, ok bool, err error) {
	switch {
	case d.Outcome == store.OutcomeAllow:
		res = ElicitResult{Action: "accept", Content: d.Content}
	case d.Outcome == store.OutcomeDeny && d.Skipped, d.Outcome == store.OutcomeExpired:
		res = ElicitResult{Action: "cancel"}
	case d.Outcome == store.OutcomeDeny, d.Outcome == store.OutcomeRefused:
		res = ElicitResult{Action: "decline"}
	default:
		return ElicitResult{}, false, nil
	}
	if err := res.Validate(); err != nil {
		return ElicitResult{}, false, err
	}
	return res, true, nil
}

// ExpiredMessage is what Claude is told when nobody answered in time.
func ExpiredMessage(timeout time.Duration) string {
	return fmt.Sprintf("Nobody answered this permission request within the timeout (%s), so it was denied. Do not retry it; continue without it or ask the user.", timeout)
}

// RefusedMessage is what Claude is told when the worker refused a decision
// it could not verify. It is fixed: a forged decision's own words never
// reach Claude.
const RefusedMessage = "slackgate refused a decision it could not verify; the request was denied. Do not retry it; continue without it or ask the user."

// ResultFor builds the control_response for a settled request. ok is false
// when nothing must be sent (cancelled or ended: Claude no longer waits).
func ResultFor(r store.Request, d store.Decision) (res PermissionResult, ok bool, err error) {
	switch d.Outcome {
	case store.OutcomeAllow:
		input := r.Input
		if len(d.UpdatedInput) > 0 {
			input = d.UpdatedInput
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if len(d.Answers) > 0 {
			if input, err = withAnswers(input, d.Answers); err != nil {
				return PermissionResult{}, false, err
			}
		}
		var perms []json.RawMessage
		for _, p := range d.Permissions {
			b, err := json.Marshal(p)
			if err != nil {
				return PermissionResult{}, false, fmt.Errorf("relay: permission update: %w", err)
			}
			perms = append(perms, b)
		}
		res = Allow(input, perms...)
	case store.OutcomeDeny:
		msg := d.Message
		if strings.TrimSpace(msg) == "" {
			msg = defaultDenyMessage(r.Kind, d.ByName)
		}
		res = Deny(msg, d.Interrupt)
	case store.OutcomeExpired:
		msg := d.Message
		if strings.TrimSpace(msg) == "" {
			msg = "Nobody answered this permission request within the timeout, so it was denied."
		}
		res = Deny(msg, false)
	case store.OutcomeRefused:
		res = Deny(RefusedMessage, false)
	default:
		return PermissionResult{}, false, nil
	}
	if err := res.Validate(); err != nil {
		return PermissionResult{}, false, err
	}
	return res, true, nil
}

func defaultDenyMessage(kind store.Kind, by string) string {
	if by == "" {
		by = "a person"
	}
	switch kind {
	case store.KindQuestion:
		return fmt.Sprintf("%s declined to answer.", by)
	case store.KindPlan:
		return fmt.Sprintf("%s did not approve the plan. Keep planning.", by)
	}
	return fmt.Sprintf("Denied by %s.", by)
}

// withAnswers adds AskUserQuestion answers (question text → label, labels
// joined ", ", or free text) to the tool input, keeping every other field.
func withAnswers(input json.RawMessage, answers map[string]string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("relay: question input is not an object: %w", ErrInvalidResult)
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("relay: answers: %w", err)
	}
	obj["answers"] = a
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("relay: answers: %w", err)
	}
	return out, nil
}
