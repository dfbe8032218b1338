package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"time"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
)

// What `slackgate hook` and `slackgate mcp` share on top of the approval
// API's client: put a prompt on a card, wait for its decision, and
// withdraw the card, saying why, when nobody decided.

// apiRequest is one prompt to put on a card.
type apiRequest struct {
	store.ToolCall
	Suggestions []store.Suggestion
	// SessionID, Cwd: the Claude session the prompt comes from; its
	// requests share one thread.
	SessionID, Cwd string
	// Terminal: a terminal is there to answer too (the hook), so a
	// withdrawn card says why (answered there, or nobody answered here).
	Terminal bool
}

func newAPIClient(cfg HookConfig) *approvalapi.Client {
	return approvalapi.NewClient(cfg.URL, cfg.Token, hookPoll+15*time.Second)
}

// from is the session a prompt or report of Claude session id in cwd
// comes from, as this client reports it.
func from(cfg HookConfig, id, cwd string) approvalapi.Session {
	host, _ := os.Hostname()
	return approvalapi.Session{ID: id, Host: host, Cwd: cwd, Name: cfg.User}
}

// askSlack puts req on a card and waits up to cfg.Wait for its decision. A nil
// decision means nobody decided (the wait ran out, ctx ended, or the API
// failed: then with the error); the card is withdrawn.
func askSlack(ctx context.Context, c *approvalapi.Client, cfg HookConfig, req apiRequest) (*approvalapi.Decision, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Wait)
	defer cancel()
	// This process runs as the user Claude runs as, beside it: the facts
	// the team policy needs from this machine.
	home, _ := os.UserHomeDir()
	resolved := resolvePaths(req.ToolName, req.Input, req.Cwd, home)
	st, err := c.Create(ctx, approvalapi.NewRequest{
		ToolCall: req.ToolCall, Suggestions: req.Suggestions,
		// The card outlives the wait a little: the client withdraws it first.
		Timeout: (cfg.Wait + hookTimeoutMargin).String(),
		Session: from(cfg, req.SessionID, req.Cwd),
		Home:    home, Resolved: resolved,
	})
	if err != nil {
		return nil, explainAPIError(err, cfg.Token)
	}
	d, err := c.Await(ctx, st.ID, hookPoll)
	if d != nil && d.Outcome == store.OutcomeAllow && d.Facts != approvalapi.Facts(home, resolved) {
		// Someone changed the paths the policy read while the request
		// waited in the store: nothing runs on that.
		d = &approvalapi.Decision{Outcome: store.OutcomeRefused,
			Message: "slackgate refused an approval made on paths this client did not report; the tool was not run."}
	}
	asked := store.Request{ID: st.ID, Kind: store.KindOf(req.ToolName, req.Input), ToolCall: req.ToolCall, Suggestions: req.Suggestions}
	if d != nil && d.Outcome == store.OutcomeAllow && store.CheckPermissions(asked, d.Permissions) != nil {
		// A rule Claude Code did not suggest here (swapped in the store
		// before the click): it never reaches Claude Code.
		d = &approvalapi.Decision{Outcome: store.OutcomeRefused,
			Message: "slackgate refused an approval that adds a permission rule this client did not suggest; the tool was not run."}
	}
	if d == nil {
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer wcancel()
		if _, werr := c.Withdraw(wctx, st.ID, withdrawal(req, cfg, parent, ctx, err)); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return d, err
}

// withdrawal says why nobody's decision came: for the hook (a terminal is
// there to answer), Claude Code stopped waiting (it ends a hook once the
// person answers in the terminal), or the hook's own wait ran out and the
// terminal asks again; for the MCP prompt tool, nobody answered and Claude
// is told no. Other ends say nothing.
func withdrawal(req apiRequest, cfg HookConfig, parent, ctx context.Context, err error) approvalapi.Withdrawal {
	switch {
	case err != nil:
		return approvalapi.Withdrawal{}
	case req.Terminal && parent.Err() != nil:
		return approvalapi.Withdrawal{Reason: approvalapi.ReasonTerminal}
	case parent.Err() != nil:
		return approvalapi.Withdrawal{}
	case ctx.Err() != nil && req.Terminal:
		return approvalapi.Withdrawal{Reason: approvalapi.ReasonTimeout, Waited: cfg.Wait}
	case ctx.Err() != nil:
		return approvalapi.Withdrawal{Reason: approvalapi.ReasonUnanswered, Waited: cfg.Wait}
	}
	return approvalapi.Withdrawal{}
}

// permissionResult is d as the permission result Claude Code reads, built
// and checked with relay's constructors, as the worker's answers are: allow
// with the whole input (and "Always allow"'s rules), deny with a message.
// ok is false when d is nobody's answer (expired, cancelled, ended).
func permissionResult(d approvalapi.Decision) (res relay.PermissionResult, ok bool, err error) {
	switch d.Outcome {
	case store.OutcomeAllow:
		perms := make([]json.RawMessage, 0, len(d.Permissions))
		for _, p := range d.Permissions {
			b, err := json.Marshal(p)
			if err != nil {
				return res, false, fmt.Errorf("permission update: %w", err)
			}
			perms = append(perms, b)
		}
		res = relay.Allow(d.UpdatedInput, perms...)
	case store.OutcomeDeny, store.OutcomeRefused:
		res = relay.Deny(cmp.Or(d.Message, "Denied in Slack by "+cmp.Or(d.ByName, d.By, "a person")+"."), d.Interrupt)
	default:
		return res, false, nil
	}
	if err := res.Validate(); err != nil {
		return res, false, fmt.Errorf("the approval API's %s decision: %w", d.Outcome, err)
	}
	return res, true, nil
}

// checkAPIURL refuses an approval API address the token would reach in
// clear over a network: https://, or http:// to this machine only.
func checkAPIURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %w", err)
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("http:// to %s would send the token across the network in clear: use https:// (http:// is for this machine only: localhost, 127.0.0.1, ::1)", u.Hostname())
	}
	return errors.New("want https://host[:port] (or http://localhost:port on this machine), the bot's HTTP_ADDR")
}

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiEntry is what a whole API_TOKENS entry (name:channel:token) starts
// with, pasted where only its token belongs.
var apiEntry = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}:[CGUW][A-Z0-9]{2,}:.`)

// explainAPIError adds to a 401 what to do about the token.
func explainAPIError(err error, token string) error {
	var se *approvalapi.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized {
		return err
	}
	if apiEntry.MatchString(token) {
		return fmt.Errorf("%w: the token file holds a whole API_TOKENS entry (name:channel:token); keep only the token, what follows the second colon", err)
	}
	return fmt.Errorf("%w: the bot knows no such token; the token file must hold the token of one of its API_TOKENS entries (what follows name:channel:)", err)
}
