package relaytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Server is a scripted fake of the Anthropic Messages API. Each main
// /v1/messages call (one that offers tools) consumes the next Step; side
// calls the CLI makes on its own get a short text without consuming one.
// When the script is exhausted every main call gets the text Exhausted.
//
// A second listener acts as the HTTP(S) proxy in Env: it refuses every
// request and records the host, so a test can prove the CLI stayed offline
// (Outbound).
type Server struct {
	// URL is the base URL to give the CLI as ANTHROPIC_BASE_URL.
	URL string

	tb    testing.TB
	ctx   context.Context // cancelled when the server closes, to end held calls
	stop  context.CancelFunc
	srv   *httptest.Server
	proxy *httptest.Server
	home  string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever something is recorded
	steps    []Step
	next     int       // index of the next step
	requests []Request // main calls, in arrival order
	side     []Request // side calls
	calls    []Call    // every HTTP call, in arrival order
	outbound []string  // hosts the proxy refused
	closed   bool
	seq      int

	// failed is the error the last main call got, kept so the CLI's
	// immediate retry of the same conversation gets it again (2.1.330
	// retries a 400 once) instead of consuming the next step.
	failed         *answer
	failedMessages int
}

// Call is one HTTP request the fake received, for diagnostics and timing.
type Call struct {
	At     time.Time
	Method string
	Path   string
	Kind   string // "main", "side", "count_tokens", "probe" (HEAD /) or "other"
}

// Exhausted is the text the fake answers once the script has no step left,
// and to every side call.
const Exhausted = "end"

// NewServer starts a fake Messages API answering main calls with steps in
// order. It is closed when the test ends (after cleanups registered later,
// such as a CLI process's, have run).
func NewServer(tb testing.TB, steps ...Step) *Server {
	tb.Helper()
	s := &Server{tb: tb, steps: steps, changed: make(chan struct{}), home: tb.TempDir()}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.proxy = httptest.NewServer(http.HandlerFunc(s.serveProxy))
	s.URL = s.srv.URL
	tb.Cleanup(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stop()
		s.srv.Close()
		s.proxy.Close()
	})
	return s
}

// Home is the HOME directory Env gives every CLI started against this
// server: sessions (for --resume), plan files and settings live under
// Home()/.claude.
func (s *Server) Home() string { return s.home }

// Requests returns the main /v1/messages calls received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SideRequests returns the /v1/messages calls recognised as the CLI's own
// side calls (no tools offered: the auto-mode classifier, titles, ...).
func (s *Server) SideRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.side...)
}

// Calls returns every HTTP call received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Outbound lists the hosts a process using Env tried to reach through the
// proxy, i.e. anything but this fake. The proxy refused them all.
func (s *Server) Outbound() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.outbound...)
}

// StepsUsed is how many script steps main calls have consumed.
func (s *Server) StepsUsed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// ToolResult finds the result of a tool use in the main requests so far.
func (s *Server) ToolResult(toolUseID string) (ToolResult, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.toolResultLocked(toolUseID)
}

func (s *Server) toolResultLocked(toolUseID string) (ToolResult, bool) {
	for i := len(s.requests) - 1; i >= 0; i-- {
		if tr, ok := s.requests[i].ToolResult(toolUseID); ok {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// LastUserText is the last text a person typed, as the latest main request
// shows it ("" before the first one).
func (s *Server) LastUserText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return ""
	}
	return s.requests[len(s.requests)-1].LastUserText()
}

// WaitToolResult blocks until a main request carries the result of
// toolUseID, or ctx ends.
func (s *Server) WaitToolResult(ctx context.Context, toolUseID string) (ToolResult, error) {
	var tr ToolResult
	err := s.wait(ctx, func() bool {
		var ok bool
		tr, ok = s.toolResultLocked(toolUseID)
		return ok
	})
	if err != nil {
		return ToolResult{}, fmt.Errorf("relaytest: wait for the result of %s: %w", toolUseID, err)
	}
	return tr, nil
}

// WaitRequests blocks until at least n main requests arrived and returns
// them all, or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	var out []Request
	err := s.wait(ctx, func() bool {
		if len(s.requests) < n {
			return false
		}
		out = append([]Request(nil), s.requests...)
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("relaytest: wait for %d main requests (have %d): %w", n, len(s.Requests()), err)
	}
	return out, nil
}

// WaitCall blocks until a call of the given kind (see Call.Kind) arrived
// and returns the first one, or ctx ends.
func (s *Server) WaitCall(ctx context.Context, kind string) (Call, error) {
	var c Call
	err := s.wait(ctx, func() bool {
		for _, call := range s.calls {
			if call.Kind == kind {
				c = call
				return true
			}
		}
		return false
	})
	if err != nil {
		return Call{}, fmt.Errorf("relaytest: wait for a %s call: %w", kind, err)
	}
	return c, nil
}

// wait evaluates done under the lock each time something is recorded until
// it reports true or ctx ends.
func (s *Server) wait(ctx context.Context, done func() bool) error {
	for {
		s.mu.Lock()
		ok := done()
		changed := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// recordLocked appends a call and wakes the waiters; s.mu must be held.
func (s *Server) recordLocked(method, path, kind string) {
	s.calls = append(s.calls, Call{At: time.Now(), Method: method, Path: path, Kind: kind})
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) record(method, path, kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recordLocked(method, path, kind)
}

// logf logs through the test while it runs; a handler still running after
// the test ended must not call tb.Logf (it panics).
func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.tb.Logf("relaytest: "+format, args...)
	}
}

// errorf fails the test while it runs.
func (s *Server) errorf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.tb.Errorf("relaytest: "+format, args...)
	}
}

