package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/slack-go/slack"
)

// Response is the app's answer to a view submission (or any interaction
// whose ack carries a payload).
type Response struct {
	Action string                  // response_action: "", "errors", "update", "push", "clear"
	Errors map[string]string       // block_id → message, for "errors"
	View   *slack.ModalViewRequest // for "update" and "push"
	Raw    json.RawMessage         // the ack payload or HTTP body as sent
}

// eventCallbackLocked wraps event in the Events API envelope; an event by
// someone of another team (user_team set) comes from a channel shared
// with theirs.
func (f *Fake) eventCallbackLocked(event map[string]any) []byte {
	now := f.now()
	payload, _ := json.Marshal(map[string]any{
		"token":      VerificationToken,
		"team_id":    TeamID,
		"api_app_id": AppID,
		"event":      event,
		"type":       "event_callback",
		"event_id":   f.idLocked("Ev"),
		"event_time": now.Unix(),
		"authorizations": []map[string]any{{"enterprise_id": "", "team_id": TeamID, "user_id": BotUserID,
			"is_bot": true, "is_enterprise_install": false}},
		"is_ext_shared_channel": event["user_team"] != nil,
		"event_context":         "4-fakeslack",
	})
	return payload
}

// sendEvents delivers Events API payloads in order and remembers the last
// one for RetryLastEvent.
func (f *Fake) sendEvents(ctx context.Context, what string, payloads ...[]byte) error {
	for _, p := range payloads {
		f.mu.Lock()
		f.lastEvent = &sentEvent{payload: p}
		f.mu.Unlock()
		if _, err := f.deliver(ctx, delivery{typ: TypeEventsAPI, payload: p}); err != nil {
			return fmt.Errorf("fakeslack: %s: %w", what, err)
		}
	}
	return nil
}

func mentionsBot(text string) bool { return strings.Contains(text, "<@"+BotUserID+">") }

// postAsPersonLocked records a person's message and builds the events Slack
// sends for it: app_mention when the bot is mentioned outside a DM, and the
// message event (message.channels / message.im) in every case, as Slack does
// for an app subscribed to both.
func (f *Fake) postAsPersonLocked(user string, c *channel, threadTS, text string) (string, [][]byte) {
	u := f.users[user]
	m := &Message{Channel: c.id, TS: f.tsLocked(), ThreadTS: threadTS, User: user, Text: text, Posted: f.now()}
	c.messages = append(c.messages, m)
	f.notifyLocked()
	clientMsgID := fmt.Sprintf("%08x-0000-4000-8000-%012x", f.nextLocked(), f.seq)
	base := func(typ string) map[string]any {
		ev := map[string]any{"type": typ, "user": user, "text": text, "ts": m.TS, "channel": c.id,
			"event_ts": m.TS, "team": TeamID, "client_msg_id": clientMsgID}
		if u != nil && u.external() {
			// Slack's fields for a message in a channel shared between
			// workspaces: the poster's team, and the one it came from.
			ev["team"], ev["user_team"], ev["source_team"] = u.team(), u.team(), u.team()
		}
		if threadTS != "" {
			ev["thread_ts"] = threadTS
		}
		return ev
	}
	var payloads [][]byte
	if mentionsBot(text) && !c.im {
		payloads = append(payloads, f.eventCallbackLocked(base("app_mention")))
	}
	msg := base("message")
	msg["channel_type"] = "channel"
	if c.im {
		msg["channel_type"] = "im"
	}
	if threadTS != "" {
		if parent := f.messageLocked(c.id, threadTS); parent != nil {
			msg["parent_user_id"] = parent.User
		}
	}
	payloads = append(payloads, f.eventCallbackLocked(msg))
	return m.TS, payloads
}

// Mention posts a new top-level message by user in channel that mentions the
// bot ("<@U0BOT> " is prepended unless text already has it) and delivers
// app_mention and then the channel's message event. It returns the message
// ts once the app acked both.
func (f *Fake) Mention(ctx context.Context, user, channel, text string) (string, error) {
	f.mu.Lock()
	if _, err := f.userLocked(user); err != nil {
		f.mu.Unlock()
		return "", err
	}
	if !mentionsBot(text) {
		text = "<@" + BotUserID + "> " + text
	}
	c := f.channelForPersonLocked(channel)
	ts, payloads := f.postAsPersonLocked(user, c, "", text)
	f.mu.Unlock()
	return ts, f.sendEvents(ctx, "mention by "+user+" in "+channel, payloads...)
}

