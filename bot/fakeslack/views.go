package fakeslack

import (
	"encoding/json"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
)

// newTriggerLocked registers a trigger_id a person's interaction carries.
func (f *Fake) newTriggerLocked(user string) string {
	n := f.nextLocked()
	id := fmt.Sprintf("%d.%d.%08x", 1700000000+n, n, n*2654435761)
	f.triggers[id] = &trigger{id: id, user: user, created: f.now()}
	f.lastTrigger[user] = id
	return id
}

// LastTrigger is the trigger_id of user's latest interaction (click,
// selection, slash command, submission): what an app would open a modal with.
func (f *Fake) LastTrigger(user string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastTrigger[user]
}

// useTriggerLocked exchanges a trigger_id: once, and within the TTL.
func (f *Fake) useTriggerLocked(id string) (*trigger, error) {
	tr, ok := f.triggers[id]
	switch {
	case !ok:
		return nil, fail("expired_trigger_id", "unknown trigger_id "+id)
	case tr.used:
		return nil, fail("exchanged_trigger_id")
	case f.now().Sub(tr.created) > f.triggerTTL:
		return nil, fail("expired_trigger_id", fmt.Sprintf("trigger_id is %s old (limit %s)", f.now().Sub(tr.created), f.triggerTTL))
	}
	tr.used = true
	return tr, nil
}

// parseViewLocked decodes a view argument, gives blocks and input elements
// the ids Slack would assign, and checks it against Slack's limits.
func (f *Fake) parseViewLocked(raw string, home bool) (json.RawMessage, slack.ModalViewRequest, error) {
	var mv slack.ModalViewRequest
	if len(raw) > maxViewBytes {
		return nil, mv, fail("view_too_large", fmt.Sprintf("view: %d > %d bytes", len(raw), maxViewBytes))
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		return nil, mv, fail("invalid_arguments", "view: "+err.Error())
	}
	list, _ := obj["blocks"].([]any)
	for _, b := range list {
		bm, ok := b.(map[string]any)
		if !ok {
			continue
		}
		if id, _ := bm["block_id"].(string); id == "" {
			bm["block_id"] = f.idLocked("blk")
		}
		if el, ok := bm["element"].(map[string]any); ok {
			if id, _ := el["action_id"].(string); id == "" {
				el["action_id"] = f.idLocked("act")
			}
		}
	}
	filled, err := json.Marshal(obj)
	if err != nil {
		return nil, mv, fail("invalid_arguments", "view: "+err.Error())
	}
	if err := json.Unmarshal(filled, &mv); err != nil {
		return nil, mv, fail("invalid_arguments", "view: "+err.Error())
	}
	if home {
		if mv.Type != slack.VTHomeTab {
			return nil, mv, fail("invalid_arguments", fmt.Sprintf("view.type: %q is not \"home\"", mv.Type))
		}
		// The blocks package validates modals only; a home tab is checked
		// for decoding and size.
		return filled, mv, nil
	}
	if err := blocks.ValidateView(mv); err != nil {
		return nil, mv, fail("invalid_arguments", problems(err)...)
	}
	return filled, mv, nil
}

func (f *Fake) newViewLocked(user string, raw json.RawMessage, mv slack.ModalViewRequest) *View {
	v := &View{ID: f.idLocked("V"), User: user}
	f.setViewLocked(v, raw, mv)
	v.Updated = 0
	f.views[v.ID] = v
	return v
}

func (f *Fake) setViewLocked(v *View, raw json.RawMessage, mv slack.ModalViewRequest) {
	v.Raw, v.Request = raw, mv
	v.Type, v.CallbackID, v.PrivateMetadata, v.ExternalID = string(mv.Type), mv.CallbackID, mv.PrivateMetadata, mv.ExternalID
	v.Title = ""
	if mv.Title != nil {
		v.Title = mv.Title.Text
	}
	v.Hash = fmt.Sprintf("%d.%08x", 1700000000+f.nextLocked(), f.seq*40503)
	v.Updated++
}

// wire is the view object Slack returns and puts in view payloads.
func (v *View) wire(state map[string]any) map[string]any {
	var out map[string]any
	_ = json.Unmarshal(v.Raw, &out)
	if out == nil {
		out = map[string]any{}
	}
	if state == nil {
		state = map[string]any{}
	}
	for _, k := range []string{"private_metadata", "callback_id", "external_id"} {
		if _, ok := out[k]; !ok {
			out[k] = ""
		}
	}
	root := v.RootID
	if root == "" {
		root = v.ID
	}
	out["id"] = v.ID
	out["team_id"] = TeamID
	out["state"] = map[string]any{"values": state}
	out["hash"] = v.Hash
	out["root_view_id"] = root
	out["previous_view_id"] = nilIfEmpty(v.PreviousID)
	out["app_id"] = AppID
	out["app_installed_team_id"] = TeamID
	out["bot_id"] = BotID
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (f *Fake) openViewLocked(method string, p params) (map[string]any, error) {
	tr, err := f.useTriggerLocked(p.get("trigger_id"))
	if err != nil {
		return nil, err
	}
	raw, mv, err := f.parseViewLocked(p.get("view"), false)
	if err != nil {
		return nil, err
	}
	stack := f.stacks[tr.user]
	if method == "views.push" {
		if len(stack) == 0 {
			return nil, fail("not_found", "views.push needs an open modal")
		}
		if len(stack) >= maxViewStack {
			return nil, fail("push_limit_reached")
		}
	} else {
		f.closeStackLocked(tr.user)
		stack = nil
	}
	v := f.newViewLocked(tr.user, raw, mv)
	if len(stack) > 0 {
		v.RootID = stack[0]
		v.PreviousID = stack[len(stack)-1]
	}
	f.stacks[tr.user] = append(stack, v.ID)
	return map[string]any{"view": v.wire(nil)}, nil
}

func (f *Fake) closeStackLocked(user string) {
	for _, id := range f.stacks[user] {
		f.views[id].Closed = true
	}
	delete(f.stacks, user)
}

func (f *Fake) findViewLocked(viewID, externalID string) *View {
	if viewID != "" {
		return f.views[viewID]
	}
	for _, v := range f.views {
		if externalID != "" && v.ExternalID == externalID && !v.Closed {
			return v
		}
	}
	return nil
}

func (f *Fake) updateViewLocked(p params) (map[string]any, error) {
	v := f.findViewLocked(p.get("view_id"), p.get("external_id"))
	if v == nil {
		return nil, fail("not_found")
	}
	if h := p.get("hash"); h != "" && h != v.Hash {
		return nil, fail("hash_conflict")
	}
	raw, mv, err := f.parseViewLocked(p.get("view"), v.Type == string(slack.VTHomeTab))
	if err != nil {
		return nil, err
	}
	f.setViewLocked(v, raw, mv)
	return map[string]any{"view": v.wire(nil)}, nil
}

func (f *Fake) publishViewLocked(p params) (map[string]any, error) {
	user := p.get("user_id")
	if _, ok := f.users[user]; !ok {
		return nil, fail("user_not_found")
	}
	raw, mv, err := f.parseViewLocked(p.get("view"), true)
	if err != nil {
		return nil, err
	}
	v, ok := f.homes[user]
	if ok {
		if h := p.get("hash"); h != "" && h != v.Hash {
			return nil, fail("hash_conflict")
		}
		f.setViewLocked(v, raw, mv)
	} else {
		v = f.newViewLocked(user, raw, mv)
		f.homes[user] = v
	}
	return map[string]any{"view": v.wire(nil)}, nil
}