func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.outbound = append(s.outbound, r.Host)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	s.logf("refused outbound %s %s", r.Method, r.Host)
	http.Error(w, "relaytest: tests run offline", http.StatusForbidden)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && path == "/v1/messages":
		s.serveMessages(w, r, body)
	case r.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		s.record(r.Method, path, "count_tokens")
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 1 + len(body)/4})
	case (r.Method == http.MethodHead || r.Method == http.MethodGet) && path == "/":
		// 2.1.197 warms its connection with HEAD / at startup.
		s.record(r.Method, path, "probe")
		w.WriteHeader(http.StatusOK)
	default:
		s.record(r.Method, path, "other")
		s.logf("unhandled %s %s %.200s", r.Method, r.URL, body)
		writeJSON(w, http.StatusNotFound, apiError("not_found_error", "relaytest: no such endpoint "+path))
	}
}

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request, body []byte) {
	req, err := decodeRequest(body)
	if err != nil {
		s.record(r.Method, r.URL.Path, "other")
		s.logf("%v", err)
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", err.Error()))
		return
	}
	main := isMain(req)
	kind := "side"
	var step Step
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("msg_relaytest_%03d", s.seq)
	if main {
		kind = "main"
		s.requests = append(s.requests, req)
		switch {
		case s.failed != nil && len(req.Messages) == s.failedMessages:
			step = *s.failed
		case s.next < len(s.steps):
			step = s.steps[s.next]
			s.next++
		}
		s.failed = nil
	} else {
		s.side = append(s.side, req)
	}
	s.recordLocked(r.Method, r.URL.Path, kind)
	s.mu.Unlock()
	s.logf("%s %s: model=%s stream=%t max_tokens=%d tools=%d messages=%d last user text %.80q",
		id, kind, req.Model, req.Stream, req.MaxTokens, len(req.Tools), len(req.Messages), req.LastUserText())

	ans := answer{reply: Text(Exhausted)}
	if step != nil {
		ctx, cancel := context.WithCancel(r.Context())
		stop := context.AfterFunc(s.ctx, cancel)
		ans = step.answer(ctx, req)
		stop()
		cancel()
	}
	if main && ans.status != 0 {
		s.mu.Lock()
		s.failed, s.failedMessages = &ans, len(req.Messages)
		s.mu.Unlock()
	}
	if ans.status != 0 {
		writeJSON(w, ans.status, apiError(ans.errType, ans.errMsg))
		return
	}
	if err := ans.reply.validate(); err != nil {
		// A broken script is the test's bug: fail it, and fail the call
		// with a status the CLI does not retry slowly.
		s.errorf("step for %s: %v", id, err)
		writeJSON(w, http.StatusBadRequest, apiError("invalid_request_error", err.Error()))
		return
	}
	model := req.Model
	if model == "" {
		model = DefaultModel
	}
	w.Header().Set("request-id", "req_"+id)
	if req.Stream {
		if err := writeStream(w, id, model, ans.reply); err != nil {
			s.logf("stream %s: %v", id, err)
		}
		return
	}
	msg, err := message(id, model, ans.reply)
	if err != nil {
		s.logf("reply %s: %v", id, err)
		writeJSON(w, http.StatusInternalServerError, apiError("api_error", err.Error()))
		return
	}
	writeJSON(w, http.StatusOK, msg)
}