// Reply posts user's text in the thread threadTS of channel and delivers the
// message event (plus app_mention when the text mentions the bot). It
// returns the reply's ts once the app acked.
func (f *Fake) Reply(ctx context.Context, user, channel, threadTS, text string) (string, error) {
	f.mu.Lock()
	if _, err := f.userLocked(user); err != nil {
		f.mu.Unlock()
		return "", err
	}
	c := f.channelForPersonLocked(channel)
	ts, payloads := f.postAsPersonLocked(user, c, f.threadRootLocked(channel, threadTS), text)
	f.mu.Unlock()
	return ts, f.sendEvents(ctx, "reply by "+user+" in "+channel+"/"+threadTS, payloads...)
}

// DM sends text from user to the bot in their direct-message channel
// (DMChannel(user)) and delivers the message.im event. It returns the ts.
func (f *Fake) DM(ctx context.Context, user, text string) (string, error) {
	return f.DMReply(ctx, user, "", text)
}

// DMReply is DM inside a thread of the direct-message channel.
func (f *Fake) DMReply(ctx context.Context, user, threadTS, text string) (string, error) {
	f.mu.Lock()
	if _, err := f.userLocked(user); err != nil {
		f.mu.Unlock()
		return "", err
	}
	c := f.dmLocked(user)
	ts, payloads := f.postAsPersonLocked(user, c, f.threadRootLocked(c.id, threadTS), text)
	f.mu.Unlock()
	return ts, f.sendEvents(ctx, "DM from "+user, payloads...)
}

// SlashCommand runs command (for example "/claude") with text as user in
// channel. An immediate answer in the ack (a message with text or blocks)
// is shown the way Slack shows it: ephemeral unless response_type is
// in_channel. It returns once the app acked.
func (f *Fake) SlashCommand(ctx context.Context, user, channel, command, text string) error {
	f.mu.Lock()
	u, err := f.userLocked(user)
	if err != nil {
		f.mu.Unlock()
		return err
	}
	c := f.channelForPersonLocked(channel)
	form := url.Values{
		"token":                 {VerificationToken},
		"team_id":               {u.team()},
		"team_domain":           {TeamDomain},
		"channel_id":            {c.id},
		"channel_name":          {c.name},
		"user_id":               {u.ID},
		"user_name":             {u.Name},
		"command":               {command},
		"text":                  {text},
		"api_app_id":            {AppID},
		"is_enterprise_install": {"false"},
		"trigger_id":            {f.newTriggerLocked(u.ID)},
	}
	if u.Enterprise != "" {
		form.Set("enterprise_id", u.Enterprise)
	}
	f.mu.Unlock()
	obj := map[string]string{}
	for k := range form {
		obj[k] = form.Get(k)
	}
	payload, _ := json.Marshal(obj)
	ack, err := f.deliver(ctx, delivery{typ: TypeSlashCommands, payload: payload, form: form})
	if err != nil {
		return fmt.Errorf("fakeslack: %s by %s: %w", command, user, err)
	}
	if err := f.showImmediateAnswer(u.ID, c.id, ack); err != nil {
		return fmt.Errorf("fakeslack: %s by %s: %w", command, user, err)
	}
	return nil
}

