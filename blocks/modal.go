package blocks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slackgate/slackgate/store"
)

// Modal block and action ids. The views carry no request data in their ids;
// the request and the card live in private_metadata.
const (
	blockReason    = Prefix + "reason"
	blockInterrupt = Prefix + "interrupt"
	blockField     = Prefix + "f:"    // + input field name (edit modal)
	blockPickQ     = Prefix + "pick:" // + question index (other modal)
	blockTextQ     = Prefix + "text:" // + question index (other modal)
	blockElicit    = Prefix + "e:"    // + field index (elicitation form)
	actionValue    = Prefix + "v"     // the one element of a modal input block
	interruptValue = "interrupt"
	maxReason      = 2000
)

// metadata is what a modal remembers in private_metadata.
type metadata struct {
	Request string `json:"r"`
	Channel string `json:"c,omitempty"`
	TS      string `json:"t,omitempty"`
	// Remember is the scope chosen on the card's "Always answer this
	// way…" menu when the answer modal was opened (question modals only).
	Remember store.ScopeKind `json:"m,omitempty"`
	// ResponseURL is the response_url of the click that opened the
	// modal: the submission's outcome replaces the card through it.
	ResponseURL string `json:"u,omitempty"`
}

func modal(kind ModalKind, r store.Request, card store.MessageRef, title, submit string, bs ...slack.Block) slack.ModalViewRequest {
	meta, _ := json.Marshal(metadata{Request: r.ID, Channel: card.Channel, TS: card.TS})
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		Title:           plain(title),
		Submit:          plain(submit),
		Close:           plain("Cancel"),
		Blocks:          slack.Blocks{BlockSet: bs},
		PrivateMetadata: string(meta),
		CallbackID:      string(kind),
	}
}

// Modal builds the modal of the given kind (what Next.Modal() names).
func Modal(kind ModalKind, r store.Request, card store.MessageRef) (slack.ModalViewRequest, bool) {
	return ModalFor(kind, r, card, nil)
}

// ModalFor is Modal for the click cb that asks for it: the answer modal
// starts from the options already picked on the card.
func ModalFor(kind ModalKind, r store.Request, card store.MessageRef, cb *slack.InteractionCallback) (slack.ModalViewRequest, bool) {
	switch kind {
	case ModalDeny:
		return DenyModal(r, card), true
	case ModalEdit:
		return EditModal(r, card), true
	case ModalOther:
		m := otherModal(r, card, cardPicks(r, cb))
		if scope := RememberChoice(r, cb); scope != "" {
			m = rememberedInModal(m, r, card, scope)
		}
		return m, true
	case ModalElicit:
		return ElicitModal(r, card), r.Kind == store.KindElicitation
	}
	return slack.ModalViewRequest{}, false
}

// cardPicks reads, per question, the option indexes picked on the card.
func cardPicks(r store.Request, cb *slack.InteractionCallback) map[int][]int {
	if cb == nil || cb.BlockActionState == nil {
		return nil
	}
	picks := map[int][]int{}
	for i, q := range questions(r) {
		a, ok := cb.BlockActionState.Values[questionBlockID(i, r.ID)][string(ActionPick)]
		if !ok {
			continue
		}
		for j, o := range q.Options {
			for _, l := range selected(q, a) {
				if l == o.Label {
					picks[i] = append(picks[i], j)
					break
				}
			}
		}
	}
	return picks
}

func textInput(multiline bool, initial string, max int) *slack.PlainTextInputBlockElement {
	el := slack.NewPlainTextInputBlockElement(nil, actionValue)
	el.Multiline = multiline
	el.MaxLength = max
	el.InitialValue = initial
	return el
}

// DenyModal asks why (optional) before denying a tool call, or for the
// feedback that sends a plan back ("Keep planning", required).
func DenyModal(r store.Request, card store.MessageRef) slack.ModalViewRequest {
	r = normalize(r)
	head := section(cut(headline(r), MaxText))
	if r.Kind == store.KindPlan {
		in := slack.NewInputBlock(blockReason, plain("What should Claude change?"),
			plain("Claude keeps planning with your feedback."), textInput(true, "", maxReason))
		return modal(ModalDeny, r, card, "Keep planning", "Send feedback", head, in)
	}
	reason := slack.NewInputBlock(blockReason, plain("Reason (Claude reads it)"),
		plain("Say what to do instead; Claude may try another way."), textInput(true, "", maxReason)).WithOptional(true)
	stop := slack.NewCheckboxGroupsBlockElement(actionValue,
		slack.NewOptionBlockObject(interruptValue, plain("Stop Claude's turn"), plain("Claude stops and waits for your next message")))
	interrupt := slack.NewInputBlock(blockInterrupt, plain("Stop"), nil, stop).WithOptional(true)
	return modal(ModalDeny, r, card, "Deny request", "Deny", head, reason, interrupt)
}

var fieldLabels = map[string]string{
	"command":    "Command",
	"file_path":  "File path",
	"content":    "Content",
	"old_string": "Replace this",
	"new_string": "With this",
}

