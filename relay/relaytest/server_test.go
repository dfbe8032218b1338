package relaytest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// post sends a Messages API body to the fake and returns the response.
func post(t *testing.T, srv *relaytest.Server, path string, body any) *http.Response {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// mainBody is a streaming request that offers a tool, as the CLI's agent
// loop sends it.
func mainBody(stream bool, messages ...any) map[string]any {
	if len(messages) == 0 {
		messages = []any{map[string]any{"role": "user", "content": "hello"}}
	}
	return map[string]any{
		"model": "claude-test-model", "max_tokens": 1000, "stream": stream,
		"system":   []any{map[string]any{"type": "text", "text": "You are Claude Code."}},
		"tools":    []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}},
		"messages": messages,
	}
}

// sideBody is a request without tools, like the CLI's own side calls.
func sideBody() map[string]any {
	return map[string]any{"model": "claude-test-model", "max_tokens": 64, "stream": false,
		"messages": []any{map[string]any{"role": "user", "content": "classify this"}}}
}

type sseEvent struct {
	Name string
	Data map[string]any
}

// readSSE parses a whole event stream.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var events []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("data line is not JSON: %v: %s", err, line)
			}
			events = append(events, sseEvent{Name: name, Data: data})
		case line == "":
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// streamedBlock is a content block rebuilt from its events.
type streamedBlock struct {
	Type, ID, Name, Text, JSON string
	Deltas                     int
}

// assemble checks the event grammar of a Messages API stream and rebuilds
// its content blocks and stop reason, the way a client does.
func assemble(t *testing.T, events []sseEvent) ([]streamedBlock, string, string) {
	t.Helper()
	if len(events) < 3 || events[0].Name != "message_start" || events[len(events)-1].Name != "message_stop" ||
		events[len(events)-2].Name != "message_delta" {
		t.Fatalf("stream must open with message_start and close with message_delta, message_stop: %v", names(events))
	}
	model, _ := events[0].Data["message"].(map[string]any)["model"].(string)
	var blocks []streamedBlock
	open := -1
	for _, ev := range events {
		if ev.Data["type"] != ev.Name {
			t.Fatalf("event %s carries data type %v", ev.Name, ev.Data["type"])
		}
		switch ev.Name {
		case "content_block_start":
			if open != -1 {
				t.Fatalf("block %d started while block %d is open", len(blocks), open)
			}
			if idx := int(ev.Data["index"].(float64)); idx != len(blocks) {
				t.Fatalf("content_block_start index %d, want %d", idx, len(blocks))
			}
			cb := ev.Data["content_block"].(map[string]any)
			b := streamedBlock{Type: cb["type"].(string)}
			if b.Type == "tool_use" {
				b.ID, b.Name = cb["id"].(string), cb["name"].(string)
			}
			blocks = append(blocks, b)
			open = len(blocks) - 1
		case "content_block_delta":
			if idx := int(ev.Data["index"].(float64)); idx != open {
				t.Fatalf("delta for block %d while block %d is open", idx, open)
			}
			d := ev.Data["delta"].(map[string]any)
			b := &blocks[open]
			b.Deltas++
			switch d["type"] {
			case "text_delta":
				b.Text += d["text"].(string)
			case "input_json_delta":
				b.JSON += d["partial_json"].(string)
			default:
				t.Fatalf("unknown delta %v", d)
			}
		case "content_block_stop":
			if idx := int(ev.Data["index"].(float64)); idx != open {
				t.Fatalf("stop for block %d while block %d is open", idx, open)
			}
			open = -1
		}
	}
	if open != -1 {
		t.Fatalf("block %d never stopped", open)
	}
	delta := events[len(events)-2].Data
	stop := delta["delta"].(map[string]any)["stop_reason"].(string)
	if _, ok := delta["usage"].(map[string]any)["output_tokens"]; !ok {
		t.Fatalf("message_delta lacks usage.output_tokens: %v", delta)
	}
	return blocks, stop, model
}

func names(events []sseEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Name)
	}
	return out
}

