// Package outbox is the bot's one writer to Slack: paced, in lanes, coalesced, retried.
//
// An Outbox sends every post, edit, upload and response_url of the bot,
// spending Slack's budgets (Budgets) on what people wait for first: each
// write has a Lane, and a lower lane never takes the budget a higher one
// needs. Within a lane, messages of one thread go out in the order given.
// Edits of one message coalesce so only the newest is sent, an edit that
// shows what Slack shows already is not sent, 429s are waited out for as
// long as Retry-After says, transient failures are retried with backoff.
// It never drops a write silently: each caller learns the outcome
// (Pending), and a write nobody waits for (PostLater, EditLater) is logged
// when it fails for good. Callers say what to write (Post, PostOnce, Edit,
// Respond, Upload, Live) and never how: the queued operations are the
// outbox's own.
//
// # Slack's budgets
//
// The budgets are modelled on Slack's documented limits (budget.go):
// chat.postMessage per channel, chat.update per workspace, a 429's
// Retry-After over both (a click's response_url spends neither), and one
// edit per live message every LiveEditInterval
// (SLACK_LIVE_EDIT_INTERVAL). The lanes, highest first: cards and their
// outcomes, then a card's copies and reminders (reach), then what Claude
// said, then status and progress, then the audit channel; a lower lane
// leaves tokens for the ones above. Nothing is dropped: short budgets make
// the lowest lanes wait.
//
// # Live messages
//
// A live message is one message the bot keeps showing the newest state of:
// a session's status line, a turn's folded progress. The first state is
// posted (a turn's progress after ProgressDelay, so a tool use that turns
// out to need a card costs no write); every later one edits it, at most
// once per LiveEditInterval, and only the newest state waiting is sent.
// Both ride in the progress lane.
//
// # Stopping
//
// Run sends until its context ends, then lets the calls in flight finish
// (each bounded by CallTimeout) and fails what is still queued with
// ErrClosed. The bot runs it on a context of its own, ended after
// everything that writes through it has stopped, and with RunUntil: once
// the bot stops, what is queued is still sent, once, but a call that
// failed is not tried again, since it may yet show in Slack, where the
// next bot's reconciler looks for a card.
//
// # Where things live
//
//	outbox.go   Outbox, New, Run; Post, Edit, Respond, Upload; dispatch and retries
//	budget.go   Budgets, lanes and the token bucket
//	live.go     live messages (Live)
//	metrics.go  what the outbox measures (Metrics) and its depth by lane
package outbox
