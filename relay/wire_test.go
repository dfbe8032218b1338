package relay

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/storetest"
)

// lines are real stdout lines from the reference (ids filled in).
//
//go:embed testdata/lines.jsonl
var corpus []byte

func corpusLines(tb testing.TB) [][]byte {
	tb.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(corpus))
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	if len(out) == 0 {
		tb.Fatal("empty corpus")
	}
	return out
}

func TestDecodeLineTypesEveryReferenceLine(t *testing.T) {
	for _, line := range corpusLines(t) {
		m, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("DecodeLine(%s): %v", line, err)
		}
		if !bytes.Equal(m.Raw, line) {
			t.Errorf("Raw not kept verbatim for %s", m.Type)
		}
		unknown := m.Type == "stream_event" || m.Type == "rate_limit_event"
		if m.Known() == unknown {
			t.Errorf("%s: Known()=%v", m.Type, m.Known())
		}
	}
}

func TestDecodeLineReadsCanUseToolFields(t *testing.T) {
	m, err := DecodeLine(corpusLines(t)[1])
	if err != nil {
		t.Fatal(err)
	}
	cr := m.ControlRequest
	if cr == nil || cr.CanUseTool == nil {
		t.Fatalf("not a can_use_tool: %+v", m)
	}
	c := cr.CanUseTool
	if m.Subtype != SubtypeCanUseTool || cr.RequestID != "525e313e-aaaa-4bbb-8ccc-0123456789ab" ||
		c.ToolName != "Read" || c.DisplayName != "Read" || c.Description != "/etc/hostname" ||
		c.DecisionReason != "Path is outside allowed working directories" || c.DecisionReasonType != "workingDir" ||
		c.ToolUseID != "toolu_R1" || len(c.Suggestions) != 1 || string(c.Input) != `{"file_path":"/etc/hostname"}` {
		t.Errorf("fields: %+v", c)
	}
}

func TestDecodeLineKeepsUnknownAndRejectsMalformed(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		wantErr bool
		typ     string
	}{
		{"unknown type is kept raw", `{"type":"brand_new","x":1}`, false, "brand_new"},
		{"unknown system subtype is typed as system", `{"type":"system","subtype":"brand_new"}`, false, "system"},
		{"unknown control subtype keeps its subtype", `{"type":"control_request","request_id":"r","request":{"subtype":"request_user_dialog"}}`, false, "control_request"},
		{"elicitation of the wrong shape", `{"type":"control_request","request_id":"r","request":{"subtype":"elicitation","message":5}}`, true, "control_request"},
		{"not json", `{this is not json`, true, ""},
		{"array", `[1,2]`, true, ""},
		{"no type", `{"subtype":"x"}`, true, ""},
		{"type of wrong kind", `{"type":5}`, true, ""},
		{"known type with wrong field shape", `{"type":"result","num_turns":"two"}`, true, "result"},
		{"empty", ``, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeLine([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("error %v is not ErrMalformed", err)
			}
			if m.Type != tt.typ {
				t.Errorf("Type = %q, want %q", m.Type, tt.typ)
			}
		})
	}
}

// decodeWritten decodes one line the Encoder wrote and fails on anything
// the CLI would reject.
func decodeWritten(t *testing.T, b []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Fatalf("not exactly one line: %q", b)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON written: %v: %s", err, b)
	}
	return v
}

