package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
)

// The App Home: views.publish stores one home view per person (checked
// against Slack's limits for it: 100 blocks), OpenHome sends the
// app_home_opened event Slack sends when a person opens the tab, and
// ClickHome presses a button in it.

// publishViewLocked is views.publish.
func (f *Fake) publishViewLocked(p params) (map[string]any, error) {
	user := p.get("user_id")
	if _, err := f.userLocked(user); err != nil {
		return nil, err
	}
	raw := p.get("view")
	if len(raw) > maxViewBytes {
		return nil, fail("view_too_large", fmt.Sprintf("view: %d > %d bytes", len(raw), maxViewBytes))
	}
	var hv slack.HomeTabViewRequest
	if err := json.Unmarshal([]byte(raw), &hv); err != nil {
		return nil, fail("invalid_arguments", "view: "+err.Error())
	}
	if err := blocks.ValidateHomeView(hv); err != nil {
		return nil, fail("invalid_arguments", problems(err)...)
	}
	// Block ids Slack would assign, so a click names its block.
	var obj map[string]any
	_ = json.Unmarshal([]byte(raw), &obj)
	list, _ := obj["blocks"].([]any)
	for _, b := range list {
		if bm, ok := b.(map[string]any); ok {
			if id, _ := bm["block_id"].(string); id == "" {
				bm["block_id"] = f.idLocked("blk")
			}
		}
	}
	filled, _ := json.Marshal(obj)
	v := f.homes[user]
	if v == nil {
		v = &View{ID: f.idLocked("V"), User: user, Type: string(slack.VTHomeTab)}
		f.homes[user] = v
	}
	v.Raw, v.PrivateMetadata, v.CallbackID = filled, hv.PrivateMetadata, hv.CallbackID
	v.Hash = fmt.Sprintf("%d.%08x", 1700000000+f.nextLocked(), f.seq*40503)
	return map[string]any{"view": v.wire(nil)}, nil
}

// Home returns the App Home view the app last published for user.
func (f *Fake) Home(user string) (View, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.homes[user]
	if !ok {
		return View{}, false
	}
	return *v, true
}

// WaitHome blocks until the App Home view published for user satisfies
// match, and returns it.
func (f *Fake) WaitHome(ctx context.Context, user string, match func(View) bool) (View, error) {
	var found View
	err := f.waitFor(ctx, "an app home view for "+user, func() bool {
		v, ok := f.homes[user]
		if ok && match(*v) {
			found = *v
			return true
		}
		return false
	})
	return found, err
}

// OpenHome is user opening the app's Home tab: Slack sends app_home_opened.
func (f *Fake) OpenHome(ctx context.Context, user string) error {
	f.mu.Lock()
	if _, err := f.userLocked(user); err != nil {
		f.mu.Unlock()
		return err
	}
	event := map[string]any{"type": "app_home_opened", "user": user, "channel": DMChannel(user), "tab": "home",
		"event_ts": f.tsLocked()}
	if v, ok := f.homes[user]; ok {
		event["view"] = v.wire(nil)
	}
	payload := f.eventCallbackLocked(event)
	f.mu.Unlock()
	return f.sendEvents(ctx, "open app home", payload)
}

// ClickHome presses the button labelled label in user's Home view, in the
// block whose text contains near or the actions block right under it
// ("" when the label is unique), and
// returns once the app acked the block_actions.
func (f *Fake) ClickHome(ctx context.Context, user, label, near string) error {
	f.mu.Lock()
	u, err := f.userLocked(user)
	v, ok := f.homes[user]
	if err != nil || !ok {
		f.mu.Unlock()
		if err == nil {
			err = fmt.Errorf("no home view published for %s", user)
		}
		return fmt.Errorf("fakeslack: click %q in the home of %s: %w", label, user, err)
	}
	var obj struct {
		Blocks []any `json:"blocks"`
	}
	_ = json.Unmarshal(v.Raw, &obj)
	var found []map[string]any
	var blockIDs []string
	under := false // the block before contains near: its actions are its buttons
	for _, b := range obj.Blocks {
		raw, _ := json.Marshal(b)
		here := near == "" || blocksContain(json.RawMessage("["+string(raw)+"]"), near)
		actions := strings.Contains(string(raw), `"type":"actions"`)
		if !here && !(under && actions) {
			under = false
			continue
		}
		under = here
		elements([]any{b}, func(blockID string, el map[string]any) {
			if el["type"] == "button" && textOf(el["text"]) == label {
				found = append(found, el)
				blockIDs = append(blockIDs, blockID)
			}
		})
	}
	if len(found) != 1 {
		f.mu.Unlock()
		return fmt.Errorf("fakeslack: click %q near %q in the home of %s: %d such buttons (buttons: %s)", label, near, user, len(found), strings.Join(v.Buttons(), ", "))
	}
	payload := f.viewClickLocked(u, v, found[0], blockIDs[0])
	f.mu.Unlock()
	if _, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload}); err != nil {
		return fmt.Errorf("fakeslack: click %q in the home of %s: %w", label, user, err)
	}
	return nil
}
