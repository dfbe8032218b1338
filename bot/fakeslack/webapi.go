package fakeslack

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
)

// Slack's own limits on top-level message text.
const (
	maxPostText   = 40000 // chat.postMessage truncates above this
	maxUpdateText = 4000  // chat.update answers msg_too_long above this
	maxViewBytes  = 250000
)

// apiError is a Web API failure: Slack's error code plus the details Slack
// puts in "errors" and response_metadata.messages.
type apiError struct {
	code    string
	details []string
	// notFound marks an answer about the workspace's state (the thread
	// asked for does not exist), not a call the app got wrong: it is not
	// a rejection.
	notFound bool
}

func (e *apiError) Error() string { return e.code }

func fail(code string, details ...string) error { return &apiError{code: code, details: details} }

// notFound is Slack's answer that what the call names does not exist.
func notFound(code string) error { return &apiError{code: code, notFound: true} }

// params are the arguments of one call, whatever the encoding.
type params url.Values

func (p params) get(k string) string { return url.Values(p).Get(k) }
func (p params) has(k string) bool   { _, ok := p[k]; return ok }

func (f *Fake) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", f.serveAPI)
	mux.HandleFunc("/upload/", f.serveUpload)
	mux.HandleFunc("/actions/", f.serveResponseURL)
	mux.HandleFunc("/socket", f.serveSocket)
	return mux
}

// parseParams reads form-encoded or JSON arguments. JSON objects and arrays
// become JSON strings, the way slack-go sends blocks in forms.
func parseParams(r *http.Request, body []byte) (params, error) {
	out := params{}
	for k, vs := range r.URL.Query() {
		out[k] = vs
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		if len(bytes.TrimSpace(body)) == 0 {
			return out, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, fmt.Errorf("invalid JSON body: %w", err)
		}
		for k, raw := range obj {
			var s string
			if err := json.Unmarshal(raw, &s); err == nil {
				out[k] = []string{s}
				continue
			}
			out[k] = []string{string(raw)}
		}
	default:
		vs, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("invalid form body: %w", err)
		}
		for k, v := range vs {
			out[k] = v
		}
	}
	return out, nil
}

func bearer(r *http.Request, p params) string {
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		return strings.TrimPrefix(h, "Bearer ")
	}
	return p.get("token")
}

func (f *Fake) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, perr := parseParams(r, body)
	if !f.hold(method, body, p) {
		hangUp(w)
		return
	}
	f.mu.Lock()
	status := f.injectedStatusLocked(method, p, body)
	lose := status == 0 && f.loseAnswerLocked(Call{Method: method, Params: url.Values(p), Body: body})
	f.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}

	out, retryAfter := f.handleCall(method, r, p, perr, body)
	if lose {
		hangUp(w)
		return
	}
	if retryAfter >= 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	// What json.Encoder writes, with its length: flushed for OnMessage, an
	// answer of unknown length goes out chunked, its closing chunk only
	// after the hook, and a client that read the answer and closed the
	// body meanwhile would lose its connection.
	answer, _ := json.Marshal(out)
	answer = append(answer, '\n')
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
	_, _ = w.Write(answer)
	if f.onMessage != nil {
		_ = http.NewResponseController(w).Flush() // the app has its answer before the hook runs
		f.notifyMessage(method, out)
	}
}

// notifyMessage hands the message a successful post or edit left to the
// OnMessage hook, if any.
func (f *Fake) notifyMessage(method string, out map[string]any) {
	if f.onMessage == nil || (method != "chat.postMessage" && method != "chat.update") || out["ok"] != true {
		return
	}
	channel, _ := out["channel"].(string)
	ts, _ := out["ts"].(string)
	if m, ok := f.Message(MessageRef{Channel: channel, TS: ts}); ok {
		f.onMessage(method, m)
	}
}