func TestStreamedRepliesFollowTheMessagesAPIGrammar(t *testing.T) {
	long := strings.Repeat("héllo wörld ✓ ", 20) // multi-byte runes across delta boundaries
	tests := []struct {
		name     string
		step     relaytest.Step
		want     []streamedBlock
		wantStop string
	}{
		{
			name:     "text ends the turn",
			step:     relaytest.Text("done"),
			want:     []streamedBlock{{Type: "text", Text: "done"}},
			wantStop: "end_turn",
		},
		{
			name:     "long text arrives in several deltas and keeps every rune",
			step:     relaytest.Text(long),
			want:     []streamedBlock{{Type: "text", Text: long}},
			wantStop: "end_turn",
		},
		{
			name: "tool use streams its input as JSON and stops for the tool",
			step: relaytest.ToolUse("toolu_1", "Bash", map[string]any{"command": "touch x", "description": "make x"}),
			want: []streamedBlock{{Type: "tool_use", ID: "toolu_1", Name: "Bash",
				JSON: `{"command":"touch x","description":"make x"}`}},
			wantStop: "tool_use",
		},
		{
			name: "several blocks in one reply keep their order",
			step: relaytest.Reply{
				relaytest.TextBlock("two things"),
				relaytest.ToolUseBlock("toolu_a", "Read", map[string]any{"file_path": "/a"}),
				relaytest.ToolUseBlock("toolu_b", "Read", nil),
			},
			want: []streamedBlock{
				{Type: "text", Text: "two things"},
				{Type: "tool_use", ID: "toolu_a", Name: "Read", JSON: `{"file_path":"/a"}`},
				{Type: "tool_use", ID: "toolu_b", Name: "Read", JSON: `{}`},
			},
			wantStop: "tool_use",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := relaytest.NewServer(t, tt.step)
			resp := post(t, srv, "/v1/messages", mainBody(true))
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			events := readSSE(t, resp.Body)
			blocks, stop, model := assemble(t, events)
			if model != "claude-test-model" {
				t.Errorf("model = %q, want the one requested", model)
			}
			if stop != tt.wantStop {
				t.Errorf("stop_reason = %q, want %q", stop, tt.wantStop)
			}
			if len(blocks) != len(tt.want) {
				t.Fatalf("blocks = %+v, want %+v", blocks, tt.want)
			}
			for i, b := range blocks {
				w := tt.want[i]
				if b.Type != w.Type || b.ID != w.ID || b.Name != w.Name || b.Text != w.Text || b.JSON != w.JSON {
					t.Errorf("block %d = %+v, want %+v", i, b, w)
				}
			}
			for _, ev := range events {
				if d, ok := ev.Data["delta"].(map[string]any); ok && d["type"] == "text_delta" && !utf8.ValidString(d["text"].(string)) {
					t.Errorf("a text delta splits a rune: %q", d["text"])
				}
			}
			if len(tt.want) == 1 && tt.want[0].Text == long && blocks[0].Deltas < 2 {
				t.Errorf("long text came in %d delta, want several", blocks[0].Deltas)
			}
		})
	}
}

func TestNonStreamingCallGetsAMessageObject(t *testing.T) {
	srv := relaytest.NewServer(t, relaytest.ToolUse("toolu_1", "Bash", map[string]any{"command": "ls"}))
	resp := post(t, srv, "/v1/messages", mainBody(false))
	var msg struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct {
			Type, ID, Name string
			Input          map[string]any
		}
		Usage map[string]int
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.Model != "claude-test-model" || msg.StopReason != "tool_use" {
		t.Fatalf("message = %+v", msg)
	}
	if len(msg.Content) != 1 || msg.Content[0].ID != "toolu_1" || msg.Content[0].Input["command"] != "ls" {
		t.Fatalf("content = %+v", msg.Content)
	}
	if _, ok := msg.Usage["output_tokens"]; !ok {
		t.Fatalf("usage = %v", msg.Usage)
	}
}

