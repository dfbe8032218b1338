package blocks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Tokens slackgate itself puts in messages: the session's starter, the
// decider, and date tokens. Everything else that looks like a mention or a
// labelled link came from input and must not be there.
var ownTokens = regexp.MustCompile(`<@U0STARTER>|<@U0ALICE>|<!date\^\d+\^\{date_short_pretty\} \{time\}\|[^<>]*>`)

// checkRendered asserts the properties every rendered message keeps
// whatever the input: within Slack's limits, no mention or labelled link
// built from input, no raw invisible character.
func checkRendered(t *testing.T, m Message) {
	t.Helper()
	if err := ValidateMessage(m.Text, m.Blocks); err != nil {
		t.Fatalf("breaks Slack's limits: %v", err)
	}
	if n := runes(m.Text); n > MaxUpdateText {
		t.Fatalf("text fallback %d > %d chars", n, MaxUpdateText)
	}
	for _, s := range mrkdwnTexts(t, m) {
		checkMrkdwn(t, s)
	}
	checkNoInvisible(t, mustJSON(t, m.Blocks))
}

func checkMrkdwn(t *testing.T, s string) {
	t.Helper()
	rest := ownTokens.ReplaceAllString(s, "")
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			return
		}
		rest = rest[i:]
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			t.Fatalf("unclosed < in mrkdwn: %q", s)
		}
		tok := rest[:end+1]
		if !strings.HasPrefix(tok, "<http://") && !strings.HasPrefix(tok, "<https://") || strings.Contains(tok, "|") {
			t.Fatalf("mention or labelled link %q in mrkdwn %q", tok, s)
		}
		rest = rest[end+1:]
	}
}

// checkNoInvisible allows only the zero-width spaces codeSafe puts between
// backticks so input cannot close a code fence.
func checkNoInvisible(t *testing.T, js string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			if s := strings.ReplaceAll(x, "`"+zwsp, "`"); hasInvisible(s) {
				t.Fatalf("raw invisible character in %q", x)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
}

func FuzzCard(f *testing.F) {
	for _, r := range cards() {
		f.Add(string(r.Kind), r.ToolName, string(r.Input), r.Description)
	}
	f.Add("tool", "Bash", `{"command":"echo <!channel> \u202e `+"```"+` [a](https://evil|x)","timeout":"<@U1>"}`, "<!here>")
	for _, r := range elicitCards() {
		f.Add(string(r.Kind), r.ToolName, string(r.Input), r.Description)
	}
	f.Add("tool", "Bash", `{"command":"echo ⚠️ \u2714\ufe0f\ufe0f 1\ufe0f\u20e3 \ud83d\ude00\udb40\udd00\ufe00 \u17b4\u180b\u2065"}`, "⚠\ufe0e")
	f.Add("question", "mcp__x__AskUserQuestion", `{"questions":[{"question":"<!channel>","options":[{"label":"\u200b"},{"label":"b"}]}]}`, "")
	f.Fuzz(func(t *testing.T, kind, tool, input, desc string) {
		r := request("req-fuzz", store.Kind(kind), tool, input)
		if !json.Valid(r.Input) {
			r.Input = json.RawMessage(mustJSON(t, input))
		}
		r.Description, r.DecisionReason, r.BlockedPath = desc, desc, desc
		r.Suggestions = []store.Suggestion{{Type: "addRules", Behavior: "allow", Rules: []store.SuggestionRule{{ToolName: tool, RuleContent: desc}}}}
		for _, o := range []CardOptions{{}, {AttachmentFailed: true}} {
			checkRendered(t, CardWith(r, session, o))
		}
		checkRendered(t, Card(decided(r, store.Decision{Outcome: store.OutcomeDeny, By: "U0ALICE", At: t0, Message: desc}), session))
		for _, kind := range []ModalKind{ModalDeny, ModalEdit, ModalOther, ModalElicit} {
			if v, ok := Modal(kind, r, cardRef); ok {
				if err := ValidateView(v); err != nil {
					t.Fatalf("%s modal breaks Slack's limits: %v", kind, err)
				}
				checkNoInvisible(t, mustJSON(t, v))
			}
		}
	})
}

func FuzzEventLine(f *testing.F) {
	for _, ms := range threadMessages() {
		f.Add("Bash", `{"command":"make"}`, ms[0].Text)
	}
	f.Add("Bash", `{"command":"echo ⚠️"}`, strings.Repeat("⚠️", 1500)+"\U000E0100 a\u200db")
	f.Add("mcp__a__b", `{"x":"<!channel>\u2066"}`, "[github.com](https://evil.example) <https://evil|github.com> ``` \u202e")
	f.Fuzz(func(t *testing.T, tool, input, text string) {
		raw := json.RawMessage(input)
		if !json.Valid(raw) {
			raw = json.RawMessage(mustJSON(t, input))
		}
		for _, e := range []store.Event{
			{Type: store.EventAssistantText, Text: text},
			{Type: store.EventToolUse, Tool: tool, Input: raw},
			{Type: store.EventToolResult, Tool: tool, IsError: true, Text: text},
			{Type: store.EventError, Text: text},
			{Type: store.EventRefused, Text: text},
			{Type: store.EventExit, Exit: &store.Exit{Code: 1, Reason: text, Stderr: strings.Split(text, "\n")}},
			{Type: store.EventResult, Result: &store.Result{Subtype: tool, IsError: true, Errors: []string{text}, Text: text}},
		} {
			for _, m := range EventMessages(e) {
				checkRendered(t, m)
			}
		}
	})
}

// seedPayloads adds every recorded Slack payload of a type as a seed.
func seedPayloads(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "payloads", "*.json"))
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
}