// handleCall runs one Web API call under f.mu (which it takes) and records it. It returns the
// JSON answer, or the Retry-After seconds (>= 0) of an injected rate limit.
func (f *Fake) handleCall(method string, r *http.Request, p params, perr error, body []byte) (map[string]any, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	call := Call{Method: method, Params: url.Values(p), Body: body, Time: f.now(), Status: http.StatusOK}
	if rl := f.rateLimits[method]; rl != nil && rl.left > 0 {
		rl.left--
		call.Status = http.StatusTooManyRequests
		f.calls = append(f.calls, call)
		return nil, int(math.Ceil(rl.retryAfter.Seconds()))
	}
	if fl := f.failNext[method]; fl != nil && fl.left > 0 {
		fl.left--
		call.Error = fl.code
		f.calls = append(f.calls, call)
		return map[string]any{"ok": false, "error": fl.code}, -1
	}
	if perr == nil {
		if after := f.overBudgetLocked(method, p); after >= 0 {
			call.Status = http.StatusTooManyRequests
			f.calls = append(f.calls, call)
			return nil, after
		}
	}
	var err error
	var res map[string]any
	if perr != nil {
		err = fail("invalid_form_data", perr.Error())
	} else {
		res, err = f.dispatchLocked(method, bearer(r, p), p)
	}
	out := map[string]any{"ok": true}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{code: "internal_error", details: []string{err.Error()}}
		}
		call.Error = ae.code
		out = map[string]any{"ok": false, "error": ae.code}
		if len(ae.details) > 0 {
			out["errors"] = ae.details
			msgs := make([]string, len(ae.details))
			for i, d := range ae.details {
				msgs[i] = "[ERROR] " + d
			}
			out["response_metadata"] = map[string]any{"messages": msgs}
		}
		if !ae.notFound {
			rej := Rejection{Method: method, Error: ae.code, Details: ae.details, Params: url.Values(p)}
			f.rejections = append(f.rejections, rej)
			if !f.allowRejections {
				f.tb.Errorf("fakeslack: rejected %s", rej)
			}
		}
	}
	for k, v := range res {
		out[k] = v
	}
	f.calls = append(f.calls, call)
	return out, -1
}

func (f *Fake) dispatchLocked(method, token string, p params) (map[string]any, error) {
	if token == "" {
		return nil, fail("not_authed")
	}
	if method == "apps.connections.open" {
		if token != AppToken {
			return nil, fail("invalid_auth")
		}
		return map[string]any{"url": "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/socket"}, nil
	}
	if token != BotToken {
		return nil, fail("invalid_auth")
	}
	switch method {
	case "auth.test":
		return map[string]any{"url": "https://" + TeamDomain + ".slack.com/", "team": "Fake Slack", "user": BotName,
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}, nil
	case "users.info":
		u, ok := f.users[p.get("user")]
		if !ok {
			return nil, fail("user_not_found")
		}
		return map[string]any{"user": userJSON(u)}, nil
	case "usergroups.users.list":
		members, ok := f.groups[p.get("usergroup")]
		if !ok {
			return nil, fail("no_such_subteam")
		}
		return map[string]any{"users": append([]string{}, members...)}, nil
	case "chat.postMessage":
		return f.postMessageLocked(p)
	case "chat.update":
		return f.updateMessageLocked(p)
	case "chat.postEphemeral":
		return f.postEphemeralLocked(p)
	case "conversations.open":
		return f.openConversationLocked(p)
	case "views.open":
		return f.openViewLocked(p)
	case "views.update":
		return f.updateViewLocked(p)
	case "views.publish":
		return f.publishViewLocked(p)
	case "files.getUploadURLExternal":
		n, err := strconv.Atoi(p.get("length"))
		if p.get("filename") == "" || err != nil || n <= 0 {
			return nil, fail("invalid_arguments", "filename and a positive length are required")
		}
		id := f.idLocked("F")
		f.uploads[id] = &File{ID: id, Name: p.get("filename")}
		return map[string]any{"upload_url": f.srv.URL + "/upload/" + id, "file_id": id}, nil
	case "files.completeUploadExternal":
		return f.completeUploadLocked(p)
	case "conversations.replies":
		return f.repliesLocked(p)
	case "conversations.history":
		return f.historyLocked(p)
	}
	return nil, fail("unknown_method")
}