// replyText is the text of a non-streaming answer.
func replyText(t *testing.T, resp *http.Response) string {
	t.Helper()
	var msg struct {
		Content []struct{ Text string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range msg.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "")
}

func TestScriptIsConsumedOnlyByMainCalls(t *testing.T) {
	srv := relaytest.NewServer(t, relaytest.Text("first"), relaytest.Text("second"))
	steps := []struct {
		body any
		want string
	}{
		{sideBody(), relaytest.Exhausted},
		{mainBody(false), "first"},
		{sideBody(), relaytest.Exhausted},
		{mainBody(false), "second"},
		{mainBody(false), relaytest.Exhausted},
		{mainBody(false), relaytest.Exhausted},
	}
	for i, s := range steps {
		if got := replyText(t, post(t, srv, "/v1/messages", s.body)); got != s.want {
			t.Fatalf("call %d answered %q, want %q", i, got, s.want)
		}
	}
	if got := srv.StepsUsed(); got != 2 {
		t.Errorf("StepsUsed = %d, want 2", got)
	}
	if got := len(srv.Requests()); got != 4 {
		t.Errorf("main requests = %d, want 4", got)
	}
	if got := len(srv.SideRequests()); got != 2 {
		t.Errorf("side requests = %d, want 2", got)
	}
}

func TestFuncStepSeesTheRequestItAnswers(t *testing.T) {
	srv := relaytest.NewServer(t, relaytest.Func(func(req relaytest.Request) relaytest.Reply {
		return relaytest.Text("you said " + req.LastUserText())
	}))
	got := replyText(t, post(t, srv, "/v1/messages", mainBody(false,
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\ncontext\n</system-reminder>"},
			map[string]any{"type": "text", "text": "make it so"},
		}})))
	if got != "you said make it so" {
		t.Fatalf("reply = %q", got)
	}
}

func TestAPIErrorStepAnswersWithTheAPIsErrorBody(t *testing.T) {
	srv := relaytest.NewServer(t, relaytest.APIError(http.StatusBadRequest, "invalid_request_error", "prompt is too long"))
	resp := post(t, srv, "/v1/messages", mainBody(true))
	var body struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || body.Type != "error" || body.Error.Type != "invalid_request_error" ||
		body.Error.Message != "prompt is too long" {
		t.Fatalf("status %d body %+v", resp.StatusCode, body)
	}
}

// toolResultTurn is the conversation after the model called toolu_1.
func toolResultTurn(content any, isError bool) []any {
	return []any{
		map[string]any{"role": "user", "content": "do it"},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "ls"}}}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": content, "is_error": isError}}},
	}
}

func TestToolResultsAreFlattenedToText(t *testing.T) {
	tests := []struct {
		name    string
		content any
		isError bool
		want    string
	}{
		{"string content", "User said no", true, "User said no"},
		{"text blocks joined by newlines", []any{
			map[string]any{"type": "text", "text": "line one"},
			map[string]any{"type": "image", "source": map[string]any{}},
			map[string]any{"type": "text", "text": "line two"},
		}, false, "line one\nline two"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := relaytest.NewServer(t)
			post(t, srv, "/v1/messages", mainBody(false, toolResultTurn(tt.content, tt.isError)...))
			tr, ok := srv.ToolResult("toolu_1")
			if !ok {
				t.Fatal("tool result not found")
			}
			if tr.Content != tt.want || tr.IsError != tt.isError || tr.ToolUseID != "toolu_1" {
				t.Fatalf("tool result = %+v, want content %q is_error %t", tr, tt.want, tt.isError)
			}
			if _, ok := srv.ToolResult("toolu_other"); ok {
				t.Fatal("found a result for a tool use that never happened")
			}
		})
	}
}

