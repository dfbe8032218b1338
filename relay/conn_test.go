package relay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// guard bounds every wait in these tests; nothing here sleeps.
const guard = 10 * time.Second

// fakeCLI is an in-process stand-in for claude: the test writes its stdout
// lines and reads what the host wrote to its stdin, over io.Pipe.
type fakeCLI struct {
	tb     *testing.T
	conn   *Conn
	out    *io.PipeWriter
	in     *io.PipeWriter
	stdin  chan map[string]any
	runErr chan error
	wg     sync.WaitGroup
	once   sync.Once
}

func newFakeCLI(t *testing.T, h ConnHandlers) *fakeCLI {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	f := &fakeCLI{tb: t, out: outW, in: inW, stdin: make(chan map[string]any, 1000), runErr: make(chan error, 1)}
	f.conn = NewConn(outR, inW, h, zerolog.Nop())
	f.wg.Add(2)
	go func() {
		defer f.wg.Done()
		defer close(f.stdin)
		br := bufio.NewReader(inR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var v map[string]any
				if jerr := json.Unmarshal(line, &v); jerr != nil {
					// The real CLI exits on an invalid line: so does the test.
					t.Errorf("host wrote invalid JSON %q: %v", line, jerr)
				}
				f.stdin <- v
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer f.wg.Done()
		f.runErr <- f.conn.Run(context.Background())
	}()
	t.Cleanup(f.close)
	return f
}

// emit writes one stdout line (blocks until the Conn has read it).
func (f *fakeCLI) emit(line string) {
	f.tb.Helper()
	if _, err := io.WriteString(f.out, line+"\n"); err != nil {
		f.tb.Fatalf("emit: %v", err)
	}
}

// next returns the next line the host wrote.
func (f *fakeCLI) next() map[string]any {
	f.tb.Helper()
	select {
	case v, ok := <-f.stdin:
		if !ok {
			f.tb.Fatal("stdin closed, no line")
		}
		return v
	case <-time.After(guard):
		f.tb.Fatal("timed out waiting for the host to write")
	}
	return nil
}

// endOutput closes stdout (the process exited) and waits for Run.
func (f *fakeCLI) endOutput() error {
	f.tb.Helper()
	f.out.Close()
	select {
	case err := <-f.runErr:
		f.runErr <- err
		return err
	case <-time.After(guard):
		f.tb.Fatal("Run did not return after EOF")
	}
	return nil
}

// rest closes everything and returns the lines the host wrote that were
// not read yet.
func (f *fakeCLI) rest() []map[string]any {
	f.tb.Helper()
	f.close()
	var out []map[string]any
	for v := range f.stdin {
		out = append(out, v)
	}
	return out
}

func (f *fakeCLI) close() {
	f.once.Do(func() {
		f.out.Close()
		<-f.runErr
		f.in.Close()
		f.wg.Wait()
	})
}

func canUseTool(id, tool, input string) string {
	return fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":%q,"display_name":%q,"input":%s,"tool_use_id":"toolu_%s"}}`, id, tool, tool, input, id)
}

// response digs the inner fields out of a control_response the host wrote.
func response(t *testing.T, v map[string]any) (id, subtype string, body map[string]any, errText string) {
	t.Helper()
	if v["type"] != "control_response" {
		t.Fatalf("not a control_response: %v", v)
	}
	r := v["response"].(map[string]any)
	body, _ = r["response"].(map[string]any)
	errText, _ = r["error"].(string)
	return r["request_id"].(string), r["subtype"].(string), body, errText
}

// arrival is one can_use_tool the handler received; the test answers it.
type arrival struct {
	id     string
	req    CanUseTool
	ctx    context.Context
	answer chan PermissionResult
}

func blockingHandler() (ConnHandlers, chan arrival) {
	arrivals := make(chan arrival, 10)
	return ConnHandlers{OnCanUseTool: func(ctx context.Context, id string, req CanUseTool) (PermissionResult, bool) {
		a := arrival{id: id, req: req, ctx: ctx, answer: make(chan PermissionResult, 1)}
		arrivals <- a
		select {
		case res := <-a.answer:
			return res, true
		case <-ctx.Done():
			// Answer anyway: the Conn must not send it.
			return Allow(req.Input), true
		}
	}}, arrivals
}

func waitArrival(t *testing.T, ch chan arrival) arrival {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(guard):
		t.Fatal("no can_use_tool reached the handler")
	}
	return arrival{}
}

