package blocks

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slackgate/slackgate/store"
)

func TestEscapeNeutralisesMentionsAndLinks(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"<!channel>", "&lt;!channel&gt;"},
		{"<@U123> & <https://evil|ok>", "&lt;@U123&gt; &amp; &lt;https://evil|ok&gt;"},
		{"&amp;", "&amp;amp;"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMarkdownConvertsToMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bold", "a **b** c", "a *b* c"},
		{"bold underscores", "a __b__ c", "a *b* c"},
		{"italic star", "a *b* c", "a _b_ c"},
		{"bold and italic together", "**x** and *y*", "*x* and _y_"},
		{"strike", "~~gone~~", "~gone~"},
		{"heading", "## Title ##", "*Title*"},
		{"heading with bold inside", "# The **plan**", "*The plan*"},
		{"https link shows its target", "see [docs](https://x.io/a?b=1&c=2)", "see docs (<https://x.io/a?b=1&amp;c=2>)"},
		{"link text is escaped", "[<!channel>](https://x.io)", "&lt;!channel&gt; (<https://x.io>)"},
		{"a label naming another host cannot hide the target", "[github.com/acme](https://evil.example/x)", "github.com/acme (<https://evil.example/x>)"},
		{"a link whose label is its URL is the URL", "[https://x.io/a](https://x.io/a)", "<https://x.io/a>"},
		{"user info in the URL names the real host", "[docs](https://github.com@evil.example/x)", "docs (→ evil.example: <https://github.com@evil.example/x>)"},
		{"a punycode host is named", "[docs](https://xn--ggle-0nda.com/)", "docs (→ xn--ggle-0nda.com: <https://xn--ggle-0nda.com/>)"},
		{"a scheme in capitals is written as Slack links it", "[m](HTTPS://x.io/A)", "m (<https://x.io/A>)"},
		{"a Slack link in the text stays literal", "see <https://evil.example|github.com>", "see &lt;https://evil.example|github.com&gt;"},
		{"a link with an invisible character stays text", "[a](https://x.io/\u202e)", "[a](https://x.io/⟦U+202E⟧)"},
		{"non-http link stays text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"mailto link stays text", "[m](mailto:a@b.c)", "[m](mailto:a@b.c)"},
		{"bullets", "- a\n* b\n  + c", "• a\n• b\n  • c"},
		{"numbered lists stay", "1. a\n2. b", "1. a\n2. b"},
		{"escapes text", "a < b && <@U1>", "a &lt; b &amp;&amp; &lt;@U1&gt;"},
		{"inline code is kept and escaped", "run `a <b> **c**`", "run `a &lt;b&gt; **c**`"},
		{"code fence kept, language dropped, content escaped", "```go\nx := <-ch // **no**\n```", "```\nx := &lt;-ch // **no**\n```"},
		{"unclosed fence is closed", "```\ncode", "```\ncode\n```"},
		{"quote", "> quoted **b**", "> quoted *b*"},
		{"rule", "---", "──────────"},
		{"stray triple backticks inside a line are broken", "a ``` b", "a `\u200b`\u200b` b"},
		{"snake_case untouched", "my_var_name and 2*3*4", "my_var_name and 2*3*4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Markdown(tt.in); got != tt.want {
				t.Errorf("Markdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitTextKeepsChunksWithinLimitAndFencesBalanced(t *testing.T) {
	var b strings.Builder
	b.WriteString("intro\n```\n")
	for i := 0; i < 400; i++ {
		b.WriteString("code line that is moderately long to fill the chunk quickly\n")
	}
	b.WriteString("```\noutro " + strings.Repeat("w", 7000))
	chunks := splitText(b.String(), 2900)
	if len(chunks) < 3 {
		t.Fatalf("got %d chunks", len(chunks))
	}
	total := 0
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > 2900 {
			t.Errorf("chunk %d has %d > 2900 chars", i, n)
		}
		fences := 0
		for _, line := range strings.Split(c, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fences++
			}
		}
		if fences%2 != 0 {
			t.Errorf("chunk %d has unbalanced fences", i)
		}
		total += strings.Count(c, "code line")
	}
	if total != 400 {
		t.Errorf("lost code lines: %d of 400", total)
	}
	if got := splitText("short", 2900); len(got) != 1 || got[0] != "short" {
		t.Errorf("short text split: %q", got)
	}
}

func TestLongAssistantTextIsSplitIntoValidMessages(t *testing.T) {
	text := strings.Repeat("Paragraph with **bold** & <tags>.\n\n", 1500)
	ms := EventMessages(store.Event{Type: store.EventAssistantText, Text: text})
	if len(ms) < 10 {
		t.Fatalf("got %d messages", len(ms))
	}
	for i, m := range ms {
		if err := ValidateMessage(m.Text, m.Blocks); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
		if n := utf8.RuneCountInString(m.Text); n > MaxUpdateText {
			t.Errorf("message %d text %d chars", i, n)
		}
	}
}

func TestCutSafeNeverSplitsAnEntity(t *testing.T) {
	s := Escape(strings.Repeat("<", 100))
	for n := 1; n < 60; n++ {
		got := cutSafe(s, n)
		if i := strings.LastIndexByte(got, '&'); i >= 0 && !strings.Contains(got[i:], ";") {
			t.Fatalf("cutSafe(%d) = %q splits an entity", n, got)
		}
	}
}

func TestPrettyShowsCharactersNotGoEscapes(t *testing.T) {
	raw, err := json.Marshal(map[string]string{"cmd": "a <b> & c", "path": `C:\u003c`})
	if err != nil {
		t.Fatal(err)
	}
	got := pretty(raw)
	if !strings.Contains(got, `"a <b> & c"`) {
		t.Errorf("pretty kept Go's HTML escapes: %s", got)
	}
	if !strings.Contains(got, `"C:\\u003c"`) {
		t.Errorf("pretty unescaped an escaped backslash: %s", got)
	}
}

func TestToolUseLinesAreCompact(t *testing.T) {
	tests := []struct {
		tool, input, want string
	}{
		{"Bash", `{"command":"make test","description":"Run"}`, "🔧 *Bash*: `make test`"},
		{"Read", `{"file_path":"/a/b.go"}`, "🔧 *Read*: `/a/b.go`"},
		{"Bash", `{"command":"echo <!channel>"}`, "🔧 *Bash*: `echo &lt;!channel&gt;`"},
		{"TodoWrite", `{"todos":[{"content":"x"}]}`, "🔧 *TodoWrite*: `{\"todos\":[{\"content\":\"x\"}]}`"},
		{"mcp__github__list", `{}`, "🔧 *mcp__github__list*: `list`"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			ms := EventMessages(store.Event{Type: store.EventToolUse, Tool: tt.tool, Input: json.RawMessage(tt.input)})
			if len(ms) != 1 || ms[0].Text != tt.want {
				t.Fatalf("got %+v, want text %q", ms, tt.want)
			}
		})
	}
}