func TestWaitToolResultBlocksUntilTheResultArrives(t *testing.T) {
	srv := relaytest.NewServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	type got struct {
		tr  relaytest.ToolResult
		err error
	}
	done := make(chan got, 1)
	go func() {
		tr, err := srv.WaitToolResult(ctx, "toolu_1")
		done <- got{tr, err}
	}()
	// A request without the result must not release the waiter.
	post(t, srv, "/v1/messages", mainBody(false))
	if _, err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-done:
		t.Fatalf("WaitToolResult returned before the result arrived: %+v", g)
	default:
	}
	post(t, srv, "/v1/messages", mainBody(false, toolResultTurn("ok", false)...))
	g := <-done
	if g.err != nil || g.tr.Content != "ok" {
		t.Fatalf("WaitToolResult = %+v, %v", g.tr, g.err)
	}
}

func TestWaitsReturnTheContextErrorWhenNothingArrives(t *testing.T) {
	srv := relaytest.NewServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := srv.WaitToolResult(ctx, "toolu_1"); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("WaitToolResult err = %v, want context canceled", err)
	}
	if _, err := srv.WaitRequests(ctx, 1); err == nil {
		t.Errorf("WaitRequests err = nil, want an error")
	}
	if _, err := srv.WaitCall(ctx, "main"); err == nil {
		t.Errorf("WaitCall err = nil, want an error")
	}
}