// openConversationLocked opens (or finds) the bot's DM with one person, as
// conversations.open does for a single user; group DMs are not modelled.
func (f *Fake) openConversationLocked(p params) (map[string]any, error) {
	users := strings.Split(p.get("users"), ",")
	if p.get("users") == "" || len(users) != 1 {
		return nil, fail("invalid_arguments", "fakeslack opens DMs with exactly one user")
	}
	if _, ok := f.users[users[0]]; !ok || users[0] == BotUserID {
		return nil, fail("user_not_found")
	}
	c := f.dmLocked(users[0])
	return map[string]any{"channel": map[string]any{"id": c.id, "is_im": true, "user": users[0]}}, nil
}

func userJSON(u *User) map[string]any {
	out := map[string]any{"id": u.ID, "team_id": u.team(), "name": u.Name, "real_name": u.Name,
		"is_bot": u.ID == BotUserID, "deleted": false, "tz": "UTC", "is_stranger": u.external(),
		"profile": map[string]any{"display_name": u.Name, "real_name": u.Name, "team": u.team()}}
	if u.Enterprise != "" {
		out["enterprise_user"] = map[string]any{"id": u.ID, "enterprise_id": u.Enterprise, "teams": []string{u.team()}}
	}
	return out
}

func (m *Message) wire() map[string]any {
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "team": TeamID}
	if m.BotID != "" {
		out["bot_id"] = m.BotID
		out["app_id"] = AppID
	}
	out["user"] = m.User
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if len(m.RawBlocks) > 0 {
		out["blocks"] = m.RawBlocks
	}
	if m.Updated > 0 || m.Replaced > 0 {
		out["edited"] = map[string]any{"user": m.User, "ts": m.TS}
	}
	if len(m.Files) > 0 {
		files := make([]map[string]any, len(m.Files))
		for i, fl := range m.Files {
			files[i] = map[string]any{"id": fl.ID, "name": fl.Name, "title": fl.Title, "size": len(fl.Content)}
		}
		out["files"] = files
	}
	return out
}

// decodeMessageBlocks parses the blocks argument and checks the message
// against Slack's limits with the blocks package's validator.
func decodeMessageBlocks(text, raw string) (json.RawMessage, []slack.Block, error) {
	var bs slack.Blocks
	if err := json.Unmarshal([]byte(raw), &bs); err != nil {
		return nil, nil, fail("invalid_blocks", "blocks: "+err.Error())
	}
	if err := blocks.ValidateMessage(text, bs.BlockSet); err != nil {
		return nil, nil, fail("invalid_blocks", problems(err)...)
	}
	return json.RawMessage(raw), bs.BlockSet, nil
}

func problems(err error) []string {
	var ve *blocks.ValidationError
	if errors.As(err, &ve) && len(ve.Problems) > 0 {
		return ve.Problems
	}
	return []string{err.Error()}
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// resolveChannelLocked accepts a channel id, or a user id (Slack posts to
// the DM with that user).
func (f *Fake) resolveChannelLocked(id string) (*channel, error) {
	if c, ok := f.channels[id]; ok {
		return c, nil
	}
	if _, ok := f.users[id]; ok && id != BotUserID {
		return f.dmLocked(id), nil
	}
	return nil, fail("channel_not_found")
}

// threadRootLocked maps a thread_ts that names a reply to its parent, as
// Slack does.
func (f *Fake) threadRootLocked(channel, ts string) string {
	if ts == "" {
		return ""
	}
	if m := f.messageLocked(channel, ts); m != nil && m.ThreadTS != "" {
		return m.ThreadTS
	}
	return ts
}

// buildMessage reads text and blocks of a post; Slack truncates long text.
func (f *Fake) buildMessage(p params, textLimit int) (*Message, error) {
	text := truncateRunes(p.get("text"), textLimit)
	m := &Message{Text: text, Posted: f.now()}
	if raw := p.get("blocks"); raw != "" {
		rb, bs, err := decodeMessageBlocks(text, raw)
		if err != nil {
			return nil, err
		}
		m.RawBlocks, m.Blocks = rb, bs
	}
	if text == "" && len(m.Blocks) == 0 {
		return nil, fail("no_text")
	}
	return m, nil
}

func (f *Fake) postMessageLocked(p params) (map[string]any, error) {
	c, err := f.resolveChannelLocked(p.get("channel"))
	if err != nil {
		return nil, err
	}
	m, err := f.buildMessage(p, maxPostText)
	if err != nil {
		return nil, err
	}
	m.Channel, m.TS, m.User, m.BotID = c.id, f.tsLocked(), BotUserID, BotID
	m.ThreadTS = f.threadRootLocked(c.id, p.get("thread_ts"))
	c.messages = append(c.messages, m)
	return map[string]any{"channel": c.id, "ts": m.TS, "message": m.wire()}, nil
}

func (f *Fake) updateMessageLocked(p params) (map[string]any, error) {
	m := f.messageLocked(p.get("channel"), p.get("ts"))
	if m == nil {
		return nil, fail("message_not_found")
	}
	if m.BotID == "" {
		return nil, fail("cant_update_message")
	}
	text := m.Text
	if p.has("text") {
		text = p.get("text")
	}
	if utf8.RuneCountInString(text) > maxUpdateText {
		return nil, fail("msg_too_long", fmt.Sprintf("text: %d > %d chars", utf8.RuneCountInString(text), maxUpdateText))
	}
	if err := f.applyEditLocked(m, text, p.get("blocks"), p.has("blocks"), true); err != nil {
		return nil, err
	}
	return map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text, "message": m.wire()}, nil
}

