package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// The client of the bot's approval API that `slackgate hook` and `slackgate
// mcp` share: both create a request, long-poll its decision and withdraw
// the card when nobody decided.

// apiDecision is the approval API's decision (bot/api.go's apiDecision).
type apiDecision struct {
	Outcome      string            `json:"outcome"`
	UpdatedInput json.RawMessage   `json:"updated_input"`
	Permissions  []json.RawMessage `json:"updated_permissions"`
	Message      string            `json:"message"`
	Interrupt    bool              `json:"interrupt"`
	By           string            `json:"by"`
	ByName       string            `json:"by_name"`
}

type apiStatus struct {
	ID       string       `json:"id"`
	Status   string       `json:"status"`
	Decision *apiDecision `json:"decision"`
}

// apiRequest is one prompt to put on a card.
type apiRequest struct {
	ToolName    string
	Input       json.RawMessage
	ToolUseID   string
	Suggestions []json.RawMessage
	// SessionID, Cwd: the Claude session the prompt comes from; its
	// requests share one thread.
	SessionID, Cwd string
	// Terminal: a terminal is there to answer too (the hook), so a
	// withdrawn card says why (answered there, or nobody answered here).
	Terminal bool
}

func newAPIClient(cfg HookConfig) apiClient {
	return apiClient{base: strings.TrimRight(cfg.URL, "/"), token: cfg.Token, http: &http.Client{Timeout: hookPoll + 15*time.Second}}
}

// ask puts req on a card and waits up to cfg.Wait for its decision. A nil
// decision means nobody decided (the wait ran out, ctx ended, or the API
// failed: then with the error); the card is withdrawn.
func (c apiClient) ask(ctx context.Context, cfg HookConfig, req apiRequest) (*apiDecision, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Wait)
	defer cancel()
	id, err := c.create(ctx, req, cfg)
	if err != nil {
		return nil, err
	}
	d, err := c.await(ctx, id)
	if d == nil {
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer wcancel()
		if derr := c.withdraw(wctx, id, withdrawReason(req, cfg, parent, ctx, err)); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return d, err
}

// withdrawReason is the DELETE's query, saying why nobody's decision came:
// for the hook (a terminal is there to answer), Claude Code stopped waiting
// (it ends a hook once the person answers in the terminal), or the hook's
// own wait ran out and the terminal asks again; for the MCP prompt tool,
// nobody answered and Claude is told no. Other ends say nothing.
func withdrawReason(req apiRequest, cfg HookConfig, parent, ctx context.Context, err error) string {
	waited := "&waited=" + url.QueryEscape(cfg.Wait.String())
	switch {
	case err != nil:
		return ""
	case req.Terminal && parent.Err() != nil:
		return "?reason=terminal"
	case parent.Err() != nil:
		return ""
	case ctx.Err() != nil && req.Terminal:
		return "?reason=timeout" + waited
	case ctx.Err() != nil:
		return "?reason=unanswered" + waited
	}
	return ""
}

// apiClient speaks to the bot's approval API.
type apiClient struct {
	base, token string
	http        *http.Client
}

func (c apiClient) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("approval api: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("approval api %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("approval api %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("approval api %s %s: answer is not JSON: %w", method, path, err)
	}
	return nil
}

func (c apiClient) create(ctx context.Context, in apiRequest, cfg HookConfig) (string, error) {
	host, _ := os.Hostname()
	body := map[string]any{
		"tool_name": in.ToolName, "input": in.Input, "tool_use_id": in.ToolUseID,
		"permission_suggestions": in.Suggestions,
		// The card outlives the wait a little: the hook withdraws it first.
		"timeout": (cfg.Wait + hookTimeoutMargin).String(),
		"session": map[string]string{"id": in.SessionID, "host": host, "cwd": in.Cwd, "name": cfg.User},
	}
	var st apiStatus
	if err := c.do(ctx, http.MethodPost, "/v1/requests", body, &st); err != nil {
		return "", err
	}
	return st.ID, nil
}

// await long-polls until the request is decided (its decision) or ctx
// ends (nil and ctx's error).
func (c apiClient) await(ctx context.Context, id string) (*apiDecision, error) {
	for {
		wait := hookPoll
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		var st apiStatus
		// At least a second: a shorter poll would only spin; ctx still
		// cuts it at the deadline.
		poll := max(wait.Round(time.Second), time.Second)
		err := c.do(ctx, http.MethodGet, "/v1/requests/"+id+"?wait="+poll.String(), nil, &st)
		switch {
		case ctx.Err() != nil:
			return nil, nil // the wait is over: pass through, no error to report
		case err != nil:
			return nil, err
		case st.Decision != nil:
			return st.Decision, nil
		}
	}
}

func (c apiClient) withdraw(ctx context.Context, id, query string) error {
	var st apiStatus
	return c.do(ctx, http.MethodDelete, "/v1/requests/"+url.PathEscape(id)+query, nil, &st)
}