func TestOtherEndpoints(t *testing.T) {
	srv := relaytest.NewServer(t)
	t.Run("count_tokens answers a count", func(t *testing.T) {
		resp := post(t, srv, "/v1/messages/count_tokens", mainBody(false))
		var body struct {
			InputTokens int `json:"input_tokens"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || body.InputTokens <= 0 {
			t.Fatalf("status %d tokens %d", resp.StatusCode, body.InputTokens)
		}
	})
	t.Run("unknown paths are 404 and recorded", func(t *testing.T) {
		resp := post(t, srv, "/api/oauth/usage", map[string]any{})
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d, want 404", resp.StatusCode)
		}
		calls := srv.Calls()
		last := calls[len(calls)-1]
		if last.Kind != "other" || last.Path != "/api/oauth/usage" {
			t.Fatalf("last call = %+v", last)
		}
	})
	t.Run("HEAD / is a probe", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, srv.URL+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if _, err := srv.WaitCall(t.Context(), "probe"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRequestDecoding(t *testing.T) {
	srv := relaytest.NewServer(t)
	post(t, srv, "/v1/messages", map[string]any{
		"model": "m", "max_tokens": 5, "stream": true,
		"system": "plain system. You should create your plan at /home/x/.claude/plans/a-b-c.md using the Write tool.",
		"tools":  []any{map[string]any{"name": "Bash"}, map[string]any{"name": "AskUserQuestion"}},
		"messages": []any{
			map[string]any{"role": "user", "content": "first"},
			map[string]any{"role": "assistant", "content": "ok"},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": "<system-reminder>x</system-reminder>"},
				map[string]any{"type": "text", "text": "second"},
			}},
		},
	})
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d", len(reqs))
	}
	r := reqs[0]
	if r.Model != "m" || r.MaxTokens != 5 || !r.Stream || !r.HasTool("AskUserQuestion") || r.HasTool("Write") {
		t.Errorf("request = %+v", r)
	}
	if got := r.UserTexts(); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Errorf("UserTexts = %q", got)
	}
	if got := r.PlanFile(); got != "/home/x/.claude/plans/a-b-c.md" {
		t.Errorf("PlanFile = %q", got)
	}
	if len(r.Raw) == 0 || !json.Valid(r.Raw) {
		t.Errorf("Raw = %q", r.Raw)
	}
	if got := srv.LastUserText(); got != "second" {
		t.Errorf("LastUserText = %q", got)
	}
}

func TestEnvPointsTheCLIAtTheFakeOnly(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-real")
	t.Setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
	t.Setenv("CLAUDE_CONFIG_DIR", "/root/.claude")
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("HTTPS_PROXY", "http://corp-proxy:3128")
	t.Setenv("RELAYTEST_KEEP_ME", "yes")
	srv := relaytest.NewServer(t)
	env := map[string][]string{}
	for _, kv := range srv.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = append(env[k], v)
	}
	want := map[string]string{
		"ANTHROPIC_BASE_URL": srv.URL,
		"ANTHROPIC_API_KEY":  "sk-ant-test-dummy",
		"HOME":               srv.Home(),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"RELAYTEST_KEEP_ME":                        "yes",
		"NO_PROXY":                                 "127.0.0.1,localhost,::1",
	}
	for k, v := range want {
		if got := env[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want exactly [%q]", k, got, v)
		}
	}
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CLAUDECODE"} {
		if got, ok := env[k]; ok {
			t.Errorf("%s = %q leaked into the CLI's environment", k, got)
		}
	}
	if got := env["HTTPS_PROXY"]; len(got) != 1 || got[0] == "http://corp-proxy:3128" {
		t.Errorf("HTTPS_PROXY = %q, want only the fake's refusing proxy", got)
	}
	// The proxy refuses and records whatever goes through it.
	proxyURL := env["HTTPS_PROXY"][0]
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, proxyURL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "api.anthropic.com"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("proxy status %d, want 403", resp.StatusCode)
	}
	if got := srv.Outbound(); len(got) != 1 || got[0] != "api.anthropic.com" {
		t.Errorf("Outbound = %q", got)
	}
	if again := srv.Env(t); strings.Join(again, "\n") != strings.Join(srv.Env(t), "\n") {
		t.Errorf("Env is not stable across calls")
	}
}

func TestRetriesOfAFailedCallGetTheSameErrorWithoutConsumingSteps(t *testing.T) {
	srv := relaytest.NewServer(t,
		relaytest.APIError(http.StatusBadRequest, "invalid_request_error", "no"),
		relaytest.Text("after the error"))
	for i := range 3 { // the same conversation again: a retry
		if resp := post(t, srv, "/v1/messages", mainBody(false)); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("call %d status %d, want the replayed 400", i, resp.StatusCode)
		}
	}
	next := mainBody(false,
		map[string]any{"role": "user", "content": "hello"},
		map[string]any{"role": "assistant", "content": "API Error"},
		map[string]any{"role": "user", "content": "again"})
	if got := replyText(t, post(t, srv, "/v1/messages", next)); got != "after the error" {
		t.Fatalf("the next turn got %q, want the next step", got)
	}
	if got := srv.StepsUsed(); got != 2 {
		t.Fatalf("StepsUsed = %d, want 2", got)
	}
}

func TestHoldKeepsTheCallOpenUntilReleased(t *testing.T) {
	release := make(chan struct{})
	srv := relaytest.NewServer(t, relaytest.Hold(release, relaytest.Text("released")))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := make(chan string, 1)
	go func() {
		raw, err := json.Marshal(mainBody(false))
		if err != nil {
			got <- err.Error()
			return
		}
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(raw))
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		var msg struct{ Content []struct{ Text string } }
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || len(msg.Content) != 1 {
			got <- fmt.Sprint("decode: ", err)
			return
		}
		got <- msg.Content[0].Text
	}()
	if _, err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	select {
	case text := <-got:
		t.Fatalf("the held call was answered before release: %q", text)
	default:
	}
	close(release)
	if text := <-got; text != "released" {
		t.Fatalf("answer = %q, want released", text)
	}
}

// errorTB records test failures instead of failing.
type errorTB struct {
	testing.TB
	errors []string
}

func (e *errorTB) Errorf(format string, args ...any) {
	e.errors = append(e.errors, fmt.Sprintf(format, args...))
}

func TestABrokenStepFailsTheTestAndTheCall(t *testing.T) {
	tests := []struct {
		name string
		step relaytest.Step
	}{
		{"input that is not an object", relaytest.ToolUse("toolu_1", "Bash", []string{"ls"})},
		{"tool use without an id", relaytest.ToolUse("", "Bash", nil)},
		{"unknown block type", relaytest.Reply{{Type: "thinking"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &errorTB{TB: t}
			srv := relaytest.NewServer(rec, tt.step)
			resp := post(t, srv, "/v1/messages", mainBody(true))
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400", resp.StatusCode)
			}
			if len(rec.errors) != 1 {
				t.Errorf("test errors = %q, want one", rec.errors)
			}
		})
	}
}
