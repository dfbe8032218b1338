package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"
)

// SubmitView fills the modal viewID (the top modal when "") as user and
// presses its submit button. values maps an input block's label text or its
// block_id to what the person enters: the text of a text input, the option
// label (or value) of a menu or radio group, or several option labels
// separated by newlines for checkboxes and multi-selects. Inputs left out
// keep their initial values; a required input left empty fails without
// submitting, as Slack's client would. It returns the app's answer and
// applies it to the modal stack (close, errors, update, push, clear).
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
			View           json.RawMessage   `json:"view"`
		}
		if err := json.Unmarshal(ack, &r); err != nil {
			return resp, f.rejectAnswer(viewID, fmt.Sprintf("answer is not JSON: %q", ack))
		}
		resp.Action, resp.Errors = r.ResponseAction, r.Errors
		if len(r.View) > 0 {
			var mv slack.ModalViewRequest
			if err := json.Unmarshal(r.View, &mv); err == nil {
				resp.View = &mv
			}
		}
		if err := f.applyAnswer(user, v.ID, r.ResponseAction, r.Errors, r.View); err != nil {
			return resp, err
		}
		return resp, nil
	}
	// An empty ack closes the submitted view.
	return resp, f.applyAnswer(user, v.ID, "", nil, nil)
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
		f.t.Errorf("fakeslack: rejected %s", rej)
	}
	return fmt.Errorf("fakeslack: %s", rej)
}

func (f *Fake) applyAnswer(user, viewID, action string, errs map[string]string, rawView json.RawMessage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	stack := f.stacks[user]
	i := slices.Index(stack, viewID)
	switch action {
	case "":
		if i >= 0 {
			for _, id := range stack[i:] {
				f.views[id].Closed = true
			}
			f.stacks[user] = stack[:i]
		}
	case "clear":
		f.closeStackLocked(user)
	case "errors":
		v := f.views[viewID]
		for blockID := range errs {
			if !hasInputBlock(v.Raw, blockID) {
				return f.rejectLocked("view_submission", "invalid_response", viewID,
					fmt.Sprintf("errors names %q, which is not the block_id of an input block", blockID))
			}
		}
	case "update", "push":
		raw, mv, err := f.parseViewLocked(string(rawView), false)
		if err != nil {
			var ae *apiError
			errors.As(err, &ae)
			return f.rejectLocked("view_submission", ae.code, viewID, strings.Join(ae.details, "; "))
		}
		if action == "update" {
			f.setViewLocked(f.views[viewID], raw, mv)
			return nil
		}
		if len(stack) >= maxViewStack {
			return f.rejectLocked("view_submission", "push_limit_reached", viewID, "the modal stack holds 3 views")
		}
		nv := f.newViewLocked(user, raw, mv)
		nv.RootID, nv.PreviousID = stack[0], stack[len(stack)-1]
		f.stacks[user] = append(stack, nv.ID)
	default:
		return f.rejectLocked("view_submission", "invalid_response", viewID, fmt.Sprintf("unknown response_action %q", action))
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
	stack := f.stacks[user]
	if len(stack) == 0 {
		return nil, fmt.Errorf("no modal is open for %s", user)
	}
	if viewID == "" {
		return f.views[stack[len(stack)-1]], nil
	}
	if !slices.Contains(stack, viewID) {
		return nil, fmt.Errorf("modal %s is not open for %s (open: %q)", viewID, user, stack)
	}
	return f.views[viewID], nil
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
		typ, _ := el["type"].(string)
		actionID, _ := el["action_id"].(string)
		entry, given := values[blockID]
		if given {
			used[blockID] = true
		} else if entry, given = values[label]; given {
			used[label] = true
		}
		optional, _ := b["optional"].(bool)
		var st map[string]any
		var empty bool
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
					return nil, fmt.Errorf("input %q: %w", label, err)
				}
				if multiType(typ) {
					st["selected_options"] = picked
				} else if len(picked) > 1 {
					return nil, fmt.Errorf("input %q: %s takes one option", label, typ)
				} else if len(picked) == 1 {
					st["selected_option"] = picked[0]
				} else {
					st["selected_option"] = nil
				}
			}
			if multiType(typ) {
				sel, _ := st["selected_options"].([]any)
				empty = len(sel) == 0
			} else {
				empty = st["selected_option"] == nil
			}
		case typ == "plain_text_input" || typ == "email_text_input" || typ == "url_text_input" || typ == "number_input":
			val, _ := el["initial_value"].(string)
			if given {
				val = entry
			}
			if maxLen, ok := el["max_length"].(float64); ok && utf8.RuneCountInString(val) > int(maxLen) {
				return nil, fmt.Errorf("input %q: %d chars > max_length %d", label, utf8.RuneCountInString(val), int(maxLen))
			}
			if minLen, ok := el["min_length"].(float64); ok && val != "" && utf8.RuneCountInString(val) < int(minLen) {
				return nil, fmt.Errorf("input %q: %d chars < min_length %d", label, utf8.RuneCountInString(val), int(minLen))
			}
			st = map[string]any{"type": typ, "value": nilIfEmpty(val)}
			empty = val == ""
		default:
			if given {
				return nil, fmt.Errorf("input %q: element type %q is not supported by the fake", label, typ)
			}
			continue
		}
		if empty && !optional {
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

// CloseView closes the modal viewID (the top one when "") as user would with
// its close button; the app gets view_closed when the view asked for
// notify_on_close.
func (f *Fake) CloseView(ctx context.Context, user, viewID string) error {
	f.mu.Lock()
	u, err := f.userLocked(user)
	if err != nil {
		f.mu.Unlock()
		return err
	}
	v, err := f.openViewOfLocked(user, viewID)
	if err != nil {
		f.mu.Unlock()
		return fmt.Errorf("fakeslack: close view: %w", err)
	}
	notify := v.Request.NotifyOnClose
	stack := f.stacks[user]
	i := slices.Index(stack, v.ID)
	for _, id := range stack[i:] {
		f.views[id].Closed = true
	}
	f.stacks[user] = stack[:i]
	f.notifyLocked()
	payload, _ := json.Marshal(map[string]any{
		"type": "view_closed", "team": map[string]any{"id": TeamID, "domain": TeamDomain}, "user": userObj(u),
		"api_app_id": AppID, "token": VerificationToken, "view": v.wire(nil), "is_cleared": false,
		"is_enterprise_install": false, "enterprise": nil,
	})
	f.mu.Unlock()
	if !notify {
		return nil
	}
	if _, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload}); err != nil {
		return fmt.Errorf("fakeslack: close view %s by %s: %w", v.ID, user, err)
	}
	return nil
}