// EditModal offers the tool input for editing (Bash: command; Write: path and
// content; Edit: path, old and new text). Only for Editable requests; for
// others it shows the input read-only with a note.
func EditModal(r store.Request, card store.MessageRef) slack.ModalViewRequest {
	bs := []slack.Block{section(cut(headline(r), MaxText))}
	if !Editable(r) {
		bs = append(bs, section("_This request cannot be edited here._"))
		m := modal(ModalEdit, r, card, "Edit & approve", "Approve", bs...)
		m.Submit = nil
		return m
	}
	f := decodeInput(r.Input)
	for _, name := range editFields[r.ToolName] {
		multiline := name != "file_path"
		in := slack.NewInputBlock(blockField+name, plain(fieldLabels[name]), nil, textInput(multiline, f.str(name), MaxInputLength))
		if name == "content" || name == "old_string" || name == "new_string" {
			in = in.WithOptional(true) // an empty file or an insertion is legitimate
		}
		bs = append(bs, in)
	}
	return modal(ModalEdit, r, card, "Edit & approve", "Approve", bs...)
}

// OtherModal lets a person answer every question in their own words: per
// question a menu of its options and a free-text field (the text wins).
func OtherModal(r store.Request, card store.MessageRef) slack.ModalViewRequest {
	return otherModal(r, card, nil)
}

func otherModal(r store.Request, card store.MessageRef, picks map[int][]int) slack.ModalViewRequest {
	bs := []slack.Block{}
	for i, q := range questions(r) {
		bs = append(bs, section(questionText(q)))
		if len(q.Options) > 0 {
			bs = append(bs, slack.NewInputBlock(blockPickQ+strconv.Itoa(i), plain("Choose"), nil, picker(q, picks[i]...)).WithOptional(true))
		}
		bs = append(bs, slack.NewInputBlock(blockTextQ+strconv.Itoa(i), plain("Or answer in your own words"), nil,
			textInput(true, "", MaxInputLength)).WithOptional(true))
	}
	if len(bs) == 0 {
		bs = append(bs, section("_There are no questions to answer._"))
	}
	return modal(ModalOther, r, card, "Answer Claude", "Send answers", bs...)
}

// rememberedInModal carries the scope chosen on the card into the answer
// modal, and says so in it.
func rememberedInModal(m slack.ModalViewRequest, r store.Request, card store.MessageRef, scope store.ScopeKind) slack.ModalViewRequest {
	meta, _ := json.Marshal(metadata{Request: r.ID, Channel: card.Channel, TS: card.TS, Remember: scope})
	m.PrivateMetadata = string(meta)
	where := "this repository"
	if scope == store.ScopeChannel {
		where = "this channel"
	}
	note := slack.NewContextBlock("", mrkdwn("🧠 These answers will be remembered for "+where+" (chosen on the card)."))
	m.Blocks.BlockSet = append([]slack.Block{note}, m.Blocks.BlockSet...)
	return m
}

// WithResponseURL makes m remember url, the response_url of the click on
// the card that opened it, so the submission's outcome can replace the
// card through it (Slack gives a view_submission none of its own).
func WithResponseURL(m slack.ModalViewRequest, url string) slack.ModalViewRequest {
	var meta metadata
	if json.Unmarshal([]byte(m.PrivateMetadata), &meta) != nil {
		return m
	}
	meta.ResponseURL = url
	raw, _ := json.Marshal(meta)
	m.PrivateMetadata = string(raw)
	return m
}

// ViewAction is a decoded modal submission.
type ViewAction struct {
	Kind      ModalKind
	RequestID string
	Card      store.MessageRef // the card to update afterwards
	// Remember is the scope to remember the answers for (ModalOther),
	// as chosen on the card; "" for none.
	Remember store.ScopeKind
	// ResponseURL is the response_url of the click that opened the
	// modal ("" when none was kept; see WithResponseURL).
	ResponseURL string
}

// ParseViewSubmission reads which modal was submitted, for which request and
// card. ErrNotOurs for another app's view or unreadable metadata.
func ParseViewSubmission(cb *slack.InteractionCallback) (ViewAction, error) {
	return parseView(cb, ModalDeny, ModalEdit, ModalOther, ModalElicit)
}

// ParseModalClick reads, for a click on a button inside one of
// slackgate's modals (AllowModal's), which modal it was, for which
// request and card. ErrNotOurs for any other view.
func ParseModalClick(cb *slack.InteractionCallback) (ViewAction, error) {
	return parseView(cb, ModalAllow)
}

func parseView(cb *slack.InteractionCallback, kinds ...ModalKind) (ViewAction, error) {
	if cb == nil {
		return ViewAction{}, ErrNotOurs
	}
	kind := ModalKind(cb.View.CallbackID)
	if !slices.Contains(kinds, kind) {
		return ViewAction{}, fmt.Errorf("%w: callback_id %q", ErrNotOurs, cb.View.CallbackID)
	}
	var m metadata
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &m); err != nil || m.Request == "" {
		return ViewAction{}, fmt.Errorf("%w: private_metadata %q", ErrNotOurs, cut(cb.View.PrivateMetadata, 100))
	}
	v := ViewAction{Kind: kind, RequestID: m.Request, Card: store.MessageRef{Channel: m.Channel, TS: m.TS}, ResponseURL: m.ResponseURL}
	if kind == ModalOther && (m.Remember == store.ScopeRepo || m.Remember == store.ScopeChannel) {
		v.Remember = m.Remember
	}
	return v, nil
}

