package fakeslack

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// MessageRef points at one message.
type MessageRef struct {
	Channel string
	TS      string
}

// Message is the latest version of a message in a channel (or an ephemeral
// message shown to one person).
type Message struct {
	Channel   string
	TS        string
	ThreadTS  string // the parent's ts for replies; "" for top-level messages
	User      string // author: BotUserID for the app's posts, else the person
	BotID     string // BotID for the app's posts
	Text      string
	Blocks    []slack.Block   // decoded with slack-go
	RawBlocks json.RawMessage // blocks exactly as last sent; nil when none
	Updated   int             // how many times chat.update replaced it
	Replaced  int             // how many times a click's response_url replaced it
	Posted    time.Time
	Edited    time.Time
	Ephemeral bool
	Recipient string // who sees an ephemeral message
	Files     []File
}

// Ref returns the message's channel and ts.
func (m Message) Ref() MessageRef { return MessageRef{Channel: m.Channel, TS: m.TS} }

// FromBot reports whether the app posted the message.
func (m Message) FromBot() bool { return m.BotID != "" }

// Buttons returns the visible labels of every button in the message, in order.
func (m Message) Buttons() []string { return buttonLabels(m.RawBlocks) }

// HasText reports whether substr occurs in the text or in any text of the
// blocks (sections, fields, context, headers, buttons, options, rich text).
func (m Message) HasText(substr string) bool {
	return strings.Contains(m.Text, substr) || blocksContain(m.RawBlocks, substr)
}

// AllText is the text and every block text, one per line; handy in failure
// messages.
func (m Message) AllText() string {
	return strings.Join(append([]string{m.Text}, texts(m.RawBlocks)...), "\n")
}

func (m *Message) clone() Message {
	c := *m
	c.Blocks = slices.Clone(m.Blocks)
	c.Files = slices.Clone(m.Files)
	return c
}

// File is an uploaded file shared in a channel (and thread).
type File struct {
	ID       string
	Name     string
	Title    string
	Content  []byte
	Channel  string
	ThreadTS string
	Comment  string
	Uploaded time.Time
	complete bool
}

// View is a modal the app opened.
type View struct {
	ID              string
	User            string
	Type            string // "modal"
	CallbackID      string
	PrivateMetadata string
	Hash            string
	Title           string
	Request         slack.ModalViewRequest // decoded
	Raw             json.RawMessage        // the view as the app sent it, with block ids filled in
}

// HasText reports whether substr occurs anywhere in the view's texts.
func (v View) HasText(substr string) bool { return blocksContain(v.Raw, substr) }

// Buttons returns the visible labels of every button in the view.
func (v View) Buttons() []string {
	var obj struct {
		Blocks json.RawMessage `json:"blocks"`
	}
	_ = json.Unmarshal(v.Raw, &obj)
	return buttonLabels(obj.Blocks)
}

// Messages returns the latest version of every message in channel, oldest
// first, replies included.
func (f *Fake) Messages(channel string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.channels[channel]
	if !ok {
		return nil
	}
	out := make([]Message, 0, len(c.messages))
	for _, m := range c.messages {
		out = append(out, m.clone())
	}
	return out
}

// Message returns one message by reference.
func (f *Fake) Message(ref MessageRef) (Message, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.messageLocked(ref.Channel, ref.TS)
	if m == nil {
		return Message{}, false
	}
	return m.clone(), true
}

// Thread returns the parent message ts and its replies, oldest first.
func (f *Fake) Thread(channel, ts string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.threadLocked(channel, ts)
}

func (f *Fake) threadLocked(channel, ts string) []Message {
	c, ok := f.channels[channel]
	if !ok {
		return nil
	}
	var out []Message
	for _, m := range c.messages {
		if m.TS == ts || m.ThreadTS == ts {
			out = append(out, m.clone())
		}
	}
	return out
}

// Ephemerals returns the ephemeral messages shown to user, oldest first.
func (f *Fake) Ephemerals(user string) []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Message, 0, len(f.ephemerals[user]))
	for _, m := range f.ephemerals[user] {
		out = append(out, m.clone())
	}
	return out
}

// Files returns the files shared in channel; with a non-empty thread only
// those shared in that thread.
func (f *Fake) Files(channel, thread string) []File {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []File
	for _, fl := range f.files {
		if fl.Channel == channel && (thread == "" || fl.ThreadTS == thread) {
			c := *fl
			c.Content = slices.Clone(fl.Content)
			out = append(out, c)
		}
	}
	return out
}

// WaitMessage blocks until some message in any channel satisfies match and
// returns its latest version.
func (f *Fake) WaitMessage(ctx context.Context, match func(Message) bool) (Message, error) {
	var found Message
	err := f.waitFor(ctx, "a matching message", func() bool {
		for _, c := range f.channels {
			for _, m := range c.messages {
				if cm := m.clone(); match(cm) {
					found = cm
					return true
				}
			}
		}
		return false
	})
	return found, err
}