// serveResponseURL handles posts to a response_url: replace or delete the
// original message, or show a new (ephemeral or in-channel) one.
func (f *Fake) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/response/")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg map[string]json.RawMessage
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		err = json.Unmarshal(body, &msg)
	} else {
		// slack-go's response_url posts are JSON; accept a form too.
		var vs url.Values
		if vs, err = url.ParseQuery(string(body)); err == nil {
			msg = map[string]json.RawMessage{}
			for k := range vs {
				b, _ := json.Marshal(vs.Get(k))
				if k == "blocks" {
					b = []byte(vs.Get(k))
				}
				msg[k] = b
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	call := Call{Method: "response_url", Body: body, Time: f.now(), Status: http.StatusOK}
	res, ok := f.responses[id]
	switch {
	case !ok:
		call.Status = http.StatusNotFound
	case err != nil:
		call.Error = "invalid_payload"
	default:
		res.uses++
		if res.uses > 5 {
			call.Error = "used_url"
		} else if _, err := f.respondLocked("response_url", res, msg); err != nil {
			var ae *apiError
			if errors.As(err, &ae) {
				call.Error = ae.code
			} else {
				call.Error = err.Error()
			}
		}
	}
	f.calls = append(f.calls, call)
	w.Header().Set("Content-Type", "application/json")
	if call.Status != http.StatusOK {
		w.WriteHeader(call.Status)
		_, _ = io.WriteString(w, `{"ok":false,"error":"expired_url"}`)
		return
	}
	if call.Error != "" {
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": call.Error})
		return
	}
	_, _ = io.WriteString(w, `{"ok":true}`)
}

// respondLocked applies a response_url (or immediate slash command) message.
func (f *Fake) respondLocked(method string, res *responseURL, msg map[string]json.RawMessage) (*Message, error) {
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(msg[k], &s)
		return s
	}
	flag := func(k string) bool {
		var b bool
		_ = json.Unmarshal(msg[k], &b)
		return b || str(k) == "true"
	}
	p := params{}
	if _, ok := msg["text"]; ok {
		p["text"] = []string{str("text")}
	}
	if b, ok := msg["blocks"]; ok && string(b) != "null" {
		p["blocks"] = []string{string(b)}
	}
	reject := func(err error) (*Message, error) {
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, f.rejectLocked(method, ae.code, res.channel, strings.Join(ae.details, "; "))
		}
		return nil, err
	}
	switch {
	case flag("delete_original"):
		if res.ephemeral {
			list := f.ephemerals[res.user]
			f.ephemerals[res.user] = slices.DeleteFunc(list, func(m *Message) bool { return m.TS == res.messageTS })
			return nil, nil
		}
		if _, err := f.deleteMessageLocked(params{"channel": {res.channel}, "ts": {res.messageTS}}); err != nil {
			return reject(err)
		}
		return nil, nil
	case flag("replace_original") && res.messageTS != "":
		t, err := f.targetLocked(res.user, MessageRef{Channel: res.channel, TS: res.messageTS})
		if err != nil {
			return reject(fail("message_not_found"))
		}
		text := t.m.Text
		if p.has("text") {
			text = p.get("text")
		}
		if err := f.applyEditLocked(t.m, text, p.get("blocks"), p.has("blocks")); err != nil {
			return reject(err)
		}
		return t.m, nil
	}
	m, err := f.buildMessage(p, maxPostText)
	if err != nil {
		return reject(err)
	}
	m.Channel, m.TS, m.User, m.BotID = res.channel, f.tsLocked(), BotUserID, BotID
	m.ThreadTS = res.threadTS
	if ts := str("thread_ts"); ts != "" {
		m.ThreadTS = f.threadRootLocked(res.channel, ts)
	}
	if str("response_type") == "in_channel" {
		c, err := f.resolveChannelLocked(res.channel)
		if err != nil {
			return reject(err)
		}
		c.messages = append(c.messages, m)
		return m, nil
	}
	m.Ephemeral, m.Recipient = true, res.user
	f.ephemerals[res.user] = append(f.ephemerals[res.user], m)
	return m, nil
}
