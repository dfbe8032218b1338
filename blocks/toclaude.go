package blocks

import (
	"strings"
	"time"
)

// What a person's decision tells Claude, in one place: relay only passes a
// decision's message on (and keeps a neutral fallback of its own), so the
// words Claude reads about Slack are all here.

// SkipMessage is the deny message Claude gets when a person skips a question.
// The card tells a skip from a deny by Decision.Skipped, not by this text.
const SkipMessage = "User skipped this question"

// deniedMessage is what Claude reads when a person denies without a reason.
func deniedMessage(by Who) string { return "Denied in Slack by " + orName(by) + "." }

// Why a request was withdrawn through the approval API (DELETE with a
// reason): what its card then says.
const (
	// WithdrawnInTerminal: Claude Code stopped waiting for the hook, as it
	// does when the person answers the prompt in the terminal.
	WithdrawnInTerminal = "Answered in the terminal"
	// WithdrawnUnknown: the caller gave no reason.
	WithdrawnUnknown = "Withdrawn by the caller: answered in the terminal, or the hook stopped waiting."
)

// WithdrawnTimedOut is what the card says when the hook gave up after
// waiting wait (0: unknown): the prompt is back in the terminal.
func WithdrawnTimedOut(wait time.Duration) string {
	if wait <= 0 {
		return "Nobody answered in time; the terminal asks again"
	}
	return "Nobody answered within " + shortDuration(wait) + "; the terminal asks again"
}

// WithdrawnUnanswered is what the card says when a caller that cannot pass
// the prompt back (the MCP prompt tool) gave up after wait (0: unknown):
// Claude was told no.
func WithdrawnUnanswered(wait time.Duration) string {
	if wait <= 0 {
		return "Nobody answered in time, so Claude was told no"
	}
	return "Nobody answered within " + shortDuration(wait) + ", so Claude was told no"
}

// shortDuration writes d as 5m, 90s or 1h30m, without zero units.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