// showImmediateAnswer displays a message returned in a slash command's ack.
func (f *Fake) showImmediateAnswer(user, channel string, ack json.RawMessage) error {
	body := strings.TrimSpace(string(ack))
	if body == "" || body == "null" || body == "{}" {
		return nil
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(ack, &msg); err != nil {
		// A plain-text HTTP body is shown as an ephemeral message.
		msg = map[string]json.RawMessage{}
		text, _ := json.Marshal(body)
		msg["text"] = text
	}
	if _, hasText := msg["text"]; !hasText && msg["blocks"] == nil {
		return nil // e.g. {"response_type":"ephemeral"} alone: nothing to show
	}
	var text, responseType string
	_ = json.Unmarshal(msg["text"], &text)
	_ = json.Unmarshal(msg["response_type"], &responseType)
	p := params{"text": {text}}
	if b, ok := msg["blocks"]; ok && string(b) != "null" {
		p["blocks"] = []string{string(b)}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	reject := func(err error) error {
		var ae *apiError
		errors.As(err, &ae)
		return f.rejectLocked("immediate answer", ae.code, channel, strings.Join(ae.details, "; "))
	}
	m, err := f.buildMessage(p, maxPostText)
	if err != nil {
		return reject(err)
	}
	m.Channel, m.TS, m.User, m.BotID = channel, f.tsLocked(), BotUserID, BotID
	if responseType == "in_channel" {
		c, err := f.resolveChannelLocked(channel)
		if err != nil {
			return reject(err)
		}
		c.messages = append(c.messages, m)
		return nil
	}
	m.Ephemeral, m.Recipient = true, user
	f.ephemerals[user] = append(f.ephemerals[user], m)
	return nil
}

// target is the message a person acts on.
type target struct {
	msg       *Message
	ephemeral bool
}

func (f *Fake) targetLocked(user string, ref MessageRef) (target, error) {
	if m := f.messageLocked(ref.Channel, ref.TS); m != nil {
		return target{msg: m}, nil
	}
	for _, m := range f.ephemerals[user] {
		if m.Channel == ref.Channel && m.TS == ref.TS {
			return target{msg: m, ephemeral: true}, nil
		}
	}
	return target{}, fmt.Errorf("fakeslack: no message %s/%s visible to %s", ref.Channel, ref.TS, user)
}

func containerKey(ref MessageRef) string { return ref.Channel + "/" + ref.TS }

// stateLocked builds state.values for the message as user has set its menus
// and checkboxes (initial values where they did not).
func (f *Fake) stateLocked(user string, t target) map[string]any {
	values := map[string]any{}
	list, _ := decodeAny(t.msg.RawBlocks).([]any)
	elements(list, func(blockID string, el map[string]any) {
		typ, _ := el["type"].(string)
		actionID, _ := el["action_id"].(string)
		if !statefulTypes[typ] {
			return
		}
		var v any
		if raw, ok := f.state[stateKey{user, containerKey(t.msg.Ref()), blockID, actionID}]; ok {
			v = raw
		} else {
			v = initialState(typ, el)
		}
		bv, _ := values[blockID].(map[string]any)
		if bv == nil {
			bv = map[string]any{}
			values[blockID] = bv
		}
		bv[actionID] = v
	})
	return values
}

var statefulTypes = map[string]bool{"static_select": true, "multi_static_select": true, "checkboxes": true, "radio_buttons": true}

func multiType(typ string) bool { return typ == "multi_static_select" || typ == "checkboxes" }

func initialState(typ string, el map[string]any) map[string]any {
	if multiType(typ) {
		opts, _ := el["initial_options"].([]any)
		if opts == nil {
			opts = []any{}
		}
		return map[string]any{"type": typ, "selected_options": opts}
	}
	return map[string]any{"type": typ, "selected_option": el["initial_option"]}
}

func userObj(u *User) map[string]any {
	return map[string]any{"id": u.ID, "username": u.Name, "name": u.Name, "team_id": u.team()}
}

// blockActionsLocked builds the block_actions payload Slack sends when user
// acts on t.
func (f *Fake) blockActionsLocked(u *User, t target, action map[string]any) []byte {
	c := f.channels[t.msg.Channel]
	chName := t.msg.Channel
	if c != nil {
		chName = c.name
	}
	container := map[string]any{"type": "message", "message_ts": t.msg.TS, "channel_id": t.msg.Channel, "is_ephemeral": t.ephemeral}
	if t.msg.ThreadTS != "" {
		container["thread_ts"] = t.msg.ThreadTS
	}
	payload := map[string]any{
		"type":                  "block_actions",
		"user":                  userObj(u),
		"api_app_id":            AppID,
		"token":                 VerificationToken,
		"container":             container,
		"trigger_id":            f.newTriggerLocked(u.ID),
		"team":                  map[string]any{"id": TeamID, "domain": TeamDomain},
		"enterprise":            nil,
		"is_enterprise_install": false,
		"channel":               map[string]any{"id": t.msg.Channel, "name": chName},
		"state":                 map[string]any{"values": f.stateLocked(u.ID, t)},
		"actions":               []any{action},
		"response_url":          f.newResponseURLLocked(u.ID, t),
	}
	// Slack leaves the message out for ephemeral messages.
	if !t.ephemeral {
		payload["message"] = t.msg.wire()
	}
	out, _ := json.Marshal(payload)
	return out
}

// lockTarget takes f.mu and finds user and the message ref they act on,
// with its blocks decoded. On success the caller holds f.mu and must unlock
// it; on error it is already released.
func (f *Fake) lockTarget(user string, ref MessageRef) (*User, target, []any, error) {
	f.mu.Lock()
	u, err := f.userLocked(user)
	if err != nil {
		f.mu.Unlock()
		return nil, target{}, nil, err
	}
	t, err := f.targetLocked(user, ref)
	if err != nil {
		f.mu.Unlock()
		return nil, target{}, nil, err
	}
	list, _ := decodeAny(t.msg.RawBlocks).([]any)
	return u, t, list, nil
}

// Click presses the button labelled label in the current version of the
// message ref (a channel message or an ephemeral one shown to user) and
// returns once the app acked the block_actions.
func (f *Fake) Click(ctx context.Context, user string, ref MessageRef, label string) error {
	u, t, list, err := f.lockTarget(user, ref)
	if err != nil {
		return err
	}
	var found []map[string]any
	var blockIDs []string
	elements(list, func(blockID string, el map[string]any) {
		if el["type"] == "button" && textOf(el["text"]) == label {
			found = append(found, el)
			blockIDs = append(blockIDs, blockID)
		}
	})
	if len(found) != 1 {
		labels := t.msg.Buttons()
		f.mu.Unlock()
		if len(found) == 0 {
			return fmt.Errorf("fakeslack: click %q on %s/%s: no such button (buttons: %q)", label, ref.Channel, ref.TS, labels)
		}
		return fmt.Errorf("fakeslack: click %q on %s/%s: %d buttons have that label", label, ref.Channel, ref.TS, len(found))
	}
	el := found[0]
	action := map[string]any{"action_id": el["action_id"], "block_id": blockIDs[0], "text": el["text"],
		"type": "button", "action_ts": f.tsLocked()}
	for _, k := range []string{"value", "style", "url"} {
		if v, ok := el[k]; ok {
			action[k] = v
		}
	}
	payload := f.blockActionsLocked(u, t, action)
	f.mu.Unlock()
	if _, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload}); err != nil {
		return fmt.Errorf("fakeslack: click %q by %s on %s/%s: %w", label, user, ref.Channel, ref.TS, err)
	}
	return nil
}

