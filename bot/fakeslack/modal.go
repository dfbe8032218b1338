package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// SubmitView fills the modal viewID (the open one when "") as user and
// presses its submit button. values maps an input block's label text or its
// block_id to what the person enters: the text of a text input, the option
// label (or value) of a menu or radio group, or several option labels
// separated by newlines for checkboxes and multi-selects. Inputs left out
// keep their initial values; a required input left empty fails without
// submitting, as Slack's client would. It returns the app's answer and
// applies it: an empty ack closes the modal, "errors" keeps it open.
func (f *Fake) SubmitView(ctx context.Context, user, viewID string, values map[string]string) (Response, error) {
	fail := func(err error) (Response, error) {
		return Response{}, fmt.Errorf("fakeslack: submit view %s by %s: %w", viewID, user, err)
	}
	f.mu.Lock()
	u, err := f.userLocked(user)
	if err != nil {
		f.mu.Unlock()
		return fail(err)
	}
	v, err := f.openViewOfLocked(user, viewID)
	if err != nil {
		f.mu.Unlock()
		return fail(err)
	}
	viewID = v.ID
	state, err := submissionState(v, values)
	if err != nil {
		f.mu.Unlock()
		return fail(err)
	}
	payload, _ := json.Marshal(map[string]any{
		"type":                  "view_submission",
		"team":                  map[string]any{"id": TeamID, "domain": TeamDomain},
		"user":                  userObj(u),
		"api_app_id":            AppID,
		"token":                 VerificationToken,
		"trigger_id":            f.newTriggerLocked(user),
		"view":                  v.wire(state),
		"response_urls":         []any{},
		"is_enterprise_install": false,
		"enterprise":            nil,
	})
	f.mu.Unlock()

	ack, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload})
	if err != nil {
		return fail(err)
	}
	resp := Response{Raw: ack}
	if body := strings.TrimSpace(string(ack)); body != "" && body != "null" && body != "{}" {
		var r struct {
			ResponseAction string            `json:"response_action"`
			Errors         map[string]string `json:"errors"`
		}
		if err := json.Unmarshal(ack, &r); err != nil {
			return resp, f.rejectAnswer(viewID, fmt.Sprintf("answer is not JSON: %q", ack))
		}
		resp.Action, resp.Errors = r.ResponseAction, r.Errors
	}
	return resp, f.applyAnswer(user, v.ID, resp.Action, resp.Errors)
}

// rejectAnswer records an unusable view_submission answer the way a
// rejected Web API call is recorded: Slack would show the person an error.
func (f *Fake) rejectAnswer(viewID, detail string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rejectLocked("view_submission", "invalid_response", viewID, detail)
}

func (f *Fake) rejectLocked(method, code, id, detail string) error {
	rej := Rejection{Method: method, Error: code, Details: []string{detail}, Params: url.Values{"id": {id}}}
	f.rejections = append(f.rejections, rej)
	f.notifyLocked()
	if !f.allowRejections {
		f.tb.Errorf("fakeslack: rejected %s", rej)
	}
	return fmt.Errorf("fakeslack: %s", rej)
}

// applyAnswer does what Slack does with a view_submission's ack. The app
// answers only with errors or by closing the modal (an empty ack); other
// response_actions are refused so that a change to that is noticed here.
func (f *Fake) applyAnswer(user, viewID, action string, errs map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	switch action {
	case "":
		if f.open[user] == viewID {
			delete(f.open, user)
		}
	case "errors":
		v := f.views[viewID]
		for blockID := range errs {
			if !hasInputBlock(v.Raw, blockID) {
				return f.rejectLocked("view_submission", "invalid_response", viewID,
					fmt.Sprintf("errors names %q, which is not the block_id of an input block", blockID))
			}
		}
	default:
		return f.rejectLocked("view_submission", "invalid_response", viewID,
			fmt.Sprintf("response_action %q is not one the fake supports (errors, or an empty ack)", action))
	}
	return nil
}

func hasInputBlock(raw json.RawMessage, blockID string) bool {
	var obj struct {
		Blocks []map[string]any `json:"blocks"`
	}
	_ = json.Unmarshal(raw, &obj)
	return slices.ContainsFunc(obj.Blocks, func(b map[string]any) bool {
		return b["type"] == "input" && b["block_id"] == blockID
	})
}

func (f *Fake) openViewOfLocked(user, viewID string) (*View, error) {
	id, ok := f.open[user]
	switch {
	case !ok:
		return nil, fmt.Errorf("no modal is open for %s", user)
	case viewID != "" && viewID != id:
		return nil, fmt.Errorf("modal %s is not open for %s (open: %s)", viewID, user, id)
	}
	return f.views[id], nil
}

