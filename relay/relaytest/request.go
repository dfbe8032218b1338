package relaytest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Request is one decoded POST /v1/messages body, as the CLI sent it.
type Request struct {
	Model     string
	MaxTokens int
	Stream    bool
	System    string    // the top-level system prompt, text blocks joined by "\n"
	Tools     []string  // names of the tools offered
	Messages  []Message // the conversation so far, oldest first
	Raw       json.RawMessage
}

// Message is one conversation message of a request.
type Message struct {
	Role    string // "user", "assistant", or "system" (both CLI versions append context as a system message)
	Content []ContentBlock
}

// ContentBlock is one block of a message. A plain string content arrives as
// a single text block.
type ContentBlock struct {
	Type string // text, tool_use, tool_result, image, thinking, ...
	Text string // text blocks

	ID    string          // tool_use
	Name  string          // tool_use
	Input json.RawMessage // tool_use

	ToolUseID string // tool_result
	Result    string // tool_result: the content flattened to text
	IsError   bool   // tool_result
}

// ToolResult is what the model was told a tool returned.
type ToolResult struct {
	ToolUseID string
	Content   string // text blocks of the result joined by "\n"
	IsError   bool
}

// HasTool reports whether the request offers the named tool.
func (r Request) HasTool(name string) bool {
	return slices.Contains(r.Tools, name)
}

// ToolResults lists every tool result in the conversation, oldest first.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for _, m := range r.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				out = append(out, ToolResult{ToolUseID: b.ToolUseID, Content: b.Result, IsError: b.IsError})
			}
		}
	}
	return out
}

// ToolResult finds the result of one tool use in the conversation.
func (r Request) ToolResult(toolUseID string) (ToolResult, bool) {
	for _, tr := range r.ToolResults() {
		if tr.ToolUseID == toolUseID {
			return tr, true
		}
	}
	return ToolResult{}, false
}

// LastUserText is the last text block a person typed, as the model sees
// it: the last text block of the last user message that has one, trimmed,
// skipping the CLI's <system-reminder> blocks. The CLI merges consecutive
// user messages, so after an interrupt the last user message holds
// "first\n", "[Request interrupted by user]\n", "again" and this returns
// "again". "" if there is none.
func (r Request) LastUserText() string {
	texts := r.UserTexts()
	if len(texts) == 0 {
		return ""
	}
	return texts[len(texts)-1]
}

// UserTexts lists every text block of the user messages, oldest first,
// trimmed, without the CLI's <system-reminder> blocks (the CLI's own
// markers such as "[Request interrupted by user]" stay: the model saw them).
func (r Request) UserTexts() []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "text" && !isReminder(b.Text) {
				out = append(out, strings.TrimSpace(b.Text))
			}
		}
	}
	return out
}

// isReminder spots the context blocks the CLI prepends to user messages.
func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

// wireRequest is the subset of the Messages API request body we read.
type wireRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// decodeRequest parses a /v1/messages body.
func decodeRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("relaytest: decode messages request: %w", err)
	}
	req := Request{Model: w.Model, MaxTokens: w.MaxTokens, Stream: w.Stream, Raw: json.RawMessage(body)}
	sys, err := decodeBlocks(w.System)
	if err != nil {
		return Request{}, fmt.Errorf("relaytest: decode system: %w", err)
	}
	req.System = joinText(sys)
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for i, m := range w.Messages {
		blocks, err := decodeBlocks(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("relaytest: decode message %d: %w", i, err)
		}
		msg := Message{Role: m.Role}
		for _, b := range blocks {
			cb := ContentBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Input: b.Input,
				ToolUseID: b.ToolUseID, IsError: b.IsError}
			if b.Type == "tool_result" {
				inner, err := decodeBlocks(b.Content)
				if err != nil {
					return Request{}, fmt.Errorf("relaytest: decode tool_result %s: %w", b.ToolUseID, err)
				}
				cb.Result = joinText(inner)
			}
			msg.Content = append(msg.Content, cb)
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// decodeBlocks accepts the API's two content shapes: a string or an array
// of blocks. A missing value is no blocks.
func decodeBlocks(raw json.RawMessage) ([]wireBlock, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if s[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
		return []wireBlock{{Type: "text", Text: text}}, nil
	}
	var blocks []wireBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

func joinText(blocks []wireBlock) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// planFileRE finds the plan file the CLI names in plan mode ("You should
// create your plan at <path> using the Write tool" or "A plan file already
// exists at <path>").
var planFileRE = regexp.MustCompile(`(/[^\s"'<>]+/\.claude/plans/[^\s"'<>]+\.md)`)

// PlanFile is the path of the plan file the CLI told the model to write in
// plan mode, or "" when the request names none.
func (r Request) PlanFile() string {
	if m := planFileRE.FindString(r.System); m != "" {
		return m
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		for _, b := range r.Messages[i].Content {
			if m := planFileRE.FindString(b.Text); m != "" {
				return m
			}
		}
	}
	return ""
}
