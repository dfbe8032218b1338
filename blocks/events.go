package blocks

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Thread message budgets.
const (
	stderrLines = 20  // stderr lines shown when a process exits
	toolLine    = 150 // characters of the tool's argument on a tool-use line
	maxErrors   = 5   // errors listed under a failed result
)

// EventMessages renders one session event as the messages the bot posts in
// the session's thread: assistant text (markdown converted, split to fit),
// a compact tool-use line, a failed tool result, the end of a turn, the end
// of the process, an error. Events that the thread does not show (request
// events, which have cards; session_started; successful tool results)
// return nil.
func EventMessages(e store.Event) []Message {
	// Masked whole, before anything splits them into lines.
	e.Text, e.Input = maskSecrets(e.Text), maskJSON(e.Input)
	switch e.Type {
	case store.EventAssistantText:
		if strings.TrimSpace(e.Text) == "" {
			return nil
		}
		var out []Message
		for _, chunk := range splitText(Markdown(e.Text), bodyChunk) {
			if strings.TrimSpace(chunk) == "" {
				continue // a heading with no words ("# "), say: nothing to show
			}
			out = append(out, Message{Text: chunk, Blocks: []slack.Block{section(chunk)}})
		}
		return out
	case store.EventToolUse:
		line := "🔧 *" + codeSafe(cutShown(oneLine(e.Tool), 100)) + "*"
		if arg := toolArg(e.Tool, e.Input); arg != "" {
			line += ": " + inlineCode(arg, toolLine)
		}
		return []Message{contextMessage(line)}
	case store.EventToolResult:
		if !e.IsError {
			return nil
		}
		line := "⚠️ *" + codeSafe(cutShown(oneLine(e.Tool), 100)) + "* failed"
		if t := strings.TrimSpace(e.Text); t != "" {
			line += ": " + codeSafe(cutShown(oneLine(t), 500))
		}
		return []Message{contextMessage(line)}
	case store.EventResult:
		if e.Result == nil {
			return nil
		}
		return []Message{resultMessage(*e.Result)}
	case store.EventExit:
		if e.Exit == nil {
			return nil
		}
		return []Message{exitMessage(*e.Exit)}
	case store.EventModeChanged:
		if e.By != "" && !userID.MatchString(e.By) {
			e.By = ""
		}
		return []Message{ModeChanged(e)}
	case store.EventInterrupted:
		t := "⏹️ Claude's turn was stopped"
		if userID.MatchString(e.Text) {
			t = "⏹️ Stopped by <@" + e.Text + ">"
		}
		return []Message{contextMessage(t + ": reply in this thread to continue")}
	case store.EventError:
		t := "⚠️ " + codeSafe(cutShown(strings.TrimSpace(e.Text), 2500))
		if strings.TrimSpace(e.Text) == "" {
			t = "⚠️ Something went wrong in the worker."
		}
		return []Message{{Text: cut(t, 300), Blocks: []slack.Block{section(t)}}}
	case store.EventRefused:
		t := "🚫 " + codeSafe(cutShown(oneLine(e.Text), 1000))
		if strings.TrimSpace(e.Text) == "" {
			t = "🚫 slackgate refused something it could not verify."
		}
		return []Message{{Text: cut(t, 300), Blocks: []slack.Block{section(t)}}}
	}
	return nil
}

// ToolStep is one tool use in a turn's progress: an auto-allowed call, or
// one that failed.
type ToolStep struct {
	Tool   string
	Input  json.RawMessage
	Failed string // the error's first line when the call failed
}

// progressShown is how many steps the progress message lists; earlier ones
// are counted.
const progressShown = 8

// ProgressMessage folds a turn's tool uses into the one message the bot
// keeps editing while Claude works: the latest steps, one line each, and
// how many came before. Questions and plans have cards of their own and
// never appear here, so their raw input is never shown.
func ProgressMessage(steps []ToolStep) Message {
	if len(steps) == 0 {
		return Message{}
	}
	var lines []string
	if n := len(steps) - progressShown; n > 0 {
		lines = append(lines, fmt.Sprintf("… %s before", plural(n, "tool use")))
		steps = steps[n:]
	}
	for _, st := range steps {
		line := "🔧 *" + codeSafe(cutShown(oneLine(st.Tool), 100)) + "*"
		if arg := toolArg(st.Tool, st.Input); arg != "" {
			line += ": " + inlineCode(arg, toolLine)
		}
		if st.Failed != "" {
			line = "⚠️ *" + codeSafe(cutShown(oneLine(st.Tool), 100)) + "* failed: " + codeSafe(cutShown(oneLine(st.Failed), 300))
		}
		lines = append(lines, line)
	}
	text := cut(strings.Join(lines, "\n"), MaxText)
	return Message{Text: cut(lines[len(lines)-1], 300), Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(text))}}
}

