package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// MaxDeliveries bounds how often Consume hands out one event whose handler
// keeps failing, so one poisoned event cannot stall a consumer forever.
const MaxDeliveries = 5

// DefaultRedeliveryDelay is the base of RedeliveryDelay that both backends
// use unless configured otherwise.
const DefaultRedeliveryDelay = time.Second

// RedeliveryDelay is how long Consume waits, after the handler returned an
// error for an event's n-th delivery, before delivering it again: base after
// the first failure, doubling with each one after it (base, 2·base, 4·base,
// ...), at most 32·base. A failing handler usually waits on something
// outside (Slack down or rate limiting), which a quick retry only loads more.
func RedeliveryDelay(base time.Duration, n int) time.Duration {
	return base << min(max(n-1, 0), 5)
}

// EventType names what happened in a session.
type EventType string

const (
	EventRequestCreated EventType = "request_created" // published by CreateRequest
	EventRequestSettled EventType = "request_settled" // published by Decide
	EventSessionStarted EventType = "session_started" // a claude process started
	EventAssistantText  EventType = "assistant_text"  // model text
	EventToolUse        EventType = "tool_use"        // the model called a tool
	EventToolResult     EventType = "tool_result"     // a tool returned (short)
	EventResult         EventType = "result"          // a turn ended
	EventExit           EventType = "exit"            // the claude process exited
	EventError          EventType = "error"           // the worker could not do something (start failed, ...)
	EventInterrupted    EventType = "interrupted"     // a person stopped the running turn; Text is their Slack user id
	// EventModeChanged: the running claude process switched permission
	// mode (Text) on a person's request (By), or went back to the
	// session's own mode when it ended (By empty).
	EventModeChanged EventType = "mode_changed"
	// EventRefused: the worker refused to run the session or to deliver
	// one of its inputs, because the record did not verify or names what
	// the worker may not run, or could not act on a control input (a mode
	// switch with no process running, or one the CLI refused); Text says
	// what and why, in the worker's words, never the record's.
	EventRefused EventType = "refused"
)

// Valid reports whether t is one of the known event types.
func (t EventType) Valid() bool {
	switch t {
	case EventRequestCreated, EventRequestSettled, EventSessionStarted, EventAssistantText, EventToolUse,
		EventToolResult, EventResult, EventExit, EventError, EventInterrupted, EventRefused, EventModeChanged:
		return true
	}
	return false
}

// Event is one thing the Slack side should show or act on. Each event type
// fills the fields that apply to it.
type Event struct {
	ID        string    `json:"id,omitempty"` // set by the store
	Type      EventType `json:"type"`
	SessionID string    `json:"session_id"`
	RequestID string    `json:"request_id,omitempty"` // request_* events
	At        time.Time `json:"at"`

	Text    string          `json:"text,omitempty"`     // assistant text, tool result excerpt, error text
	By      string          `json:"by,omitempty"`       // mode_changed: who asked
	Tool    string          `json:"tool,omitempty"`     // tool_use, tool_result
	Input   json.RawMessage `json:"input,omitempty"`    // tool_use input
	IsError bool            `json:"is_error,omitempty"` // tool_result, result

	Result *Result `json:"result,omitempty"` // result
	Exit   *Exit   `json:"exit,omitempty"`   // exit
}

// Validate checks e as Publish takes it: a known type, a session, and an
// Exit, when present, that is valid. A zero At is allowed: the store fills it
// in (see Bus.Publish).
func (e Event) Validate() error {
	switch {
	case !e.Type.Valid():
		return invalid("event of unknown type %q", e.Type)
	case e.SessionID == "":
		return invalid("%s event without a session", e.Type)
	}
	if e.Exit != nil {
		if err := e.Exit.Validate(); err != nil {
			return fmt.Errorf("%s event of session %s: %w", e.Type, e.SessionID, err)
		}
	}
	return nil
}