// applyEditLocked replaces a message's text and, when given, its blocks;
// without blocks Slack keeps the previous ones. byUpdate counts the edit
// as chat.update's (Updated), not a response_url's.
func (f *Fake) applyEditLocked(m *Message, text, rawBlocks string, hasBlocks, byUpdate bool) error {
	rb, bs := m.RawBlocks, m.Blocks
	if hasBlocks {
		rb, bs = nil, nil
		if rawBlocks != "" && rawBlocks != "[]" {
			var err error
			if rb, bs, err = decodeMessageBlocks(text, rawBlocks); err != nil {
				return err
			}
		}
	} else if len(rb) > 0 {
		if _, _, err := decodeMessageBlocks(text, string(rb)); err != nil {
			return err
		}
	}
	if text == "" && len(bs) == 0 {
		return fail("no_text")
	}
	m.Text, m.RawBlocks, m.Blocks = text, rb, bs
	if byUpdate {
		m.Updated++
	}
	m.Edited = f.now()
	return nil
}

func (f *Fake) postEphemeralLocked(p params) (map[string]any, error) {
	c, err := f.resolveChannelLocked(p.get("channel"))
	if err != nil {
		return nil, err
	}
	user := p.get("user")
	if _, ok := f.users[user]; !ok {
		return nil, fail("user_not_found")
	}
	m, err := f.buildMessage(p, maxPostText)
	if err != nil {
		return nil, err
	}
	m.Channel, m.TS, m.User, m.BotID = c.id, f.tsLocked(), BotUserID, BotID
	m.ThreadTS = f.threadRootLocked(c.id, p.get("thread_ts"))
	m.Ephemeral, m.Recipient = true, user
	f.ephemerals[user] = append(f.ephemerals[user], m)
	return map[string]any{"message_ts": m.TS}, nil
}

func (f *Fake) completeUploadLocked(p params) (map[string]any, error) {
	var list []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if err := json.Unmarshal([]byte(p.get("files")), &list); err != nil || len(list) == 0 {
		return nil, fail("invalid_arguments", "files must be a JSON array of {id, title}")
	}
	var c *channel
	if id := p.get("channel_id"); id != "" {
		var err error
		if c, err = f.resolveChannelLocked(id); err != nil {
			return nil, err
		}
	}
	var shared []File
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		fl, ok := f.uploads[it.ID]
		if !ok || !fl.complete {
			return nil, fail("file_not_found", "file "+it.ID+" was not uploaded")
		}
		delete(f.uploads, it.ID)
		fl.Title, fl.Comment, fl.Uploaded = it.Title, p.get("initial_comment"), f.now()
		if fl.Title == "" {
			fl.Title = fl.Name
		}
		if c != nil {
			fl.Channel = c.id
			fl.ThreadTS = f.threadRootLocked(c.id, p.get("thread_ts"))
		}
		f.files = append(f.files, fl)
		shared = append(shared, *fl)
		out = append(out, map[string]any{"id": fl.ID, "title": fl.Title})
	}
	if c != nil {
		m := &Message{Channel: c.id, TS: f.tsLocked(), User: BotUserID, BotID: BotID, Text: p.get("initial_comment"),
			ThreadTS: f.threadRootLocked(c.id, p.get("thread_ts")), Posted: f.now(), Files: shared}
		c.messages = append(c.messages, m)
	}
	return map[string]any{"files": out}, nil
}