// userID is what a Slack user id looks like; anything else is not put
// inside a mention.
var userID = regexp.MustCompile(`^[UW][A-Z0-9]{1,20}$`)

func contextMessage(line string) Message {
	return Message{Text: line, Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(line))}}
}

// toolArg is the one argument that says what a tool call does.
func toolArg(tool string, input json.RawMessage) string { return store.ToolArg(tool, input) }

func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

func resultMessage(r store.Result) Message {
	facts := fmt.Sprintf("%s · %s · $%.4f", plural(r.Turns, "turn"), duration(r.DurationMS), r.CostUSD)
	why := ResultFailure(r)
	if why == "" {
		t := "✅ Done · " + facts
		return Message{Text: t, Blocks: []slack.Block{slack.NewContextBlock("", mrkdwn(t))}}
	}
	head := "❌ Turn failed"
	if kind := cmp.Or(r.APIError, r.Subtype); kind != "" && kind != "success" {
		head += " (" + inlineCode(kind, 60) + ")"
	}
	head += ": " + why + " · " + facts
	text := head
	for i, e := range r.Errors {
		if i == maxErrors {
			text += fmt.Sprintf("\n… %s more", thousands(len(r.Errors)-i))
			break
		}
		text += "\n• " + codeSafe(cutShown(oneLine(e), 400))
	}
	if len(r.Errors) == 0 && strings.TrimSpace(r.Text) != "" {
		text += "\nClaude Code said: " + codeSafe(cutShown(oneLine(r.Text), 1000))
	}
	return Message{Text: cut(head, 300), Blocks: []slack.Block{section(text)}}
}

// ResultFailure says, in words a person can act on, why a turn ended in
// an error: the status line's detail and the head of the thread's line.
// It is "" for a turn that did not fail.
func ResultFailure(r store.Result) string {
	if !r.IsError && (r.Subtype == "" || r.Subtype == "success") {
		return ""
	}
	if why, ok := apiFailures[r.APIError]; ok {
		return why
	}
	switch r.Subtype {
	case "error_max_turns":
		return "Claude reached its turn limit; reply in this thread to let it go on"
	case "error_max_budget_usd":
		return "Claude reached its spending limit"
	case "error_during_execution":
		return "the turn stopped while it ran"
	case "", "success":
		if r.APIError != "" {
			return "a call to the model failed; reply in this thread to try again"
		}
		return "Claude Code reported an error"
	}
	return "the turn ended with an error"
}

// apiFailures are the kinds of API failure the CLI names (its synthetic
// assistant line's "error"), each said as what to do. Nobody in Slack can
// run the CLI's /login, so a credential problem is the operator's.
var apiFailures = map[string]string{
	"authentication_failed": "Claude Code is not logged in where the worker runs, or its credential was refused: " +
		"set ANTHROPIC_API_KEY (or another credential `slackgate doctor` accepts) in the worker's environment and restart it",
	"oauth_org_not_allowed":  "Claude Code's login is not allowed in its organization: log the worker's CLI in with another account, or set ANTHROPIC_API_KEY",
	"account_on_hold":        "Claude Code's account is on hold: see to it in the Anthropic Console, or give the worker another credential",
	"verification_required":  "Claude Code's account needs verifying: see to it in the Anthropic Console, or give the worker another credential",
	"billing_error":          "Claude Code's account cannot pay for this: add credit in the Anthropic Console, or give the worker another key",
	"rate_limit":             "the Anthropic API is rate-limiting this account: reply in this thread to try again in a while",
	"overloaded":             "the Anthropic API is overloaded: reply in this thread to try again in a while",
	"model_not_found":        "the model is not available to this credential: check CLAUDE_MODEL, or the model picked for this session",
	"cloud_credential_error": "the cloud provider refused Claude Code's credentials: check the worker's AWS_, GOOGLE_ or AZURE_ settings",
	"max_output_tokens":      "Claude's reply ran past its output limit: reply in this thread to let it go on",
}

