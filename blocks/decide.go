package blocks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Who is the person who clicked or submitted.
type Who struct {
	ID   string // Slack user id
	Name string // display name, for the audit trail
}

// DecideAction turns a click on r's card into a Decision. cb is the whole
// block_actions payload (Submit reads the menus' state.values from it). When
// next is not NextDecide the Decision is empty: the bot opens the modal
// (next.Modal()) or waits. Errors: ErrMismatch when the click does not fit r,
// ErrChoiceChanged for an "Approve and allow…" pick or scope whose rules
// are no longer the card's, ErrIncomplete (with the unanswered questions)
// on Submit, and store.ErrAlreadyDecided when r is settled.
//
// What a decision carries: a scope of "Approve and allow…" that is
// Claude Code's session rule puts the suggestion, with
// Destination "session", in Decision.Permissions; "Edit & approve" puts the
// edited input (same JSON shape, other fields kept) in UpdatedInput;
// answers map question text to label, several labels joined ", ", free text
// verbatim; Skip denies with SkipMessage and Decision.Skipped set. A menu
// change (NextNothing) decides nothing; Submit does.
func DecideAction(a Action, r store.Request, cb *slack.InteractionCallback, by Who, at time.Time) (store.Decision, Next, error) {
	r = normalize(r)
	if a.RequestID != r.ID {
		return store.Decision{}, NextDecide, fmt.Errorf("%w (action for %q, request %q)", ErrMismatch, a.RequestID, r.ID)
	}
	if r.Decision != nil {
		return store.Decision{}, NextDecide, fmt.Errorf("blocks: request %s: %w", r.ID, store.ErrAlreadyDecided)
	}
	d := store.Decision{By: by.ID, ByName: by.Name, At: at}
	mismatch := func() (store.Decision, Next, error) {
		return store.Decision{}, NextDecide, fmt.Errorf("%w (%s on a %s request)", ErrMismatch, a.Kind, r.Kind)
	}
	if r.Kind == store.KindElicitation {
		return decideElicitAction(a, r, d)
	}
	isQuestion := r.Kind == store.KindQuestion
	switch a.Kind {
	case ActionApprove:
		if isQuestion {
			return mismatch()
		}
		d.Outcome = store.OutcomeAllow
	case ActionDeny:
		if isQuestion {
			return mismatch()
		}
		return store.Decision{}, NextDenyModal, nil
	case ActionEdit:
		if !Editable(r) {
			return mismatch()
		}
		return store.Decision{}, NextEditModal, nil
	case ActionAlways:
		var err error
		if d, err = alwaysAllow(a, r, d); err != nil {
			return store.Decision{}, NextDecide, err
		}
	case ActionAllowRules: // a rule set whose scope AllowModal asks for
		_, err := chosen(a, r)
		return store.Decision{}, NextAllowModal, err
	case ActionAnswer:
		qs := questions(r)
		if !isQuestion || !oneTap(qs) || a.Question != 0 || a.Index >= len(qs[0].Options) {
			return mismatch()
		}
		d.Outcome = store.OutcomeAllow
		d.Answers = map[string]string{qs[0].Question: qs[0].Options[a.Index].Label}
	case ActionPick, ActionRemember:
		if !isQuestion {
			return mismatch()
		}
		return store.Decision{}, NextNothing, nil
	case ActionSubmit:
		if !isQuestion {
			return mismatch()
		}
		answers, err := messageAnswers(r, cb)
		if err != nil {
			return store.Decision{}, NextDecide, err
		}
		d.Outcome = store.OutcomeAllow
		d.Answers = answers
	case ActionOther:
		if !isQuestion {
			return mismatch()
		}
		return store.Decision{}, NextOtherModal, nil
	case ActionSkip:
		if !isQuestion {
			return mismatch()
		}
		d.Outcome = store.OutcomeDeny
		d.Skipped = true
		d.Message = SkipMessage
	default:
		return mismatch()
	}
	return d, NextDecide, nil
}

// alwaysAllow is d as an "Approve and allow…" pick makes it: an allow
// that adds Claude Code's session rule, or, for a grant (GrantChoice),
// one that adds none (slackgate keeps the rules). ErrMismatch for a pick
// the card does not offer, ErrChoiceChanged for one whose suggestion is no
// longer the one the card rendered (see chosen).
func alwaysAllow(a Action, r store.Request, d store.Decision) (store.Decision, error) {
	d.Outcome = store.OutcomeAllow
	if _, err := chosen(a, r); err != nil {
		return d, err
	}
	if _, _, ok := GrantChoice(a, r); ok {
		return d, nil
	}
	s, ok := offeredRule(r, a.Index)
	if !ok || a.Question != choiceCLI {
		return d, fmt.Errorf("%w (choice %d of suggestion %d)", ErrMismatch, a.Question, a.Index)
	}
	d.Permissions = []store.Suggestion{s}
	return d, nil
}

// offeredRule is the suggestion an "Always allow" button at index adds,
// when the card offers that button. Its rule is applied to the session:
// localSettings rules are ignored in an untrusted workspace, the session
// is where a rule always takes effect.
func offeredRule(r store.Request, index int) (store.Suggestion, bool) {
	if !alwaysOffered(r) || index >= len(r.Suggestions) {
		return store.Suggestion{}, false
	}
	s := r.Suggestions[index]
	if label, ok := suggestionLabel(s); !ok || runes(codeSafe(label)) > maxRuleText {
		return store.Suggestion{}, false // the card offers no button for it
	}
	return s.ForSession(), true
}

// messageAnswers reads every question's menu from the message's
// state.values.
func messageAnswers(r store.Request, cb *slack.InteractionCallback) (map[string]string, error) {
	var values map[string]map[string]slack.BlockAction
	if cb != nil && cb.BlockActionState != nil {
		values = cb.BlockActionState.Values
	}
	answers := map[string]string{}
	var missing []string
	for i, q := range questions(r) {
		a, ok := values[questionBlockID(i, r.ID)][string(ActionPick)]
		labels := selected(q, a)
		if !ok || len(labels) == 0 {
			missing = append(missing, q.Question)
			continue
		}
		answers[q.Question] = strings.Join(labels, ", ")
	}
	if len(missing) > 0 {
		return nil, incomplete(missing)
	}
	return answers, nil
}

// selected maps a menu's selection (option values are indexes) back to the
// options' labels, in the order the question lists them.
func selected(q question, a slack.BlockAction) []string {
	picked := map[int]bool{}
	add := func(v string) {
		if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(q.Options) {
			picked[i] = true
		}
	}
	add(a.SelectedOption.Value)
	for _, o := range a.SelectedOptions {
		add(o.Value)
	}
	var labels []string
	for i, o := range q.Options {
		if picked[i] {
			labels = append(labels, o.Label)
		}
	}
	return labels
}
