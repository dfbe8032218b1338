package approvalapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls a bot's approval API with one bearer token.
type Client struct {
	base, token string
	http        *http.Client
}

// NewClient is a client of the API at base (https://slackgate.example.com)
// presenting token; timeout bounds each call, long polls included.
func NewClient(base, token string, timeout time.Duration) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: timeout}}
}

// StatusError is an answer other than a success: its status and body.
type StatusError struct {
	Method, Path string
	Code         int
	Body         Error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("approval api %s %s: %d %s: %s", e.Method, e.Path, e.Code, http.StatusText(e.Code), e.Body.Error)
}

// maxAnswer caps what is read of an answer.
const maxAnswer = 4 << 20

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("approval api %s %s: %w", method, path, err)
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
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		e := &StatusError{Method: method, Path: path, Code: resp.StatusCode}
		if json.Unmarshal(raw, &e.Body) != nil || e.Body.Error == "" {
			e.Body.Error = cmp.Or(string(bytes.TrimSpace(raw)), "no reason given")
		}
		return e
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("approval api %s %s: answer is not JSON: %w", method, path, err)
	}
	return nil
}

// Create puts a request on a card.
func (c *Client) Create(ctx context.Context, r NewRequest) (RequestStatus, error) {
	var st RequestStatus
	err := c.do(ctx, http.MethodPost, "/v1/requests", r, &st)
	return st, err
}

// Get returns a request's state, waiting up to wait (at most MaxWait) for
// its decision.
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (RequestStatus, error) {
	var st RequestStatus
	err := c.do(ctx, http.MethodGet, "/v1/requests/"+url.PathEscape(id)+"?wait="+wait.String(), nil, &st)
	return st, err
}

// Await long-polls, poll at a time, until the request is decided (its
// decision) or ctx ends (nil and no error: the wait is over, which is
// the caller's to judge).
func (c *Client) Await(ctx context.Context, id string, poll time.Duration) (*Decision, error) {
	for {
		wait := poll
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		// At least a second: a shorter poll would only spin; ctx still
		// cuts it at the deadline.
		st, err := c.Get(ctx, id, max(wait.Round(time.Second), time.Second))
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err != nil:
			return nil, err
		case st.Decision != nil:
			return st.Decision, nil
		}
	}
}

// Withdraw takes a request's card down, saying why.
func (c *Client) Withdraw(ctx context.Context, id string, w Withdrawal) (RequestStatus, error) {
	var st RequestStatus
	err := c.do(ctx, http.MethodDelete, "/v1/requests/"+url.PathEscape(id)+w.Query(), nil, &st)
	return st, err
}

// ReportToolRan reports a tool that ran.
func (c *Client) ReportToolRan(ctx context.Context, r ToolRan) error {
	var out Recorded
	return c.do(ctx, http.MethodPost, "/v1/tool-results", r, &out)
}