func TestConnAnswersConcurrentRequestsIndependently(t *testing.T) {
	h, arrivals := blockingHandler()
	f := newFakeCLI(t, h)
	f.emit(canUseTool("r1", "Read", `{"file_path":"/a"}`))
	f.emit(canUseTool("r2", "Read", `{"file_path":"/b"}`))
	got := map[string]arrival{}
	for range 2 {
		a := waitArrival(t, arrivals)
		got[a.id] = a
	}
	// Both are pending at once; the second is answered first.
	got["r2"].answer <- Allow(got["r2"].req.Input)
	id, sub, body, _ := response(t, f.next())
	if id != "r2" || sub != "success" || body["behavior"] != "allow" || body["updatedInput"].(map[string]any)["file_path"] != "/b" {
		t.Fatalf("first answer: %s %s %v", id, sub, body)
	}
	got["r1"].answer <- Deny("no", false)
	id, _, body, _ = response(t, f.next())
	if id != "r1" || body["behavior"] != "deny" || body["message"] != "no" {
		t.Fatalf("second answer: %s %v", id, body)
	}
}

func TestConnSendsNothingForAWithdrawnRequest(t *testing.T) {
	h, arrivals := blockingHandler()
	f := newFakeCLI(t, h)
	f.emit(canUseTool("r1", "Bash", `{"command":"ls"}`))
	a := waitArrival(t, arrivals)
	f.emit(`{"type":"control_cancel_request","request_id":"r1"}`)
	select {
	case <-a.ctx.Done():
	case <-time.After(guard):
		t.Fatal("handler context not cancelled")
	}
	if cause := context.Cause(a.ctx); !errors.Is(cause, ErrWithdrawn) {
		t.Errorf("cause = %v, want ErrWithdrawn", cause)
	}
	if err := f.endOutput(); err != nil {
		t.Fatal(err)
	}
	if rest := f.rest(); len(rest) != 0 {
		t.Errorf("host wrote %v for a withdrawn request", rest)
	}
}

func TestConnEndsPendingRequestsWhenOutputCloses(t *testing.T) {
	h, arrivals := blockingHandler()
	f := newFakeCLI(t, h)
	f.emit(canUseTool("r1", "Bash", `{"command":"ls"}`))
	a := waitArrival(t, arrivals)
	if err := f.endOutput(); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(a.ctx); !errors.Is(cause, ErrStreamClosed) {
		t.Errorf("cause = %v, want ErrStreamClosed", cause)
	}
	if rest := f.rest(); len(rest) != 0 {
		t.Errorf("host wrote %v after the output closed", rest)
	}
}

func TestConnRepliesErrorToUnsupportedSubtypes(t *testing.T) {
	tests := []struct {
		name, line, id, want string
	}{
		{"unknown subtype", `{"type":"control_request","request_id":"x1","request":{"subtype":"request_user_dialog","dialog_kind":"x"}}`, "x1",
			"Unsupported control request subtype: request_user_dialog"},
		{"elicitation without a handler", `{"type":"control_request","request_id":"x4","request":{"subtype":"elicitation","message":"hi"}}`, "x4",
			"Unsupported control request subtype: elicitation"},
		{"hook callback we never registered", `{"type":"control_request","request_id":"x2","request":{"subtype":"hook_callback","callback_id":"h"}}`, "x2",
			"Unsupported control request subtype: hook_callback"},
		{"can_use_tool of the wrong shape", `{"type":"control_request","request_id":"x3","request":{"subtype":"can_use_tool","tool_name":5}}`, "x3",
			"Malformed control request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := blockingHandler()
			f := newFakeCLI(t, h)
			f.emit(tt.line)
			id, sub, _, errText := response(t, f.next())
			if id != tt.id || sub != "error" || !strings.HasPrefix(errText, tt.want) {
				t.Errorf("got %s %s %q, want error %q", id, sub, errText, tt.want)
			}
		})
	}
}