func TestEncoderWritesOneValidJSONLinePerCall(t *testing.T) {
	nasty := "line\nbreak \u2028 \"quoted\" \\ <tag> & \x00 \xff end"
	tests := []struct {
		name  string
		write func(e *Encoder) error
		check func(t *testing.T, v map[string]any)
	}{
		{"user message", func(e *Encoder) error { return e.WriteUser(nasty) }, func(t *testing.T, v map[string]any) {
			msg := v["message"].(map[string]any)
			if v["type"] != "user" || msg["role"] != "user" || !strings.HasPrefix(msg["content"].(string), "line\nbreak") {
				t.Errorf("got %v", v)
			}
			if _, ok := v["parent_tool_use_id"]; !ok {
				t.Error("parent_tool_use_id missing (the CLI expects null)")
			}
		}},
		{"interrupt", func(e *Encoder) error { return e.WriteInterrupt("req_1") }, func(t *testing.T, v map[string]any) {
			if v["type"] != "control_request" || v["request_id"] != "req_1" || v["request"].(map[string]any)["subtype"] != "interrupt" {
				t.Errorf("got %v", v)
			}
		}},
		{"set permission mode", func(e *Encoder) error { return e.WriteSetPermissionMode("req_2", "plan") }, func(t *testing.T, v map[string]any) {
			r := v["request"].(map[string]any)
			if r["subtype"] != "set_permission_mode" || r["mode"] != "plan" {
				t.Errorf("got %v", v)
			}
		}},
		{"allow", func(e *Encoder) error { return e.WritePermission("c1", Allow(json.RawMessage(`{"command": "ls"}`))) }, func(t *testing.T, v map[string]any) {
			r := v["response"].(map[string]any)
			p := r["response"].(map[string]any)
			if r["subtype"] != "success" || r["request_id"] != "c1" || p["behavior"] != "allow" || p["updatedInput"].(map[string]any)["command"] != "ls" {
				t.Errorf("got %v", v)
			}
			if _, ok := p["message"]; ok {
				t.Error("allow carries a message")
			}
		}},
		{"deny with interrupt", func(e *Encoder) error { return e.WritePermission("c2", Deny(nasty, true)) }, func(t *testing.T, v map[string]any) {
			p := v["response"].(map[string]any)["response"].(map[string]any)
			if p["behavior"] != "deny" || p["interrupt"] != true || p["message"] == "" {
				t.Errorf("got %v", v)
			}
			if _, ok := p["updatedInput"]; ok {
				t.Error("deny carries updatedInput")
			}
		}},
		{"error", func(e *Encoder) error { return e.WriteError("c3", "Unsupported control request subtype: x") }, func(t *testing.T, v map[string]any) {
			r := v["response"].(map[string]any)
			if r["subtype"] != "error" || r["request_id"] != "c3" || r["error"] != "Unsupported control request subtype: x" {
				t.Errorf("got %v", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tt.write(NewEncoder(&buf)); err != nil {
				t.Fatal(err)
			}
			tt.check(t, decodeWritten(t, buf.Bytes()))
		})
	}
}

func TestEncoderRefusesResultsTheCLIWouldReject(t *testing.T) {
	tests := []struct {
		name string
		res  PermissionResult
	}{
		{"allow without updatedInput", PermissionResult{Behavior: "allow"}},
		{"allow with a non-object input", Allow(json.RawMessage(`["ls"]`))},
		{"allow with invalid JSON input", Allow(json.RawMessage(`{"a":`))},
		{"deny without message", Deny("", false)},
		{"ask", PermissionResult{Behavior: "ask"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := NewEncoder(&buf).WritePermission("c", tt.res)
			if !errors.Is(err, ErrInvalidResult) {
				t.Fatalf("err = %v, want ErrInvalidResult", err)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %q", buf.String())
			}
		})
	}
}

// FuzzDecodeLine: no input panics the decoder, and a decoded message
// encodes to a fixed point (decode → encode → decode → encode is stable),
// so what the host re-emits never drifts or turns invalid.
func FuzzDecodeLine(f *testing.F) {
	for _, line := range corpusLines(f) {
		f.Add(line)
	}
	f.Add([]byte(`{"type":"control_request","request":null}`))
	f.Add([]byte(`{"type":"assistant","message":{"content":"x"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := DecodeLine(line)
		if err != nil {
			return
		}
		b1, err := EncodeMessage(m)
		if err != nil {
			t.Fatalf("encode of decoded %s: %v", m.Type, err)
		}
		if !json.Valid(b1) {
			t.Fatalf("encoded invalid JSON: %s", b1)
		}
		m2, err := DecodeLine(b1)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b1, err)
		}
		if m2.Type != m.Type || m2.Subtype != m.Subtype || m2.Known() != m.Known() {
			t.Fatalf("type changed: %s/%s → %s/%s", m.Type, m.Subtype, m2.Type, m2.Subtype)
		}
		b2, err := EncodeMessage(m2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("not a fixed point:\n%s\n%s", b1, b2)
		}
	})
}

// TestDecodeLineReadsEveryPromptField: a can_use_tool and an elicitation
// with every field the host reads decode into them all.
func TestDecodeLineReadsEveryPromptField(t *testing.T) {
	tool := `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Shell",` +
		`"input":{"command":"make test"},"description":"run the tests","permission_suggestions":[{"type":"setMode","mode":"acceptEdits","destination":"session"}],` +
		`"blocked_path":"/srv/out","decision_reason":"This command requires approval","decision_reason_type":"other","tool_use_id":"toolu_1",` +
		`"agent_id":"agent-1","title":"Run the tests?","mcp_server":"ci","suppress_always_allow_rule":true}}`
	m, err := DecodeLine([]byte(tool))
	if err != nil || m.ControlRequest == nil || m.ControlRequest.CanUseTool == nil {
		t.Fatalf("decode: %+v, %v", m, err)
	}
	wantTool := CanUseTool{Subtype: SubtypeCanUseTool, ToolCall: store.ToolCall{
		ToolName: "Bash", DisplayName: "Shell", Input: json.RawMessage(`{"command":"make test"}`),
		Description: "run the tests",
		BlockedPath: "/srv/out", DecisionReason: "This command requires approval", DecisionReasonType: "other", ToolUseID: "toolu_1",
		AgentID: "agent-1", Title: "Run the tests?", MCPServer: "ci", SuppressAlwaysAllow: true,
	}, Suggestions: []json.RawMessage{json.RawMessage(`{"type":"setMode","mode":"acceptEdits","destination":"session"}`)}}
	storetest.EveryFieldSet(t, wantTool)
	if got := *m.ControlRequest.CanUseTool; !reflect.DeepEqual(got, wantTool) {
		t.Errorf("can_use_tool reads as\n%+v\nwant\n%+v", got, wantTool)
	}

	elicit := `{"type":"control_request","request_id":"r2","request":{"subtype":"elicitation","mcp_server_name":"probe","message":"Which region?",` +
		`"mode":"form","url":"https://example.com/login","elicitation_id":"e1","requested_schema":{"type":"object"},"property_order":["region"],` +
		`"title":"Deploy","display_name":"Probe","description":"where to deploy"}}`
	m, err = DecodeLine([]byte(elicit))
	if err != nil || m.ControlRequest == nil || m.ControlRequest.Elicitation == nil {
		t.Fatalf("decode: %+v, %v", m, err)
	}
	wantElicit := Elicitation{Elicitation: store.Elicitation{
		Subtype: SubtypeElicitation, MCPServerName: "probe", Message: "Which region?", Mode: "form",
		URL: "https://example.com/login", ElicitationID: "e1", RequestedSchema: json.RawMessage(`{"type":"object"}`),
		PropertyOrder: []string{"region"}, Title: "Deploy", DisplayName: "Probe", Description: "where to deploy",
	}, Raw: m.ControlRequest.Request}
	storetest.EveryFieldSet(t, wantElicit)
	if got := *m.ControlRequest.Elicitation; !reflect.DeepEqual(got, wantElicit) {
		t.Errorf("elicitation reads as\n%+v\nwant\n%+v", got, wantElicit)
	}
}