// fuzzRequests are the requests a decoded interaction is matched against.
func fuzzRequests() []store.Request {
	var out []store.Request
	for _, r := range cards() {
		r.Decision = nil
		out = append(out, r)
	}
	for _, r := range elicitCards() {
		r.Decision = nil
		out = append(out, r)
	}
	return out
}

func FuzzDecodeBlockActions(f *testing.F) {
	seedPayloads(f)
	f.Add([]byte(`{"type":"block_actions","actions":[{"action_id":"sg_always.99","value":"0|99|req-bash"}]}`))
	f.Add([]byte(`{"type":"block_actions","actions":[{"action_id":"sg_always","type":"static_select","selected_option":{"value":"0|1|req-bash"}}]}`))
	rs := fuzzRequests()
	f.Fuzz(func(t *testing.T, raw []byte) {
		var cb slack.InteractionCallback
		if json.Unmarshal(raw, &cb) != nil {
			return
		}
		for _, ba := range cb.ActionCallback.BlockActions {
			a, ok := ParseAction(ba)
			if !ok || a.Kind == ActionStop {
				continue
			}
			for _, r := range rs {
				r.ID = a.RequestID
				d, next, err := DecideAction(a, r, &cb, alice, clickAt)
				if err == nil && next == NextDecide && d.Outcome == "" {
					t.Fatalf("%s decided nothing without an error", a.Kind)
				}
				if err == nil && len(d.Permissions) == 1 && !alwaysOffered(r) {
					t.Fatalf("Always allow decided for a request that offers none")
				}
			}
		}
	})
}

func FuzzDecodeViewSubmission(f *testing.F) {
	seedPayloads(f)
	f.Add([]byte(`{"type":"view_submission","view":{"callback_id":"sg_elicit_modal","private_metadata":"{\"r\":\"req-el\"}",` +
		`"state":{"values":{"sg_e:0":{"sg_v":{"selected_option":{"value":"1"}}},"sg_e:1":{"sg_v":{"value":"4"}},` +
		`"sg_e:4":{"sg_v":{"value":"a@b.example"}},"sg_e:7":{"sg_v":{"selected_options":[{"value":"0"}]}}}}}}`))
	rs := fuzzRequests()
	f.Fuzz(func(t *testing.T, raw []byte) {
		var cb slack.InteractionCallback
		if json.Unmarshal(raw, &cb) != nil {
			return
		}
		v, err := ParseViewSubmission(&cb)
		if err != nil {
			return
		}
		for _, r := range rs {
			r.ID = v.RequestID
			d, errs, err := DecideView(v, r, &cb, alice, clickAt)
			if err == nil && errs == nil && d.Outcome == "" {
				t.Fatalf("%s decided nothing without an error", v.Kind)
			}
			if err == nil && len(d.UpdatedInput) > 0 && !Editable(r) {
				t.Fatalf("edited input accepted for a request that is not editable")
			}
			if err == nil && errs == nil && d.Validate() != nil {
				t.Fatalf("%s decided something invalid: %v", v.Kind, d.Validate())
			}
		}
	})
}