func exitMessage(x store.Exit) Message {
	head := fmt.Sprintf("⏹️ Claude exited with code %d", x.Code)
	if x.Reason != "" {
		head += " (" + codeSafe(cutShown(oneLine(x.Reason), 200)) + ")"
	}
	bs := []slack.Block{section(head)}
	if len(x.Stderr) > 0 {
		tail := x.Stderr
		if len(tail) > stderrLines {
			tail = tail[len(tail)-stderrLines:]
		}
		cl := clip(strings.Join(tail, "\n"), stderrLines, codeRunes)
		text := "*stderr (last lines):*\n" + codeBlock(cl.head)
		if cl.hidden != "" {
			text += "\n_… " + cl.hidden + " …_\n" + codeBlock(cl.tail)
		}
		bs = append(bs, section(text))
	}
	return Message{Text: head, Blocks: bs}
}

// Phase is where a session is, as its status line says.
type Phase string

const (
	PhaseQueued  Phase = "queued"  // waiting for a worker
	PhaseWorking Phase = "working" // Claude is working
	PhaseWaiting Phase = "waiting" // requests wait for a person
	PhaseDone    Phase = "done"    // the turn ended; a reply in the thread continues
	PhaseFailed  Phase = "failed"  // the process failed or could not start
	PhaseStopped Phase = "stopped" // a person stopped the turn; a reply in the thread continues
)

// Stop button texts: the confirm dialog keeps a stray tap from aborting
// Claude's work.
const (
	StopLabel        = "Stop"
	stopConfirmTitle = "Stop Claude?"
	stopConfirmText  = "Stop Claude's current turn?"
)

// Status is what the status line shows.
type Status struct {
	Phase   Phase
	Pending int       // requests waiting for a person (PhaseWaiting)
	Detail  string    // plain text: the failure, or what Claude is doing
	Since   time.Time // when the phase began; zero leaves it out
	// Modes are the permission modes the line's menu offers while Claude
	// runs (none: no menu); the line names the current one.
	Modes []string
}

// StatusMessage renders the session's status line, the one message the bot
// keeps editing in the thread.
func StatusMessage(s store.Session, st Status) Message {
	var head string
	switch st.Phase {
	case PhaseQueued:
		head = "🕓 Queued: waiting for a worker"
	case PhaseWorking:
		head = "⏳ Working…"
	case PhaseWaiting:
		head = "✋ Waiting for approval"
		if st.Pending > 0 {
			head = fmt.Sprintf("✋ Waiting for approval (%d)", st.Pending)
		}
	case PhaseDone:
		head = "✅ Done: reply in this thread to continue"
	case PhaseFailed:
		head = "❌ Failed"
	case PhaseStopped:
		head = "⏹️ Stopped: reply in this thread to continue"
	default:
		head = "Status: " + codeSafe(string(st.Phase))
	}
	text := head
	if d := strings.TrimSpace(st.Detail); d != "" {
		text += ": " + codeSafe(cutShown(oneLine(d), 500))
	}
	if !st.Since.IsZero() {
		text += " · since " + dateToken(st.Since)
	}
	ctx := []string{}
	if s.ID != "" {
		ctx = append(ctx, "Session "+inlineCode(short(s.ID), 40))
	}
	if s.WorkDir != "" {
		ctx = append(ctx, "in "+inlineCode(s.WorkDir, 300))
	}
	if s.StartedBy != "" {
		ctx = append(ctx, "started by "+starter(s.StartedBy))
	}
	live := s.ID != "" && (st.Phase == PhaseWorking || st.Phase == PhaseWaiting || st.Phase == PhaseDone)
	if live && len(st.Modes) > 0 {
		ctx = append(ctx, "mode "+inlineCode(currentMode(s), 40))
	}
	bs := []slack.Block{section(text)}
	if len(ctx) > 0 {
		bs = append(bs, slack.NewContextBlock("", mrkdwn(strings.Join(ctx, " · "))))
	}
	var els []slack.BlockElement
	if s.ID != "" && (st.Phase == PhaseWorking || st.Phase == PhaseWaiting) {
		els = append(els, button(string(ActionStop), StopLabel, value(0, 0, s.ID)).WithStyle(slack.StyleDanger).
			WithConfirm(slack.NewConfirmationBlockObject(plain(stopConfirmTitle), plain(stopConfirmText), plain("Stop"), plain("Keep going")).
				WithStyle(slack.StyleDanger)))
	}
	if live && len(st.Modes) > 0 {
		els = append(els, modeMenu(s, st.Modes))
	}
	if len(els) > 0 {
		bs = append(bs, slack.NewActionBlock(blockStatus, els...))
	}
	fallback := head
	if d := strings.TrimSpace(st.Detail); d != "" {
		fallback += ": " + codeSafe(oneLine(d))
	}
	return Message{Text: cut(fallback, 300), Blocks: bs}
}