// DecideView turns a modal submission into a Decision. When the input needs
// fixing it returns a non-nil map of block_id → message for a
// response_action "errors" ack, and no Decision. Errors: ErrMismatch,
// store.ErrAlreadyDecided.
func DecideView(v ViewAction, r store.Request, cb *slack.InteractionCallback, by Who, at time.Time) (store.Decision, map[string]string, error) {
	r = normalize(r)
	if v.RequestID != r.ID {
		return store.Decision{}, nil, fmt.Errorf("%w (view for %q, request %q)", ErrMismatch, v.RequestID, r.ID)
	}
	if r.Decision != nil {
		return store.Decision{}, nil, fmt.Errorf("blocks: request %s: %w", r.ID, store.ErrAlreadyDecided)
	}
	var values map[string]map[string]slack.BlockAction
	if cb != nil && cb.View.State != nil {
		values = cb.View.State.Values
	}
	get := func(block string) slack.BlockAction { return values[block][actionValue] }
	d := store.Decision{By: by.ID, ByName: by.Name, At: at}
	if (v.Kind == ModalElicit) != (r.Kind == store.KindElicitation) {
		return store.Decision{}, nil, fmt.Errorf("%w (%s for a %s request)", ErrMismatch, v.Kind, r.Kind)
	}
	switch v.Kind {
	case ModalElicit:
		return decideElicitView(r, get, d)
	case ModalDeny:
		if r.Kind == store.KindQuestion {
			return store.Decision{}, nil, fmt.Errorf("%w (deny modal for a question)", ErrMismatch)
		}
		reason := strings.TrimSpace(get(blockReason).Value)
		d.Outcome = store.OutcomeDeny
		if r.Kind == store.KindPlan {
			if reason == "" {
				return store.Decision{}, map[string]string{blockReason: "Tell Claude what to change."}, nil
			}
			d.Message = reason
			return d, nil, nil
		}
		d.Message = reason
		if d.Message == "" {
			d.Message = deniedMessage(by)
		}
		for _, o := range get(blockInterrupt).SelectedOptions {
			if o.Value == interruptValue {
				d.Interrupt = true
			}
		}
		return d, nil, nil
	case ModalEdit:
		return decideEdit(r, get, d)
	case ModalOther:
		if r.Kind != store.KindQuestion {
			return store.Decision{}, nil, fmt.Errorf("%w (answers for a %s request)", ErrMismatch, r.Kind)
		}
		answers := map[string]string{}
		errs := map[string]string{}
		for i, q := range questions(r) {
			if text := strings.TrimSpace(get(blockTextQ + strconv.Itoa(i)).Value); text != "" {
				answers[q.Question] = get(blockTextQ + strconv.Itoa(i)).Value
				continue
			}
			if labels := selected(q, get(blockPickQ+strconv.Itoa(i))); len(labels) > 0 {
				answers[q.Question] = strings.Join(labels, ", ")
				continue
			}
			errs[blockTextQ+strconv.Itoa(i)] = "Please answer this question (choose an option or type an answer)."
		}
		if len(errs) > 0 {
			return store.Decision{}, errs, nil
		}
		d.Outcome = store.OutcomeAllow
		d.Answers = answers
		return d, nil, nil
	}
	return store.Decision{}, nil, fmt.Errorf("%w: modal %q", ErrNotOurs, v.Kind)
}

// decideEdit builds the decision of an "Edit & approve" submission: the
// request's input with the edited fields replaced, every other field kept.
func decideEdit(r store.Request, get func(string) slack.BlockAction, d store.Decision) (store.Decision, map[string]string, error) {
	if !Editable(r) {
		return store.Decision{}, nil, fmt.Errorf("%w (request %s is not editable)", ErrMismatch, r.ID)
	}
	f := decodeInput(r.Input)
	errs := map[string]string{}
	for _, name := range editFields[r.ToolName] {
		val := get(blockField + name).Value
		if (name == "command" || name == "file_path") && strings.TrimSpace(val) == "" {
			errs[blockField+name] = fieldLabels[name] + " cannot be empty."
			continue
		}
		raw, err := json.Marshal(val)
		if err != nil {
			return store.Decision{}, nil, fmt.Errorf("blocks: encode %s: %w", name, err)
		}
		f[name] = raw
	}
	if len(errs) > 0 {
		return store.Decision{}, errs, nil
	}
	updated, err := json.Marshal(f)
	if err != nil {
		return store.Decision{}, nil, fmt.Errorf("blocks: encode edited input: %w", err)
	}
	d.Outcome = store.OutcomeAllow
	d.UpdatedInput = updated
	return d, nil, nil
}

func orName(w Who) string {
	if w.Name != "" {
		return w.Name
	}
	if w.ID != "" {
		return w.ID
	}
	return "a person"
}