// DefaultModel is the model name answered when a request names none;
// otherwise the fake answers with the model the CLI asked for.
const DefaultModel = "claude-sonnet-4-5"

// isMain tells the conversation's own calls from the CLI's side calls:
// only the agent loop (the session, or a subagent it started) offers tools.
func isMain(req Request) bool {
	return len(req.Tools) > 0
}

func apiError(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func usage(in, out int) map[string]any {
	return map[string]any{
		"input_tokens": in, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
}

// message is the non-streaming response body.
func message(id, model string, reply Reply) (map[string]any, error) {
	content := make([]any, 0, len(reply))
	for _, b := range reply {
		switch b.Type {
		case "tool_use":
			input, err := b.inputJSON()
			if err != nil {
				return nil, err
			}
			content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input})
		default:
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": reply.StopReason(), "stop_sequence": nil,
		"usage": usage(10, 5),
	}, nil
}

// deltaSize is the most bytes of text or JSON one delta event carries, so
// the CLI's accumulation of partial deltas is exercised as with the real
// API.
const deltaSize = 48

// writeStream answers with server-sent events in the order the real API
// uses: message_start, ping, per block content_block_start, deltas,
// content_block_stop, then message_delta with the stop reason and usage,
// and message_stop.
func writeStream(w http.ResponseWriter, id, model string, reply Reply) error {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data map[string]any) error {
		data["type"] = name
		raw, err := json.Marshal(data)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, raw); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	if err := event("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(10, 1),
	}}); err != nil {
		return err
	}
	if err := event("ping", map[string]any{}); err != nil {
		return err
	}
	for i, b := range reply {
		var start map[string]any
		var deltaType, field, payload string
		switch b.Type {
		case "tool_use":
			input, err := b.inputJSON()
			if err != nil {
				return err
			}
			start = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
			deltaType, field, payload = "input_json_delta", "partial_json", string(input)
		default:
			start = map[string]any{"type": "text", "text": ""}
			deltaType, field, payload = "text_delta", "text", b.Text
		}
		if err := event("content_block_start", map[string]any{"index": i, "content_block": start}); err != nil {
			return err
		}
		for _, chunk := range chunks(payload, deltaSize) {
			delta := map[string]any{"type": deltaType, field: chunk}
			if err := event("content_block_delta", map[string]any{"index": i, "delta": delta}); err != nil {
				return err
			}
		}
		if err := event("content_block_stop", map[string]any{"index": i}); err != nil {
			return err
		}
	}
	if err := event("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": reply.StopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5},
	}); err != nil {
		return err
	}
	return event("message_stop", map[string]any{})
}

// chunks splits s into pieces of at most n bytes without splitting a rune;
// "" is one empty piece (the API still sends one delta).
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // a rune longer than n: take it whole
			_, cut = utf8.DecodeRuneInString(s)
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// Env is the environment for a CLI talking to this server: the current
// environment without ANTHROPIC_*, CLAUDE* and proxy variables, plus
//
//	HOME=Home()                                   (the same for every process of this server, so --resume works)
//	ANTHROPIC_BASE_URL=<URL>  ANTHROPIC_API_KEY=sk-ant-test-dummy
//	CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1    (no telemetry, error reporting, update or quota traffic)
//	DISABLE_AUTOUPDATER=1
//	HTTPS_PROXY/HTTP_PROXY=<refusing proxy>  NO_PROXY=127.0.0.1,localhost,::1
//
// The proxy records and refuses whatever else the CLI (or a tool it runs)
// tries to reach: see Outbound. tb is used for the test's helper marking
// only.
func (s *Server) Env(tb testing.TB) []string {
	tb.Helper()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		upper := strings.ToUpper(name)
		switch {
		case strings.HasPrefix(name, "ANTHROPIC_"), strings.HasPrefix(name, "CLAUDE"), name == "HOME",
			upper == "HTTP_PROXY", upper == "HTTPS_PROXY", upper == "NO_PROXY", upper == "ALL_PROXY":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+s.home,
		"ANTHROPIC_BASE_URL="+s.URL,
		"ANTHROPIC_API_KEY=sk-ant-test-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"HTTPS_PROXY="+s.proxy.URL, "https_proxy="+s.proxy.URL,
		"HTTP_PROXY="+s.proxy.URL, "http_proxy="+s.proxy.URL,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
	)
}
