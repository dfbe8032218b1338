package store

import (
	"encoding/json"
	"strings"
)

// IsQuestionForm reports whether a can_use_tool request is a question a
// card may turn into a form: Claude Code's own AskUserQuestion (the CLI
// validates its input), or an MCP tool named mcp__<server>__AskUserQuestion
// whose input is exactly the built-in's question schema, so a form shows
// everything the tool receives. Anything else is an ordinary tool call.
// KindOf uses it to give a request its Kind, blocks to decide what a card
// shows: one rule for both.
func IsQuestionForm(toolName string, input json.RawMessage) bool {
	if toolName == "AskUserQuestion" {
		return true
	}
	rest, ok := strings.CutPrefix(toolName, "mcp__")
	server, tool, found := strings.Cut(rest, "__")
	if !ok || !found || server == "" || tool != "AskUserQuestion" {
		return false
	}
	top, ok := onlyKeys(input, "questions", "answers", "annotations", "metadata")
	if !ok || !isStringMap(top["answers"]) || !isObject(top["annotations"]) || !isObject(top["metadata"]) {
		return false
	}
	var qs []json.RawMessage
	if json.Unmarshal(top["questions"], &qs) != nil || len(qs) < 1 || len(qs) > 4 {
		return false
	}
	for _, q := range qs {
		if !isQuestion(q) {
			return false
		}
	}
	return true
}

// isQuestion checks one question: {question, header?, multiSelect?,
// options: 2–4 × {label, description?}}, every value of the right type.
func isQuestion(raw json.RawMessage) bool {
	q, ok := onlyKeys(raw, "question", "header", "multiSelect", "options")
	if !ok || !isString(q["question"], true) || !isString(q["header"], false) || !isBool(q["multiSelect"]) {
		return false
	}
	var opts []json.RawMessage
	if json.Unmarshal(q["options"], &opts) != nil || len(opts) < 2 || len(opts) > 4 {
		return false
	}
	for _, o := range opts {
		opt, ok := onlyKeys(o, "label", "description")
		if !ok || !isString(opt["label"], true) || !isString(opt["description"], false) {
			return false
		}
	}
	return true
}

// onlyKeys decodes a JSON object whose keys (compared exactly, unlike
// encoding/json's field matching) are all among allowed.
func onlyKeys(raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, false
	}
	for k := range obj {
		if !contains(allowed, k) {
			return nil, false
		}
	}
	return obj, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isString reports whether raw is a JSON string, not blank when required.
// It and the type checks below accept an absent value (nil) unless
// required.
func isString(raw json.RawMessage, required bool) bool {
	if raw == nil {
		return !required
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && (!required || strings.TrimSpace(s) != "")
}

func isBool(raw json.RawMessage) bool {
	var b bool
	return raw == nil || json.Unmarshal(raw, &b) == nil
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return raw == nil || (json.Unmarshal(raw, &m) == nil && m != nil)
}

func isStringMap(raw json.RawMessage) bool {
	var m map[string]string
	return raw == nil || (json.Unmarshal(raw, &m) == nil && m != nil)
}