// serveUpload takes the bytes of an external upload (multipart field
// "file", or the raw body).
func (f *Fake) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/")
	if r.Header.Get("Authorization") != "Bearer "+BotToken && r.Header.Get("Authorization") != "" {
		http.Error(w, "invalid_auth", http.StatusUnauthorized)
		return
	}
	var content []byte
	var err error
	if ct, ps, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); strings.HasPrefix(ct, "multipart/") {
		content, err = readMultipartFile(multipart.NewReader(r.Body, ps["boundary"]))
	} else {
		content, err = io.ReadAll(r.Body)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fl, ok := f.uploads[id]
	if !ok {
		http.Error(w, "unknown upload", http.StatusNotFound)
		return
	}
	fl.Content, fl.complete = content, true
	f.notifyLocked()
	sum := sha256.Sum256(content)
	_, _ = fmt.Fprintf(w, "OK - %d %s", len(content), hex.EncodeToString(sum[:4]))
}

func readMultipartFile(mr *multipart.Reader) ([]byte, error) {
	for {
		part, err := mr.NextPart()
		if err != nil {
			return nil, fmt.Errorf("no file part: %w", err)
		}
		if part.FormName() == "file" || part.FileName() != "" {
			return io.ReadAll(part)
		}
	}
}

// repliesLocked answers conversations.replies: the thread's parent and
// replies, oldest first, limit a page (Slack's default 1000), continued
// with the next_cursor it returns.
func (f *Fake) repliesLocked(p params) (map[string]any, error) {
	c, err := f.resolveChannelLocked(p.get("channel"))
	if err != nil {
		return nil, err
	}
	thread := f.threadLocked(c.id, p.get("ts"))
	if len(thread) == 0 {
		return nil, notFound("thread_not_found")
	}
	limit, _ := strconv.Atoi(p.get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	from, _ := strconv.Atoi(p.get("cursor"))
	if from < 0 || from > len(thread) {
		return nil, fail("invalid_cursor")
	}
	to := min(from+limit, len(thread))
	msgs := make([]any, 0, to-from)
	for i := range thread[from:to] {
		msgs = append(msgs, thread[from+i].wire())
	}
	out := map[string]any{"messages": msgs, "has_more": to < len(thread)}
	if to < len(thread) {
		out["response_metadata"] = map[string]any{"next_cursor": strconv.Itoa(to)}
	}
	return out, nil
}

// historyLocked answers conversations.history: a channel's top-level
// messages newer than oldest (exclusive), newest first, paged by cursor.
func (f *Fake) historyLocked(p params) (map[string]any, error) {
	c, err := f.resolveChannelLocked(p.get("channel"))
	if err != nil {
		return nil, err
	}
	oldest := p.get("oldest")
	var top []*Message
	for i := len(c.messages) - 1; i >= 0; i-- {
		m := c.messages[i]
		if (m.ThreadTS == "" || m.ThreadTS == m.TS) && (oldest == "" || tsLess(oldest, m.TS)) {
			top = append(top, m)
		}
	}
	limit, _ := strconv.Atoi(p.get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	from, _ := strconv.Atoi(p.get("cursor"))
	if from < 0 || from > len(top) {
		return nil, fail("invalid_cursor")
	}
	to := min(from+limit, len(top))
	msgs := make([]any, 0, to-from)
	for _, m := range top[from:to] {
		msgs = append(msgs, m.wire())
	}
	out := map[string]any{"messages": msgs, "has_more": to < len(top)}
	if to < len(top) {
		out["response_metadata"] = map[string]any{"next_cursor": strconv.Itoa(to)}
	}
	return out, nil
}

// tsLess orders two Slack timestamps ("seconds.micros") numerically.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	return af < bf
}