// Result summarises one turn (a stream-json "result" line).
type Result struct {
	Subtype    string   `json:"subtype"` // success, error_during_execution, error_max_turns, ...
	IsError    bool     `json:"is_error"`
	Turns      int      `json:"num_turns"`
	DurationMS int64    `json:"duration_ms"`
	CostUSD    float64  `json:"total_cost_usd"`
	Text       string   `json:"result,omitempty"`
	Errors     []string `json:"errors,omitempty"`
	// APIError is the kind of API failure that ended the turn, as the CLI
	// names it on its synthetic assistant line (authentication_failed,
	// billing_error, rate_limit, …); a failed call's result says only
	// "success" with is_error.
	APIError string `json:"api_error,omitempty"`
}

// Exit describes how a claude process ended.
type Exit struct {
	Code int `json:"code"`
	// Cause is why it ended, for code to act on; Reason says it in words,
	// for people ("signal: killed", "exit status 1", "idle", ...).
	Cause  ExitCause `json:"cause,omitempty"`
	Reason string    `json:"reason,omitempty"`
	Stderr []string  `json:"stderr,omitempty"` // the last lines of stderr
}

// Failed reports whether the Slack side should show the exit as a failure:
// the process crashed. An end slackgate asked for (idle, evicted, stopped,
// shutdown) is not one, whatever the code its signal left. An Exit without a
// Cause (written before causes existed) counts as failed when its code is
// not 0.
func (e Exit) Failed() bool {
	if e.Cause == "" {
		return e.Code != 0
	}
	return e.Cause == ExitCrashed
}

// Validate checks that a Cause, when set, is a known one.
func (e Exit) Validate() error {
	if e.Cause != "" && !e.Cause.Valid() {
		return invalid("exit with unknown cause %q", e.Cause)
	}
	return nil
}

// ExitCause says why a claude process ended.
type ExitCause string

const (
	// ExitFinished: the process exited on its own without failing: its
	// stdin was closed and it finished, or it reported a turn that ended in
	// an error result with its exit code (1), which the result already
	// told.
	ExitFinished ExitCause = "finished"
	// ExitIdle: the worker stopped it after it sat idle for the idle
	// timeout; the session's next input resumes it.
	ExitIdle ExitCause = "idle"
	// ExitEvicted: the worker stopped it, idle, to make room for another
	// session; the session's next input resumes it.
	ExitEvicted ExitCause = "evicted"
	// ExitStopped: stopped on request (a person or an operator asked).
	ExitStopped ExitCause = "stopped"
	// ExitShutdown: the worker is shutting down; the session resumes on a
	// worker later.
	ExitShutdown ExitCause = "shutdown"
	// ExitCrashed: it died on its own with a failure (a non-zero code or a
	// signal slackgate did not send): the one cause shown as a failure.
	ExitCrashed ExitCause = "crashed"
)

// Valid reports whether c is one of the known causes.
func (c ExitCause) Valid() bool {
	switch c {
	case ExitFinished, ExitIdle, ExitEvicted, ExitStopped, ExitShutdown, ExitCrashed:
		return true
	}
	return false
}

// Bus carries events to the Slack side.
type Bus interface {
	// Publish appends an event to the event log and returns its id.
	// ErrInvalid if e fails Validate; a zero At becomes the time of the call.
	Publish(ctx context.Context, e Event) (string, error)
	// Consume delivers every event of the log to exactly one consumer of the
	// group, calling fn for each: a session's events in log order per
	// consumer, one after another, while a backend may call fn for events of
	// different sessions at once (fn must be safe for that). A group that does
	// not exist yet is created at the oldest event still in the log, so
	// events published before any consumer ran (a worker that started first)
	// are not lost; an existing group resumes where it left off. The log is
	// capped, so an event may be dropped before a group that lags far
	// behind, or does not exist yet, reaches it. An event is acknowledged
	// when fn returns nil; when fn returns an error the event is delivered
	// again, up to MaxDeliveries times in all, each time no sooner than
	// RedeliveryDelay(base, n) after fn returned the error for its n-th
	// delivery (base is the backend's option, DefaultRedeliveryDelay unless
	// set); a failed event does not hold back the events after it. Events left
	// unacknowledged by a consumer that died are delivered to another one.
	// It blocks until ctx is cancelled and then returns nil.
	Consume(ctx context.Context, group, consumer string, fn func(context.Context, Event) error) error
}