// WaitThread blocks until the thread (channel, ts) holds a message that
// satisfies match.
func (f *Fake) WaitThread(ctx context.Context, channel, ts string, match func(Message) bool) (Message, error) {
	var found Message
	err := f.waitFor(ctx, "a matching message in thread "+ts, func() bool {
		for _, m := range f.threadLocked(channel, ts) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found, err
}

// WaitEphemeral blocks until user was shown an ephemeral message that
// satisfies match.
func (f *Fake) WaitEphemeral(ctx context.Context, user string, match func(Message) bool) (Message, error) {
	var found Message
	err := f.waitFor(ctx, "an ephemeral message for "+user, func() bool {
		for _, m := range f.ephemerals[user] {
			if cm := m.clone(); match(cm) {
				found = cm
				return true
			}
		}
		return false
	})
	return found, err
}

// WaitFile blocks until a file satisfying match was shared.
func (f *Fake) WaitFile(ctx context.Context, match func(File) bool) (File, error) {
	var found File
	err := f.waitFor(ctx, "a matching file", func() bool {
		for _, fl := range f.files {
			c := *fl
			c.Content = slices.Clone(fl.Content)
			if match(c) {
				found = c
				return true
			}
		}
		return false
	})
	return found, err
}

// OpenView returns the modal open for user, if any.
func (f *Fake) OpenView(user string) (View, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.open[user]
	if !ok {
		return View{}, false
	}
	return *f.views[id], true
}

// WaitView blocks until the modal open for user satisfies every match
// (any open modal when there is none) and returns it.
func (f *Fake) WaitView(ctx context.Context, user string, match ...func(View) bool) (View, error) {
	var found View
	err := f.waitFor(ctx, "a modal for "+user, func() bool {
		id, ok := f.open[user]
		if !ok {
			return false
		}
		v := *f.views[id]
		for _, m := range match {
			if !m(v) {
				return false
			}
		}
		found = v
		return true
	})
	return found, err
}

// Text matches messages or views whose texts contain substr; for WaitMessage.
func Text(substr string) func(Message) bool {
	return func(m Message) bool { return m.HasText(substr) }
}

// All matches when every predicate matches.
func All(ps ...func(Message) bool) func(Message) bool {
	return func(m Message) bool {
		for _, p := range ps {
			if !p(m) {
				return false
			}
		}
		return true
	}
}

func (f *Fake) messageLocked(channel, ts string) *Message {
	c, ok := f.channels[channel]
	if !ok {
		return nil
	}
	for _, m := range c.messages {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

// walk calls fn for every JSON object inside raw, depth first.
func walk(x any, fn func(map[string]any)) {
	switch v := x.(type) {
	case map[string]any:
		fn(v)
		for _, k := range sortedKeys(v) {
			walk(v[k], fn)
		}
	case []any:
		for _, e := range v {
			walk(e, fn)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func decodeAny(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var x any
	if err := json.Unmarshal(raw, &x); err != nil {
		return nil
	}
	return x
}

// texts collects every "text" string in raw (text objects and rich text).
func texts(raw json.RawMessage) []string {
	var out []string
	walk(decodeAny(raw), func(o map[string]any) {
		if s, ok := o["text"].(string); ok {
			out = append(out, s)
		}
	})
	return out
}

func blocksContain(raw json.RawMessage, substr string) bool {
	return slices.ContainsFunc(texts(raw), func(s string) bool { return strings.Contains(s, substr) })
}

// elements calls fn for every interactive element in a block list, with the
// id of the block holding it, in document order.
func elements(blocks []any, fn func(blockID string, el map[string]any)) {
	for _, b := range blocks {
		bm, ok := b.(map[string]any)
		if !ok {
			continue
		}
		id, _ := bm["block_id"].(string)
		if els, ok := bm["elements"].([]any); ok && bm["type"] != "rich_text" && bm["type"] != "context" {
			for _, e := range els {
				if em, ok := e.(map[string]any); ok {
					fn(id, em)
				}
			}
		}
		for _, key := range []string{"accessory", "element"} {
			if em, ok := bm[key].(map[string]any); ok {
				fn(id, em)
			}
		}
	}
}

func textOf(x any) string {
	if m, ok := x.(map[string]any); ok {
		s, _ := m["text"].(string)
		return s
	}
	return ""
}

func buttonLabels(raw json.RawMessage) []string {
	list, _ := decodeAny(raw).([]any)
	var out []string
	elements(list, func(_ string, el map[string]any) {
		if el["type"] == "button" {
			out = append(out, textOf(el["text"]))
		}
	})
	return out
}