func TestEventsWithoutAThreadMessageRenderNothing(t *testing.T) {
	for _, e := range []store.Event{
		{Type: store.EventRequestCreated, RequestID: "r"},
		{Type: store.EventRequestSettled, RequestID: "r"},
		{Type: store.EventSessionStarted},
		{Type: store.EventToolResult, Tool: "Bash", Text: "ok"},
		{Type: store.EventAssistantText, Text: "  "},
		{Type: store.EventResult},
		{Type: store.EventExit},
	} {
		if ms := EventMessages(e); len(ms) != 0 {
			t.Errorf("%s rendered %d messages", e.Type, len(ms))
		}
	}
}

func TestExitShowsTheStderrTail(t *testing.T) {
	var lines []string
	for i := 0; i < 50; i++ {
		lines = append(lines, "stderr line "+strings.Repeat("x", i))
	}
	lines = append(lines, "fatal: <!channel> ```")
	ms := EventMessages(store.Event{Type: store.EventExit, Exit: &store.Exit{Code: 137, Reason: "signal: killed", Stderr: lines}})
	if len(ms) != 1 {
		t.Fatalf("got %d messages", len(ms))
	}
	js := mustJSON(t, ms[0].Blocks)
	if !strings.Contains(js, "fatal: \\u0026lt;!channel\\u0026gt;") {
		t.Errorf("last stderr line missing or unescaped: %s", js)
	}
	if strings.Contains(js, "stderr line \\n") || strings.Contains(js, "stderr line xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\n") {
		t.Errorf("old stderr lines shown: %s", js)
	}
	if err := ValidateMessage(ms[0].Text, ms[0].Blocks); err != nil {
		t.Error(err)
	}
	checkFences(t, ms[0])
}