func TestConnCountsMalformedLinesAndGoesOn(t *testing.T) {
	msgs := make(chan Message, 10)
	f := newFakeCLI(t, ConnHandlers{OnMessage: func(_ context.Context, m Message) { msgs <- m }})
	f.emit(`{this is not json`)
	f.emit(`["an","array"]`)
	f.emit(``)
	f.emit(`{"type":"keep_alive"}`)
	f.emit(`{"type":"brand_new_type","x":1}`)
	f.emit(`{"type":"result","subtype":"success","is_error":false,"num_turns":1,"duration_ms":5,"session_id":"s","total_cost_usd":0.5}`)
	if err := f.endOutput(); err != nil {
		t.Fatal(err)
	}
	close(msgs)
	var got []Message
	for m := range msgs {
		got = append(got, m)
	}
	if len(got) != 2 || got[0].Type != "brand_new_type" || string(got[0].Raw) != `{"type":"brand_new_type","x":1}` ||
		got[1].Result == nil || got[1].Result.TotalCostUSD != 0.5 {
		t.Fatalf("messages: %+v", got)
	}
	if s := f.conn.Stats(); s != (Stats{Lines: 5, Malformed: 2, Unknown: 1}) {
		t.Errorf("stats = %+v", s)
	}
}

func TestConnReadsMultiMegabyteLines(t *testing.T) {
	msgs := make(chan Message, 1)
	f := newFakeCLI(t, ConnHandlers{OnMessage: func(_ context.Context, m Message) { msgs <- m }})
	big := strings.Repeat("x", 20<<20)
	f.emit(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"` + big + `"}]},"parent_tool_use_id":null,"session_id":"s"}`)
	select {
	case m := <-msgs:
		blocks, err := m.User.Message.Blocks()
		if err != nil || len(blocks) != 1 || toolResultText(blocks[0].Content) != big {
			t.Fatalf("big line not read intact (err %v)", err)
		}
	case <-time.After(4 * guard):
		// A bound, not a pace: decoding 20 MB under -race on a loaded
		// 2-core machine has taken over one guard.
		t.Fatal("big line never arrived")
	}
}

func TestConnHostRequestsWaitForTheCLIAnswer(t *testing.T) {
	tests := []struct {
		name    string
		call    func(c *Conn) error
		subtype string
		mode    string
		reply   string // %s = request_id; "" = close the output instead
		wantErr error
	}{
		{"interrupt acknowledged", func(c *Conn) error { return c.Interrupt(context.Background()) }, "interrupt", "",
			`{"type":"control_response","response":{"subtype":"success","request_id":"%s"}}`, nil},
		{"set mode acknowledged", func(c *Conn) error { return c.SetPermissionMode(context.Background(), "acceptEdits") }, "set_permission_mode", "acceptEdits",
			`{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{"mode":"acceptEdits"}}}`, nil},
		{"set mode refused by the CLI", func(c *Conn) error { return c.SetPermissionMode(context.Background(), "bypassPermissions") }, "set_permission_mode", "bypassPermissions",
			`{"type":"control_response","response":{"subtype":"error","request_id":"%s","error":"Cannot set permission mode to bypassPermissions"}}`, ErrClaudeError},
		{"process exits before answering", func(c *Conn) error { return c.Interrupt(context.Background()) }, "interrupt", "", "", ErrStreamClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCLI(t, ConnHandlers{})
			errc := make(chan error, 1)
			go func() { errc <- tt.call(f.conn) }()
			v := f.next()
			req := v["request"].(map[string]any)
			if v["type"] != "control_request" || req["subtype"] != tt.subtype || (tt.mode != "" && req["mode"] != tt.mode) {
				t.Fatalf("wrote %v", v)
			}
			if tt.reply == "" {
				f.out.Close()
			} else {
				f.emit(fmt.Sprintf(tt.reply, v["request_id"]))
			}
			select {
			case err := <-errc:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			case <-time.After(guard):
				t.Fatal("call did not return")
			}
		})
	}
}

func TestConnSetPermissionModeRejectsUnknownModesWithoutWriting(t *testing.T) {
	f := newFakeCLI(t, ConnHandlers{})
	for _, mode := range []string{"nonsense", "", "Default"} {
		if err := f.conn.SetPermissionMode(context.Background(), mode); !errors.Is(err, ErrBadMode) {
			t.Errorf("mode %q: err = %v, want ErrBadMode", mode, err)
		}
	}
	if rest := f.rest(); len(rest) != 0 {
		t.Errorf("wrote %v", rest)
	}
}

func TestConnSendWritesAUserMessage(t *testing.T) {
	f := newFakeCLI(t, ConnHandlers{})
	if err := f.conn.Send(context.Background(), "hello\nthere"); err != nil {
		t.Fatal(err)
	}
	v := f.next()
	if v["type"] != "user" || v["message"].(map[string]any)["content"] != "hello\nthere" {
		t.Errorf("wrote %v", v)
	}
}

func TestConnReportsAnInvalidAnswerAsAnErrorReply(t *testing.T) {
	f := newFakeCLI(t, ConnHandlers{OnCanUseTool: func(context.Context, string, CanUseTool) (PermissionResult, bool) {
		return PermissionResult{Behavior: "allow"}, true // no updatedInput: the CLI would take it as a ZodError deny
	}})
	f.emit(canUseTool("r1", "Bash", `{"command":"ls"}`))
	id, sub, _, errText := response(t, f.next())
	if id != "r1" || sub != "error" || !strings.Contains(errText, "updatedInput") {
		t.Errorf("got %s %s %q", id, sub, errText)
	}
}

// TestConnWritesDecisionsAsTheCLIRequires runs store decisions through the
// whole host path (can_use_tool line → NewRequest → ResultFor → Conn) and
// checks the control_response line the fake CLI receives.
func TestConnWritesDecisionsAsTheCLIRequires(t *testing.T) {
	const askInput = `{"questions":[{"question":"Which DB?","header":"DB","options":[{"label":"A"},{"label":"B"}],"multiSelect":true}]}`
	tests := []struct {
		name     string
		tool     string
		input    string
		decision store.Decision
		check    func(t *testing.T, body map[string]any)
	}{
		{"allow without updated input echoes the original input", "Bash", `{"command":"ls -la","description":"list"}`,
			store.Decision{Outcome: store.OutcomeAllow},
			func(t *testing.T, body map[string]any) {
				in := body["updatedInput"].(map[string]any)
				if body["behavior"] != "allow" || in["command"] != "ls -la" || in["description"] != "list" {
					t.Errorf("got %v", body)
				}
			}},
		{"deny without message gets a default", "Bash", `{"command":"rm -rf /"}`,
			store.Decision{Outcome: store.OutcomeDeny, ByName: "Carol"},
			func(t *testing.T, body map[string]any) {
				if body["behavior"] != "deny" || body["message"] != "Denied by Carol." || body["interrupt"] != nil {
					t.Errorf("got %v", body)
				}
			}},
		{"deny with interrupt carries the flag", "Bash", `{"command":"rm -rf /"}`,
			store.Decision{Outcome: store.OutcomeDeny, Message: "stop", Interrupt: true},
			func(t *testing.T, body map[string]any) {
				if body["behavior"] != "deny" || body["message"] != "stop" || body["interrupt"] != true {
					t.Errorf("got %v", body)
				}
			}},
		{"answers are merged into the input", "AskUserQuestion", askInput,
			store.Decision{Outcome: store.OutcomeAllow, Answers: map[string]string{"Which DB?": "A, B"}},
			func(t *testing.T, body map[string]any) {
				in := body["updatedInput"].(map[string]any)
				if in["answers"].(map[string]any)["Which DB?"] != "A, B" || len(in["questions"].([]any)) != 1 {
					t.Errorf("got %v", body)
				}
			}},
		{"expired is a deny saying nobody answered", "Bash", `{"command":"ls"}`,
			store.Decision{Outcome: store.OutcomeExpired, Message: ExpiredMessage(time.Minute)},
			func(t *testing.T, body map[string]any) {
				if body["behavior"] != "deny" || !strings.Contains(body["message"].(string), "Nobody answered") {
					t.Errorf("got %v", body)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeCLI(t, ConnHandlers{OnCanUseTool: func(_ context.Context, id string, c CanUseTool) (PermissionResult, bool) {
				r := NewRequest("s", id, c, time.Now(), time.Time{})
				d := tt.decision
				d.At = time.Now()
				res, ok, err := ResultFor(r, d)
				if err != nil {
					t.Error(err)
				}
				return res, ok
			}})
			f.emit(canUseTool("r1", tt.tool, tt.input))
			id, sub, body, _ := response(t, f.next())
			if id != "r1" || sub != "success" {
				t.Fatalf("got %s %s", id, sub)
			}
			tt.check(t, body)
		})
	}
}

// elicitationLine is an elicitation as CLI 2.1.330 forwards an MCP
// server's elicitation/create (seen live; see wire.go).
const elicitationLine = `{"type":"control_request","request_id":"e1","request":{"subtype":"elicitation","mcp_server_name":"probe",` +
	`"message":"Which region?","mode":"form","requested_schema":{"type":"object","properties":{"region":{"type":"string","enum":["eu","us"]},` +
	`"count":{"type":"integer","minimum":1,"maximum":5}},"required":["region"]},"property_order":["region","count"]}}`

func TestConnAnswersAnElicitationWithTheHandlersResult(t *testing.T) {
	got := make(chan Elicitation, 1)
	answer := make(chan ElicitResult, 1)
	f := newFakeCLI(t, ConnHandlers{OnElicitation: func(ctx context.Context, id string, e Elicitation) (ElicitResult, bool) {
		got <- e
		select {
		case r := <-answer:
			return r, true
		case <-ctx.Done():
			return ElicitResult{Action: "cancel"}, true
		}
	}})
	f.emit(elicitationLine)
	var e Elicitation
	select {
	case e = <-got:
	case <-time.After(guard):
		t.Fatal("the elicitation never reached the handler")
	}
	if e.MCPServerName != "probe" || e.Message != "Which region?" || e.Mode != "form" ||
		strings.Join(e.PropertyOrder, ",") != "region,count" || !strings.Contains(string(e.RequestedSchema), `"required":["region"]`) ||
		!strings.Contains(string(e.Raw), `"subtype":"elicitation"`) {
		t.Errorf("decoded %+v", e)
	}
	answer <- ElicitResult{Action: "accept", Content: json.RawMessage(`{"region":"eu","count":3}`)}
	id, sub, body, _ := response(t, f.next())
	if id != "e1" || sub != "success" || body["action"] != "accept" {
		t.Fatalf("answer: %s %s %v", id, sub, body)
	}
	if c := body["content"].(map[string]any); c["region"] != "eu" || c["count"] != float64(3) {
		t.Errorf("content = %v, want the typed values", c)
	}

	// Withdrawn by the CLI: nothing is written.
	f.emit(strings.Replace(elicitationLine, `"e1"`, `"e2"`, 1))
	<-got
	f.emit(`{"type":"control_cancel_request","request_id":"e2"}`)
	if err := f.endOutput(); err != nil {
		t.Fatal(err)
	}
	if rest := f.rest(); len(rest) != 0 {
		t.Errorf("host wrote %v for a withdrawn elicitation", rest)
	}
}

func TestConnRefusesAnInvalidElicitResult(t *testing.T) {
	f := newFakeCLI(t, ConnHandlers{OnElicitation: func(context.Context, string, Elicitation) (ElicitResult, bool) {
		return ElicitResult{Action: "decline", Content: json.RawMessage(`{"x":1}`)}, true
	}})
	f.emit(elicitationLine)
	id, sub, _, errText := response(t, f.next())
	if id != "e1" || sub != "error" || !strings.Contains(errText, "could not build a valid answer") {
		t.Errorf("got %s %s %q, want an error reply (which the CLI takes as cancel)", id, sub, errText)
	}
}
