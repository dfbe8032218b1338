package fakeslack

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack answers every click on a message with a response_url: a POST of
// {"replace_original": true, "text": …, "blocks": …} to it replaces the
// message the click came from, up to ResponseURLUses times within
// ResponseURLTTL of the click. It spends no Web API budget (no chat.update
// token is taken) and is checked against the same limits as chat.update.
// After its uses or its time, Slack answers 404 with used_url or
// expired_url and changes nothing. A POST without replace_original posts
// a new message: ephemeral to the person who clicked, unless
// response_type is in_channel. Calls are recorded under the method name
// ResponseURLMethod, so FailNext, FailStatus and Hold reach them too.
const (
	ResponseURLUses   = 5
	ResponseURLTTL    = 30 * time.Minute
	ResponseURLMethod = "response_url"
)

// responseURL is one click's response_url.
type responseURL struct {
	channel, ts string // the message clicked
	user        string // who clicked
	ephemeral   bool
	created     time.Time
	uses        int
}

// newResponseURLLocked mints the response_url of a click by user on t.
func (f *Fake) newResponseURLLocked(user string, t target) string {
	id := f.idLocked("R")
	f.responses[id] = &responseURL{channel: t.msg.Channel, ts: t.msg.TS, user: user, ephemeral: t.ephemeral, created: f.now()}
	return f.srv.URL + "/actions/" + id
}

// serveResponseURL handles a POST to a response_url.
func (f *Fake) serveResponseURL(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, perr := parseParams(r, body)
	if !f.hold(ResponseURLMethod, body, p) {
		hangUp(w)
		return
	}
	f.mu.Lock()
	status := f.injectedStatusLocked(ResponseURLMethod, p, body)
	f.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return
	}
	code, out, m := f.respondLocked(strings.TrimPrefix(r.URL.Path, "/actions/"), p, perr, body)
	answer, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
	w.WriteHeader(code)
	_, _ = w.Write(answer)
	if m != nil && f.onMessage != nil {
		_ = http.NewResponseController(w).Flush()
		f.onMessage(ResponseURLMethod, *m)
	}
}

// respondLocked carries out one POST to response_url id (taking f.mu) and
// returns the HTTP status, the answer and, when a channel message changed,
// the message as it now stands.
func (f *Fake) respondLocked(id string, p params, perr error, body []byte) (int, map[string]any, *Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.notifyLocked()
	call := Call{Method: ResponseURLMethod, Params: url.Values(p), Body: body, Time: f.now(), Status: http.StatusOK}
	answer := func(status int, code string) (int, map[string]any, *Message) {
		call.Status, call.Error = status, code
		f.calls = append(f.calls, call)
		if code == "" {
			return status, map[string]any{"ok": true}, nil
		}
		return status, map[string]any{"ok": false, "error": code}, nil
	}
	if fl := f.failNext[ResponseURLMethod]; fl != nil && fl.left > 0 {
		fl.left--
		return answer(http.StatusNotFound, fl.code)
	}
	u := f.responses[id]
	switch {
	case u == nil:
		return answer(http.StatusNotFound, "invalid_url")
	case f.now().Sub(u.created) > ResponseURLTTL:
		return answer(http.StatusNotFound, "expired_url")
	case u.uses >= ResponseURLUses:
		return answer(http.StatusNotFound, "used_url")
	}
	u.uses++
	if perr != nil {
		return f.refuseResponseLocked(call, fail("invalid_payload", perr.Error()))
	}
	if p.get("delete_original") == "true" {
		return f.refuseResponseLocked(call, fail("invalid_payload", "fakeslack does not model delete_original"))
	}
	if p.get("replace_original") != "true" {
		m, err := f.buildMessage(p, maxPostText)
		if err != nil {
			return f.refuseResponseLocked(call, err)
		}
		m.Channel, m.TS, m.User, m.BotID = u.channel, f.tsLocked(), BotUserID, BotID
		if p.get("response_type") == "in_channel" {
			c := f.channels[u.channel]
			m.ThreadTS = f.threadRootLocked(u.channel, p.get("thread_ts"))
			c.messages = append(c.messages, m)
		} else {
			m.Ephemeral, m.Recipient = true, u.user
			f.ephemerals[u.user] = append(f.ephemerals[u.user], m)
		}
		return answer(http.StatusOK, "")
	}
	m := f.respondTargetLocked(u)
	if m == nil {
		return answer(http.StatusNotFound, "message_not_found")
	}
	text := p.get("text")
	if utf8.RuneCountInString(text) > maxUpdateText {
		return f.refuseResponseLocked(call, fail("msg_too_long", fmt.Sprintf("text: %d > %d chars", utf8.RuneCountInString(text), maxUpdateText)))
	}
	blocks := p.get("blocks")
	if blocks == "null" {
		blocks = ""
	}
	if err := f.applyEditLocked(m, text, blocks, true, false); err != nil {
		return f.refuseResponseLocked(call, err)
	}
	m.Replaced++
	status, out, _ := answer(http.StatusOK, "")
	if m.Ephemeral {
		return status, out, nil
	}
	shown := m.clone()
	return status, out, &shown
}

// respondTargetLocked is the message a response_url replaces.
func (f *Fake) respondTargetLocked(u *responseURL) *Message {
	if !u.ephemeral {
		return f.messageLocked(u.channel, u.ts)
	}
	for _, m := range f.ephemerals[u.user] {
		if m.Channel == u.channel && m.TS == u.ts {
			return m
		}
	}
	return nil
}

// refuseResponseLocked answers a POST whose message Slack would refuse,
// recording it as a rejection like a refused Web API call.
func (f *Fake) refuseResponseLocked(call Call, err error) (int, map[string]any, *Message) {
	ae, _ := err.(*apiError)
	if ae == nil {
		ae = &apiError{code: "internal_error", details: []string{err.Error()}}
	}
	call.Status, call.Error = http.StatusBadRequest, ae.code
	f.calls = append(f.calls, call)
	rej := Rejection{Method: ResponseURLMethod, Error: ae.code, Details: ae.details, Params: call.Params}
	f.rejections = append(f.rejections, rej)
	if !f.allowRejections {
		f.tb.Errorf("fakeslack: rejected %s", rej)
	}
	return http.StatusBadRequest, map[string]any{"ok": false, "error": ae.code}, nil
}

// ResponseURLFor mints the response_url a click by user on the message
// ref would carry, without delivering a click: for tests of the sender
// alone. It returns "" when the message is not there.
func (f *Fake) ResponseURLFor(user string, ref MessageRef) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.targetLocked(user, ref)
	if err != nil {
		return ""
	}
	return f.newResponseURLLocked(user, t)
}