// submissionState builds view.state.values from the person's entries.
func submissionState(v *View, values map[string]string) (map[string]any, error) {
	var obj struct {
		Blocks []map[string]any `json:"blocks"`
	}
	if err := json.Unmarshal(v.Raw, &obj); err != nil {
		return nil, err
	}
	used := map[string]bool{}
	state := map[string]any{}
	for _, b := range obj.Blocks {
		if b["type"] != "input" {
			continue
		}
		blockID, _ := b["block_id"].(string)
		label := textOf(b["label"])
		el, _ := b["element"].(map[string]any)
		actionID, _ := el["action_id"].(string)
		entry, given := values[blockID]
		if given {
			used[blockID] = true
		} else if entry, given = values[label]; given {
			used[label] = true
		}
		st, empty, err := inputState(el, entry, given)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", label, err)
		}
		if st == nil {
			continue // an element the fake does not fill, left alone
		}
		if optional, _ := b["optional"].(bool); empty && !optional {
			return nil, fmt.Errorf("input %q is required", label)
		}
		state[blockID] = map[string]any{actionID: st}
	}
	for k := range values {
		if !used[k] {
			return nil, fmt.Errorf("no input block with label or block_id %q", k)
		}
	}
	return state, nil
}

// inputState is one input element's state once the person entered entry
// (when given), and whether it is empty. A nil state means the element is
// of a type the fake does not fill and nothing was given for it.
func inputState(el map[string]any, entry string, given bool) (st map[string]any, empty bool, err error) {
	typ, _ := el["type"].(string)
	switch {
	case statefulTypes[typ]:
		st = initialState(typ, el)
		if given {
			var labels []string
			if entry != "" {
				labels = strings.Split(entry, "\n")
			}
			picked, err := pickOptions(el, labels)
			if err != nil {
				return nil, false, err
			}
			switch {
			case multiType(typ):
				st["selected_options"] = picked
			case len(picked) > 1:
				return nil, false, fmt.Errorf("%s takes one option", typ)
			case len(picked) == 1:
				st["selected_option"] = picked[0]
			default:
				st["selected_option"] = nil
			}
		}
		if multiType(typ) {
			sel, _ := st["selected_options"].([]any)
			return st, len(sel) == 0, nil
		}
		return st, st["selected_option"] == nil, nil
	case typ == "plain_text_input" || typ == "email_text_input" || typ == "url_text_input" || typ == "number_input":
		val, _ := el["initial_value"].(string)
		if given {
			val = entry
		}
		if maxLen, ok := el["max_length"].(float64); ok && utf8.RuneCountInString(val) > int(maxLen) {
			return nil, false, fmt.Errorf("%d chars > max_length %d", utf8.RuneCountInString(val), int(maxLen))
		}
		if minLen, ok := el["min_length"].(float64); ok && val != "" && utf8.RuneCountInString(val) < int(minLen) {
			return nil, false, fmt.Errorf("%d chars < min_length %d", utf8.RuneCountInString(val), int(minLen))
		}
		return map[string]any{"type": typ, "value": nilIfEmpty(val)}, val == "", nil
	case given:
		return nil, false, fmt.Errorf("element type %q is not supported by the fake", typ)
	}
	return nil, false, nil
}

// ClickView presses the button labelled label in the modal open for user
// (a button in the view, not its submit) and returns once the app acked
// the block_actions. Slack's client shows a button's confirm first; the
// fake presses on as a person who confirmed.
func (f *Fake) ClickView(ctx context.Context, user, label string) error {
	f.mu.Lock()
	u, err := f.userLocked(user)
	var v *View
	if err == nil {
		v, err = f.openViewOfLocked(user, "")
	}
	if err != nil {
		f.mu.Unlock()
		return fmt.Errorf("fakeslack: click %q in the modal of %s: %w", label, user, err)
	}
	var obj struct {
		Blocks []any `json:"blocks"`
	}
	_ = json.Unmarshal(v.Raw, &obj)
	var found []map[string]any
	var blockIDs []string
	elements(obj.Blocks, func(blockID string, el map[string]any) {
		if el["type"] == "button" && textOf(el["text"]) == label {
			found = append(found, el)
			blockIDs = append(blockIDs, blockID)
		}
	})
	if len(found) != 1 {
		f.mu.Unlock()
		return fmt.Errorf("fakeslack: click %q in the modal of %s: %d such buttons (buttons: %s)", label, user, len(found), strings.Join(v.Buttons(), ", "))
	}
	payload := f.viewClickLocked(u, v, found[0], blockIDs[0])
	f.mu.Unlock()
	if _, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload}); err != nil {
		return fmt.Errorf("fakeslack: click %q in the modal of %s: %w", label, user, err)
	}
	return nil
}

// viewClickLocked is the block_actions payload of u pressing button el
// (in block blockID) of view v: a modal, or an App Home.
func (f *Fake) viewClickLocked(u *User, v *View, el map[string]any, blockID string) []byte {
	action := map[string]any{"action_id": el["action_id"], "block_id": blockID, "text": el["text"],
		"type": "button", "action_ts": f.tsLocked()}
	for _, k := range []string{"value", "style"} {
		if x, ok := el[k]; ok {
			action[k] = x
		}
	}
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "user": userObj(u), "api_app_id": AppID, "token": VerificationToken,
		"container":  map[string]any{"type": "view", "view_id": v.ID},
		"trigger_id": f.newTriggerLocked(u.ID), "team": map[string]any{"id": TeamID, "domain": TeamDomain},
		"view": v.wire(nil), "actions": []any{action},
	})
	return payload
}