// Ephemeral is a short note for one person ("already decided", "not
// allowed", a decoder error). text is mrkdwn the caller wrote; escape
// anything taken from input.
func Ephemeral(text string) Message {
	if strings.TrimSpace(text) == "" {
		text = "…"
	}
	text = cut(text, MaxText)
	return Message{Text: text, Blocks: []slack.Block{section(text)}}
}

// AlreadyDecided tells a late clicker who settled r and how.
func AlreadyDecided(r store.Request) Message {
	if r.Decision == nil {
		return Ephemeral("This request is still waiting for a decision.")
	}
	return Ephemeral("This request was already settled: " + firstLine(outcome(r)))
}

// NotAllowed tells someone they may not decide Claude's requests.
func NotAllowed() Message {
	return Ephemeral("Sorry, only approvers can decide Claude's requests here. Ask someone on the approvers list.")
}

// ToolSummary is the one argument that says what a tool call did, on one
// line, secrets masked, for the audit log (plain text, not mrkdwn).
func ToolSummary(tool string, input json.RawMessage) string {
	return cut(oneLine(maskSecrets(toolArg(tool, maskJSON(input)))), toolLine)
}

// ToolRanMessage is the thread line for a tool that an approval API
// client (the hook's PostToolUse report, through token) says ran in a
// Claude session slackgate did not start, in the style of the tool-use
// lines of the sessions slackgate runs: the tool, its argument, and, when
// it failed, the first line of the error. It ends naming the token, since
// slackgate saw none of it: whoever holds a token can report anything.
func ToolRanMessage(tool string, input json.RawMessage, failed bool, errText, token string) Message {
	input = maskJSON(input)
	name := "*" + codeSafe(cutShown(oneLine(tool), 100)) + "*"
	line := "🔧 " + name + " ran"
	if failed {
		line = "⚠️ " + name + " failed"
	}
	if arg := toolArg(tool, input); arg != "" {
		line += ": " + inlineCode(arg, toolLine)
	}
	if t := strings.TrimSpace(maskSecrets(errText)); failed && t != "" {
		line += " · " + codeSafe(cutShown(oneLine(t), 300))
	}
	return contextMessage(line + " · _" + ReportedBy(token) + "_")
}

// APISessionRoot is the message a Claude session seen through approval
// API token opens its thread with. Where it runs and who runs it are its
// client's word, which slackgate cannot check (whoever holds the token can
// claim any host), so the line leads with the token that says so.
func APISessionRoot(token, host, cwd, user string) Message {
	text := "API token " + boldText(token, 64) + " reports a Claude Code session on " +
		boldText(cmp.Or(host, "an unnamed host"), 200) + " in " + inlineCode(cmp.Or(cwd, "?"), 300)
	if user != "" {
		text += " (" + codeSafe(cutShown(oneLine(user), 100)) + ")"
	}
	text += ". slackgate cannot check what a token's client says about itself. Its requests appear in this thread."
	return Message{Text: text, Blocks: []slack.Block{section(text)}}
}

// ReportedBy says that what follows or precedes it is approval API token
// token's claim, which slackgate could not check.
func ReportedBy(token string) string {
	return "as reported by API token " + codeSafe(cutShown(oneLine(token), 64))
}

// starter names who started a session: a mention of a Slack user, or,
// for a session an approval API client opened (Session.StartedBy
// "api:NAME"), the token.
func starter(id string) string {
	if name, ok := strings.CutPrefix(id, "api:"); ok {
		return "API token " + boldText(name, 64)
	}
	return "<@" + id + ">"
}

// boldText renders one line of raw text in bold: escaped, cut to max
// runes, with asterisks replaced so the bold cannot end early.
func boldText(raw string, max int) string {
	return "*" + strings.ReplaceAll(codeSafe(cutShown(oneLine(raw), max)), "*", "∗") + "*"
}
