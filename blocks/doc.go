// Package blocks renders slackgate's requests and session events as Slack Block Kit, decodes people's clicks and modal submissions back into store decisions, and validates every message and view against Slack's limits; it is pure: no I/O, no logging, no clock.
//
// It owns how slackgate looks and what a click means: every card, modal,
// thread message and status line, every action_id, and the check of
// Slack's limits that both the renderers' golden tests and bot/fakeslack
// apply. It does not post, read or decide anything: bot calls Slack and
// store.Decide with what blocks returns.
//
// # Validator (the law for fakeslack and for every renderer here)
//
//	ValidateMessage(text string, bs []slack.Block) error
//	ValidateView(v slack.ModalViewRequest) error
//
// Both marshal what they are given, the way Slack would receive it, and
// return a *ValidationError listing every problem as "path: problem", e.g.
// "blocks[3].elements[1].text: 81 > 75 chars". Lengths count runes. The
// limits are the Max* constants. Beyond Slack, an empty top-level text is an
// error (notifications show only the text). chat.update rejects text over
// MaxUpdateText (4,000); ValidateMessage allows up to MaxMessageText
// (40,000) because chat.postMessage does; every renderer here stays under
// 4,000.
//
// # Cards
//
//	Card(r store.Request, s store.Session) Message
//	CardWith(r, s, CardOptions{AttachmentFailed: true}) Message
//
// renders a pending request (buttons) or, when r.Decision is set, its final
// state. Laid out for a phone: the first line (also Message.Text, which
// mentions s.StartedBy) says what Claude wants (for a compound command its
// weightiest step; a leading `cd <s.WorkDir>` is implied), the project
// (s.WorkDir's base name) and for whom; the input once; one context line;
// then Approve and Deny side by side (and Edit & approve), and one menu,
// "Approve and allow for this session…", whose options name each
// suggestion's rules and what they do. A settled card leads with the
// outcome, who and when (a <!date^…> token) and what ran: the applied
// input, Decision.UpdatedInput when edited (then Message.FullInput holds it
// when the lead shows only part). The outcome cases live in outcomeWith,
// one per store.Outcome. `make cards` regenerates the golden cards and
// measures them on a 375 px phone.
//
// An MCP elicitation (store.KindElicitation, elicit.go) shows the server's
// message and "Fill in…" (ElicitModal: one input per field of the requested
// schema, its submission typed by the schema into Decision.Content, a bad
// value a field error), or for a URL its real host on an "Open …" link
// button and "Done"; then "Decline" and "Cancel" (a deny, Skipped).
//
// What you see is what runs: every input field is on the card (fields a
// tool's card does not render itself are listed as "key: value" under
// "Other input"; MCP arguments are "key: value" lines); Bash's
// dangerouslyDisableSandbox and run_in_background are flagged under the
// headline. A long input shows a preview within what Slack shows before
// "Show more": its head and its tail with "… 812 lines hidden … (full
// input in the thread)" between; Message.FullInput holds it (to upload as
// Message.FullInputName), and Approve, Approve plan and the Approve-and-
// allow menu ask for confirmation saying what is hidden. When the upload
// failed the bot re-renders with CardOptions.AttachmentFailed and the card
// and the confirmations say so. A rule set too long for its menu option
// is listed in the menu's confirmation (or on the card). Only Claude
// Code's AskUserQuestion, or an MCP mcp__<server>__AskUserQuestion whose
// input is exactly the question schema (store.IsQuestionForm), becomes a
// form; anything else is a tool card. Three or more questions are answered
// in the answer modal (ModalFor starts it from the card's picks).
//
// # Clicks
//
// Every action_id, block_id and callback_id starts with Prefix ("sg_").
// Button values, and the Approve-and-allow menu's option values, are
// "<question>|<option>|<request id>" (cards posted before the menu had one
// sg_always.<n> button per suggestion; they decode alike).
//
//	a, ok := ParseAction(blockAction)            // ok=false: not ours, ignore
//	d, next, err := DecideAction(a, r, cb, Who{ID, Name}, now)
//	switch next {
//	case NextDecide:  store.Decide(ctx, r.ID, d)    // err: ErrMismatch, ErrIncomplete, store.ErrAlreadyDecided
//	case NextNothing: // a menu changed; wait for Submit
//	default:          view, _ := ModalFor(next.Modal(), r, r.Card, cb); views.open(trigger_id, view)
//	}
//
// The status message's Stop button (shown while the phase is working or
// waiting, with a confirm dialog) parses to ActionStop with Action.SessionID
// set and no request: the bot enqueues a store.ControlInterrupt input for
// that session instead of calling DecideAction.
//
// Explain(err) gives the sentence to show the person ephemerally.
// AlreadyDecided(r) and NotAllowed() are ready-made ephemeral messages.
//
// # Modals
//
//	DenyModal(r, card)  // tool: optional reason + "Stop Claude's turn"; plan: required feedback ("Keep planning")
//	EditModal(r, card)  // Bash command; Write path+content; Edit path+old+new (only when Editable(r))
//	OtherModal(r, card) // per question: a menu and a free-text field (the text wins)
//
//	v, err := ParseViewSubmission(cb)            // ErrNotOurs for other views
//	d, errs, err := DecideView(v, r, cb, who, now)
//	// errs != nil: ack with slack.NewErrorsViewSubmissionResponse(errs), nothing decided
//	// else store.Decide(ctx, v.RequestID, d), then update the card at v.Card
//
// Decisions: "Always allow …" carries the suggestion with Destination
// "session" in Decision.Permissions; "Edit & approve" puts the edited input
// (same JSON shape, other fields kept) in Decision.UpdatedInput; answers map
// question text → label, several labels joined ", ", free text verbatim;
// "Skip" denies with SkipMessage and Decision.Skipped set, which is what the
// card shows it by.
//
// # Remembered answers
//
// A question card (when Rememberable) has one more menu, "Always answer
// this way…" (ActionRemember: this repository, this channel, only this
// time); choosing decides nothing. RememberChoice(r, cb) reads the choice
// from the click that answers, and the answer modal carries it
// (ViewAction.Remember). AnsweredFromMemory(a) is the one thread line that
// replaces the card of a question the bot answered from memory;
// Remembered(a) the approver's private note; HomeView(answers, opts) the
// App Home tab (checked with ValidateHomeView: 100 blocks), with a Forget
// button (ActionForget, Action.AnswerID) for approvers only; HomeClosed(why)
// the tab of someone who may not see it.
//
// # Audit channel
//
//	AuditMessage(lines []AuditLine) Message   // up to AuditLinesPerMessage lines, block_id AuditLineMarker(entry)
//	AuditShown(action) bool; Permalink(teamURL, ref, thread) (string, bool)
//
// One line per settled request and per refused record (audit.go): outcome,
// what it was about, who decided (named, never mentioned, and only when
// the bot verified their signed decision; otherwise whom the record
// claims), how long it waited, a link to its card and the entry's seq.
//
// # Thread
//
//	EventMessages(e store.Event) []Message        // assistant text (Markdown → mrkdwn, split), tool-use line, failed tool result, result, exit, error, "Stopped by <@U…>"
//	StatusMessage(s store.Session, st Status) Message // the status line the bot edits in place
//	Markdown(s string) string; Escape(s string) string; Ephemeral(text string) Message
//
// All text taken from tool inputs or Claude goes through Escape (mrkdwn)
// or plainInput (plain_text): & < > become entities so it cannot ping or
// fake links; invisible and bidirectional characters (every Unicode
// default-ignorable code point, variation selectors and tags included, but
// a lone VS16 after an emoji symbol: ⚠️) become visible escapes
// (⟦U+202E⟧) and the card warns about them; secrets of well-known
// shapes (cloud keys, GitHub/Slack/Anthropic/OpenAI tokens, private key
// blocks, Authorization headers, URL passwords, *_TOKEN=/*_SECRET=/*_KEY=
// assignments) are masked, for display only: decisions are built from the
// stored input, and "Edit & approve" is not offered for a field the modal
// could not show as it is. Runs of backticks are broken with zero-width
// spaces so input cannot open or close code formatting. Markdown links
// show their target: [label](url) becomes "label (<url>)", never a link
// whose label could name another host.
package blocks
