package blocks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// Prefix starts every action_id, block_id and callback_id slackgate emits, so
// a transport can route "sg_*" to the bot and ignore everything else.
const Prefix = "sg_"

// ActionKind says what a button or menu on a card does.
type ActionKind string

// Action IDs. Buttons that repeat within one actions block (one per
// suggestion, one per option) carry a ".<n>" suffix because Slack wants
// action_ids unique within a block; ParseAction strips it. Values always
// carry "<question>|<option>|<request id>".
const (
	ActionApprove ActionKind = Prefix + "approve" // allow as is (tool, plan)
	ActionDeny    ActionKind = Prefix + "deny"    // open the deny modal (tool) or the feedback modal (plan)
	ActionEdit    ActionKind = Prefix + "edit"    // open the edit modal (Bash, Write, Edit)
	ActionAlways  ActionKind = Prefix + "always"  // allow and keep suggestion Index in scope Question (AllowModal's buttons; older cards' menu and buttons)
	ActionAnswer  ActionKind = Prefix + "answer"  // the one question's option Index: answers at once
	ActionPick    ActionKind = Prefix + "pick"    // a menu or checkbox of question Question changed: nothing to decide yet
	ActionSubmit  ActionKind = Prefix + "submit"  // send the answers picked in the message
	ActionOther   ActionKind = Prefix + "other"   // open the free-text modal
	ActionSkip    ActionKind = Prefix + "skip"    // deny: the person skipped the question
	// ActionStop is the status message's Stop button: interrupt the
	// session's running turn. It names a session, not a request
	// (Action.SessionID); DecideAction does not take it.
	ActionStop ActionKind = Prefix + "stop"
	// ActionMode is the status message's permission mode menu: it names
	// a session (Action.SessionID) and the mode's index in store.Modes
	// (Action.Index; see ModeOf).
	ActionMode ActionKind = Prefix + "mode"
	// ActionForgetGrant is the App Home's Forget of a grant
	// (Action.StandingID).
	ActionForgetGrant ActionKind = Prefix + "forget_grant"
	// ActionAllowRules is the card's "Approve and allow…" menu: a pick
	// names a rule set (Index, Digest) and opens AllowModal, where a
	// scope is chosen.
	ActionAllowRules ActionKind = Prefix + "allow"
	// Elicitation cards (an MCP server asks for input): open the form,
	// say the link was visited, decline, or cancel (dismiss it without a
	// choice). ActionLink is the link button: Slack opens the URL, and
	// reports the click, which decides nothing.
	ActionElicitFill    ActionKind = Prefix + "elicit_fill"
	ActionElicitDone    ActionKind = Prefix + "elicit_done"
	ActionElicitDecline ActionKind = Prefix + "elicit_decline"
	ActionElicitCancel  ActionKind = Prefix + "elicit_cancel"
	ActionLink          ActionKind = Prefix + "link"
)

var actionKinds = map[ActionKind]bool{
	ActionApprove: true, ActionDeny: true, ActionEdit: true, ActionAlways: true, ActionAnswer: true,
	ActionPick: true, ActionSubmit: true, ActionOther: true, ActionSkip: true, ActionStop: true, ActionMode: true, ActionForgetGrant: true,
	ActionAllowRules: true,
	ActionRemember:   true, ActionForget: true,
	ActionElicitFill: true, ActionElicitDone: true, ActionElicitDecline: true, ActionElicitCancel: true, ActionLink: true,
}

// Action is a decoded click on one of slackgate's cards.
type Action struct {
	Kind      ActionKind
	RequestID string // every kind but ActionStop
	SessionID string // ActionStop
	// Forget and StandingID (ActionForget, ActionForgetGrant) name the
	// standing rule the App Home's Forget button removes.
	Forget     store.StandingKind
	StandingID string
	// Question is the question's index (question cards); Index is the
	// suggestion's index (ActionAlways) or the option's (ActionAnswer).
	Question int
	Index    int
	// Digest (ActionAlways) names the suggestion the card rendered for
	// the choice (store.SuggestionDigest); "" on cards posted before
	// choices carried one.
	Digest string
}

// ParseAction decodes a block action from a card. It returns false when the
// action is not slackgate's (another app's button, a malformed value).
func ParseAction(a *slack.BlockAction) (Action, bool) {
	if a == nil || !strings.HasPrefix(a.ActionID, Prefix) {
		return Action{}, false
	}
	kind := ActionKind(a.ActionID)
	if i := strings.IndexByte(a.ActionID, '.'); i >= 0 {
		kind = ActionKind(a.ActionID[:i])
	}
	if !actionKinds[kind] {
		return Action{}, false
	}
	val := a.Value
	if (kind == ActionAlways && val == "") || kind == ActionRemember || kind == ActionMode || kind == ActionAllowRules {
		// A menu carries the chosen option in its value (the remember
		// menu always; "Approve and allow" its suggestion). For the latter,
		// cards posted before it had one button per suggestion, whose value
		// is the same "<0>|<index>|<request id>".
		val = a.SelectedOption.Value
	}
	if kind == ActionPick { // menus have no value of their own; the block id carries it
		val = strings.TrimPrefix(a.BlockID, blockQuestion)
	}
	var digest string
	if kind == ActionAlways || kind == ActionAllowRules {
		val, digest = cutDigest(val)
	}
	q, o, id, ok := parseValue(val)
	if !ok {
		return Action{}, false
	}
	switch kind {
	case ActionStop:
		return Action{Kind: kind, SessionID: id}, true
	case ActionMode:
		return Action{Kind: kind, SessionID: id, Index: o}, true
	case ActionForget:
		return Action{Kind: kind, Forget: store.StandingAnswer, StandingID: id}, true
	case ActionForgetGrant:
		return Action{Kind: kind, Forget: store.StandingGrant, StandingID: id}, true
	}
	return Action{Kind: kind, RequestID: id, Question: q, Index: o, Digest: digest}, true
}

