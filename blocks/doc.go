// Package blocks is how slackgate looks in Slack and what a click there means; it is pure.
//
// It renders requests and session events as Block Kit (cards, modals,
// thread lines, the status line, the App Home), decodes clicks and modal
// submissions into store decisions, and validates every message and view
// against Slack's limits. It does no I/O, never logs and reads no clock:
// bot posts what it returns and calls store.Decide with what it decodes.
//
// The rules it keeps:
//
//   - Everything fits Slack. ValidateMessage and ValidateView are the law
//     for every renderer here (golden tests and fuzzing) and for
//     bot/fakeslack; the limits are the Max* constants.
//   - What a person sees is what runs. Every field of the input is on the
//     card; flags that loosen a command and writes to files that run later
//     are called out; a long input shows its head and tail, says how much
//     is hidden, and Approve asks first (Card).
//   - Text from a tool input, a model or a server cannot act. It reaches
//     mrkdwn only through Escape (plain_text through plainInput): no ping,
//     no link whose label names another host, no code span it can close,
//     invisible characters shown as escapes, secrets of known shapes
//     masked for display only. Decisions are built from the stored input,
//     never from what was shown.
//   - Cards are laid out for a phone: the first line, which is also the
//     notification, says what, where and for whom, and for several
//     approvers what is left, in one phrase on every surface (progress);
//     Approve and Deny come first, notes of reminders under them; a
//     settled card leads with its outcome. Copies, reminders and App Home
//     rows notify with what a lock screen needs (notifyText). `make
//     cards` measures every golden family a person reads on a phone on a
//     375 px screen when cardview is installed: Approve and Deny end above
//     553 px, an outcome starts in the top 150.
//   - Every action_id, block_id and callback_id starts with Prefix, and a
//     click decodes to one Decision or one modal (DecideAction,
//     DecideView); only an exact question schema becomes a question form
//     (store.IsQuestionForm), anything else is a tool card.
//
// card.go, lead.go and body.go render cards; approvals.go the progress of
// several approvals and an edit's diff; reach.go copies, reminders,
// escalation lines and the App Home's waiting list; grants.go "Approve
// and allow…"'s second step; elicit.go MCP elicitations;
// remember.go remembered answers and the App Home; policy.go the lines of
// requests a policy rule settled; audit.go the audit channel's lines; modal.go, controls.go
// and input.go modals and buttons; events.go thread lines and the status
// line; actions.go and decide.go clicks and submissions; toclaude.go the
// words Claude reads about a decision; text.go, safe.go and sensitive.go
// escaping, masking and sensitive files; validate.go Slack's limits.
package blocks
