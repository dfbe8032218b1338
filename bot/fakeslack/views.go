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
func (f *Fake) parseViewLocked(raw string) (json.RawMessage, slack.ModalViewRequest, error) {
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
	if err := blocks.ValidateView(mv); err != nil {
		return nil, mv, fail("invalid_arguments", problems(err)...)
	}
	return filled, mv, nil
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
	out["id"] = v.ID
	out["team_id"] = TeamID
	out["state"] = map[string]any{"values": state}
	out["hash"] = v.Hash
	out["root_view_id"] = v.ID
	out["previous_view_id"] = nil
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

// openViewLocked is views.open: the modal replaces whatever the person had
// open (the app only ever opens one modal at a time).
func (f *Fake) openViewLocked(p params) (map[string]any, error) {
	tr, err := f.useTriggerLocked(p.get("trigger_id"))
	if err != nil {
		return nil, err
	}
	raw, mv, err := f.parseViewLocked(p.get("view"))
	if err != nil {
		return nil, err
	}
	v := &View{ID: f.idLocked("V"), User: tr.user, Raw: raw, Request: mv,
		Type: string(mv.Type), CallbackID: mv.CallbackID, PrivateMetadata: mv.PrivateMetadata}
	if mv.Title != nil {
		v.Title = mv.Title.Text
	}
	v.Hash = fmt.Sprintf("%d.%08x", 1700000000+f.nextLocked(), f.seq*40503)
	f.views[v.ID] = v
	f.open[tr.user] = v.ID
	return map[string]any{"view": v.wire(nil)}, nil
}

// updateViewLocked is views.update of a modal by view_id: its content is
// replaced, and it stays open; a hash that is not the view's latest is
// refused, as Slack does.
func (f *Fake) updateViewLocked(p params) (map[string]any, error) {
	v, ok := f.views[p.get("view_id")]
	if !ok {
		return nil, fail("not_found", "no view "+p.get("view_id"))
	}
	if h := p.get("hash"); h != "" && h != v.Hash {
		return nil, fail("hash_conflict")
	}
	raw, mv, err := f.parseViewLocked(p.get("view"))
	if err != nil {
		return nil, err
	}
	v.Raw, v.Request, v.Type, v.CallbackID, v.PrivateMetadata = raw, mv, string(mv.Type), mv.CallbackID, mv.PrivateMetadata
	if mv.Title != nil {
		v.Title = mv.Title.Text
	}
	v.Hash = fmt.Sprintf("%d.%08x", 1700000000+f.nextLocked(), f.seq*40503)
	return map[string]any{"view": v.wire(nil)}, nil
}