// choiceValue encodes an "Approve and allow…" option: value's fields with
// the digest of the suggestion it grants after the index
// ("<choice>|<index>:<digest>|<request id>").
func choiceValue(choice, index int, digest, requestID string) string {
	return strconv.Itoa(choice) + "|" + strconv.Itoa(index) + ":" + digest + "|" + requestID
}

// cutDigest takes the digest out of a choiceValue, leaving a value.
func cutDigest(v string) (rest, digest string) {
	q, after, ok := strings.Cut(v, "|")
	if !ok {
		return v, ""
	}
	o, after, ok := strings.Cut(after, "|")
	if !ok {
		return v, ""
	}
	o, digest, _ = strings.Cut(o, ":")
	return q + "|" + o + "|" + after, digest
}

// value encodes what a button refers to. The request id goes last so it may
// contain any character.
func value(q, o int, requestID string) string {
	return strconv.Itoa(q) + "|" + strconv.Itoa(o) + "|" + requestID
}

func parseValue(v string) (q, o int, id string, ok bool) {
	parts := strings.SplitN(v, "|", 3)
	if len(parts) != 3 || parts[2] == "" {
		return 0, 0, "", false
	}
	q, err1 := strconv.Atoi(parts[0])
	o, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || q < 0 || o < 0 {
		return 0, 0, "", false
	}
	return q, o, parts[2], true
}

func actionID(k ActionKind, n int) string { return string(k) + "." + strconv.Itoa(n) }

// Block ids on cards. Question blocks carry "<question>|0|<request id>" after
// the prefix so a menu change can be traced back to its request.
const (
	blockQuestion = Prefix + "q:"
	blockActions  = Prefix + "actions"
	blockAlways   = Prefix + "always" // the "Approve and allow…" menu
	blockOutcome  = Prefix + "outcome"
	// blockApprovals: the progress of a request several people approve.
	blockApprovals = Prefix + "approvals"
	blockStatus    = Prefix + "status_actions" // the status message's Stop button
)

func questionBlockID(q int, requestID string) string { return blockQuestion + value(q, 0, requestID) }

// ModalKind names a modal; it is the view's callback_id.
type ModalKind string

const (
	ModalNone  ModalKind = ""
	ModalDeny  ModalKind = Prefix + "deny_modal"  // optional reason (tool) or feedback (plan)
	ModalEdit  ModalKind = Prefix + "edit_modal"  // the tool input, editable
	ModalOther ModalKind = Prefix + "other_modal" // free-text answers, one per question
	// ModalElicit is an elicitation's form, one input per schema field.
	ModalElicit ModalKind = Prefix + "elicit_modal"
	// ModalAllow is "Approve and allow…"'s second step (AllowModal): a
	// button per scope, no submit.
	ModalAllow ModalKind = Prefix + "allow_modal"
)

// Next says what the bot does after DecideAction.
type Next int

const (
	// NextDecide: the Decision is complete; call store.Decide.
	NextDecide Next = iota
	// NextNothing: a menu or checkbox changed; wait for Submit.
	NextNothing
	// NextDenyModal, NextEditModal, NextOtherModal: open that modal
	// (Modal(next.Modal(), r, card)) with the click's trigger_id.
	NextDenyModal
	NextEditModal
	NextOtherModal
	NextElicitModal
	// NextAllowModal: open AllowModal for the rule set picked.
	NextAllowModal
)

// Modal names the modal to open, ModalNone for NextDecide and NextNothing.
func (n Next) Modal() ModalKind {
	switch n {
	case NextDenyModal:
		return ModalDeny
	case NextEditModal:
		return ModalEdit
	case NextOtherModal:
		return ModalOther
	case NextElicitModal:
		return ModalElicit
	case NextAllowModal:
		return ModalAllow
	}
	return ModalNone
}

// Errors from the decoders. Their text is written for the person who
// clicked (after the "blocks: " prefix is removed with Explain).
var (
	// ErrNotOurs: the interaction is not one of slackgate's.
	ErrNotOurs = errors.New("blocks: not a slackgate interaction")
	// ErrMismatch: the click does not fit the request (another request's
	// button, an option that does not exist, a button the kind has not).
	ErrMismatch = errors.New("blocks: this button does not belong to that request")
	// ErrIncomplete: Submit before every question had an answer.
	ErrIncomplete = errors.New("blocks: some questions have no answer yet")
	// ErrChoiceChanged: an "Approve and allow…" choice whose rules are
	// not the ones the card rendered (the request changed in the store
	// since, or the card predates choices that name their rules).
	ErrChoiceChanged = errors.New("blocks: the rules of this choice are not the ones the card showed")
)

// Explain turns a decoder error into a sentence for the person who clicked.
func Explain(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrIncomplete):
		return strings.TrimPrefix(err.Error(), "blocks: ")
	case errors.Is(err, ErrChoiceChanged):
		return "The rules this choice would allow are not the ones this card showed, so nothing was approved or allowed. " +
			"Approve or deny this request once; the card stays as it is."
	case errors.Is(err, ErrMismatch):
		return "This button no longer matches the request. Please use the latest card."
	case errors.Is(err, ErrNotOurs):
		return "slackgate does not know this button."
	}
	return "Something went wrong reading your answer: " + strings.TrimPrefix(err.Error(), "blocks: ")
}

func incomplete(questions []string) error {
	quoted := make([]string, len(questions))
	for i, q := range questions {
		quoted[i] = "“" + cut(q, 80) + "”"
	}
	return fmt.Errorf("%w: please answer %s", ErrIncomplete, strings.Join(quoted, ", "))
}