// options lists an element's options, including those in option groups.
func options(el map[string]any) []map[string]any {
	var out []map[string]any
	add := func(x any) {
		list, _ := x.([]any)
		for _, o := range list {
			if om, ok := o.(map[string]any); ok {
				out = append(out, om)
			}
		}
	}
	add(el["options"])
	if groups, ok := el["option_groups"].([]any); ok {
		for _, g := range groups {
			if gm, ok := g.(map[string]any); ok {
				add(gm["options"])
			}
		}
	}
	return out
}

// pickOptions maps option labels (or values) to the element's options.
func pickOptions(el map[string]any, labels []string) ([]any, error) {
	opts := options(el)
	picked := make([]any, 0, len(labels))
	for _, l := range labels {
		i := slices.IndexFunc(opts, func(o map[string]any) bool { return textOf(o["text"]) == l })
		if i < 0 {
			i = slices.IndexFunc(opts, func(o map[string]any) bool { return o["value"] == l })
		}
		if i < 0 {
			var have []string
			for _, o := range opts {
				have = append(have, textOf(o["text"]))
			}
			return nil, fmt.Errorf("no option %q (options: %q)", l, have)
		}
		picked = append(picked, opts[i])
	}
	return picked, nil
}

// Select chooses options in a static_select, multi_static_select,
// checkboxes or radio_buttons element of the message ref, found by its
// action_id or its placeholder. Choices are remembered for user (they show
// up in state.values of later clicks) and the block_actions Slack sends on
// change is delivered. Checkboxes and multi-selects take the complete new
// selection. element may also be the block_id of the element's block, for
// messages where several menus share an action_id.
func (f *Fake) Select(ctx context.Context, user string, ref MessageRef, element string, optionLabels ...string) error {
	u, t, list, err := f.lockTarget(user, ref)
	if err != nil {
		return err
	}
	var el map[string]any
	var blockID string
	elements(list, func(bid string, e map[string]any) {
		typ, _ := e["type"].(string)
		if el == nil && statefulTypes[typ] && (e["action_id"] == element || textOf(e["placeholder"]) == element || bid == element) {
			el, blockID = e, bid
		}
	})
	fail := func(err error) error {
		return fmt.Errorf("fakeslack: select %q in %q by %s on %s/%s: %w", optionLabels, element, user, ref.Channel, ref.TS, err)
	}
	if el == nil {
		f.mu.Unlock()
		return fail(errors.New("no such menu or choice element"))
	}
	typ, _ := el["type"].(string)
	picked, err := pickOptions(el, optionLabels)
	if err == nil && !multiType(typ) && len(picked) != 1 {
		err = fmt.Errorf("%s takes exactly one option", typ)
	}
	if err != nil {
		f.mu.Unlock()
		return fail(err)
	}
	actionID, _ := el["action_id"].(string)
	state := map[string]any{"type": typ}
	action := map[string]any{"type": typ, "action_id": actionID, "block_id": blockID, "action_ts": f.tsLocked()}
	if multiType(typ) {
		state["selected_options"], action["selected_options"] = picked, picked
	} else {
		state["selected_option"], action["selected_option"] = picked[0], picked[0]
	}
	if ph, ok := el["placeholder"]; ok {
		action["placeholder"] = ph
	}
	raw, _ := json.Marshal(state)
	f.state[stateKey{user, containerKey(t.msg.Ref()), blockID, actionID}] = raw
	payload := f.blockActionsLocked(u, t, action)
	f.mu.Unlock()
	if _, err := f.deliver(ctx, delivery{typ: TypeInteractive, payload: payload}); err != nil {
		return fail(err)
	}
	return nil
}
