package fakeslack

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Envelope types, as Socket Mode names them.
const (
	TypeEventsAPI     = "events_api"
	TypeInteractive   = "interactive"
	TypeSlashCommands = "slash_commands"
)

// HTTP paths the fake posts to in HTTP mode, relative to the base URL given
// to UseHTTP.
const (
	DefaultEventsPath      = "/slack/events"
	DefaultInteractivePath = "/slack/interactive"
	DefaultCommandsPath    = "/slack/commands"
)

var httpPaths = map[string]string{TypeEventsAPI: DefaultEventsPath, TypeInteractive: DefaultInteractivePath, TypeSlashCommands: DefaultCommandsPath}

// envelope is one Socket Mode delivery waiting for its ack.
type envelope struct {
	id    string
	acked chan json.RawMessage // buffered; receives the ack payload
}

// delivery is something Slack sends the app: an event, an interaction or a
// slash command, in both transports' shapes.
type delivery struct {
	typ         string
	payload     []byte     // JSON: the Socket Mode payload and the HTTP events body / interactive payload
	form        url.Values // slash commands over HTTP
	retryNum    int
	retryReason string
}

type sentEvent struct {
	payload []byte
	retries int
}

type socketConn struct {
	ws        *websocket.Conn
	number    int
	writeMu   sync.Mutex
	done      chan struct{}
	closeOnce sync.Once
	draining  bool // guarded by Fake.mu: sent a disconnect, takes no new envelopes
}

func (c *socketConn) write(msgType int, data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if err := c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	return c.ws.WriteMessage(msgType, data)
}

func (c *socketConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *socketConn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com, which the default check rejects.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveSocket is the Socket Mode websocket: hello, pings, envelopes out,
// acks in. The handler goroutine reads until the connection ends.
func (f *Fake) serveSocket(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	select {
	case <-f.closing:
		f.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	default:
	}
	// Added under f.mu before Close can start waiting, so Close always waits
	// for this handler even after the connection is hijacked.
	f.wg.Add(1)
	f.mu.Unlock()
	defer f.wg.Done()

	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &socketConn{ws: ws, done: make(chan struct{})}
	defer c.close()

	f.mu.Lock()
	f.connCount++
	c.number = f.connCount
	hello, _ := json.Marshal(map[string]any{
		"type":            "hello",
		"num_connections": len(f.conns) + 1,
		"debug_info":      map[string]any{"host": "fakeslack", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID},
	})
	f.mu.Unlock()
	// hello goes out before the connection is visible to deliveries, so it is
	// always the first frame.
	if err := c.write(websocket.TextMessage, hello); err != nil {
		return
	}
	f.mu.Lock()
	select {
	case <-f.closing:
		// Close already took its snapshot of f.conns and would not see this one.
		f.mu.Unlock()
		return
	default:
	}
	f.conns = append(f.conns, c)
	f.notifyLocked()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		for i, x := range f.conns {
			if x == c {
				f.conns = append(f.conns[:i], f.conns[i+1:]...)
				break
			}
		}
		f.notifyLocked()
		f.mu.Unlock()
	}()

	f.wg.Go(func() { f.ping(c) })
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		f.receiveAck(data)
	}
}

func (f *Fake) ping(c *socketConn) {
	t := time.NewTicker(f.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-f.closing:
			return
		case <-t.C:
			c.writeMu.Lock()
			err := c.ws.WriteControl(websocket.PingMessage, []byte("fakeslack"), time.Now().Add(5*time.Second))
			c.writeMu.Unlock()
			if err != nil {
				c.close()
				return
			}
		}
	}
}

func (f *Fake) receiveAck(data []byte) {
	var ack struct {
		EnvelopeID string          `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		f.recordFailure(DeliveryFailure{Type: "ack", Reason: fmt.Sprintf("unreadable frame from app: %q", data)})
		return
	}
	if ack.EnvelopeID == "" {
		return // an "ack" of hello or disconnect, which carry no envelope; Slack ignores it
	}
	f.mu.Lock()
	env, ok := f.pending[ack.EnvelopeID]
	if ok {
		delete(f.pending, ack.EnvelopeID)
	}
	late := f.abandoned[ack.EnvelopeID]
	delete(f.abandoned, ack.EnvelopeID)
	f.mu.Unlock()
	if late {
		return
	}
	if !ok {
		f.recordFailure(DeliveryFailure{Type: "ack", ID: ack.EnvelopeID, Reason: "ack for an unknown or already acked envelope"})
		return
	}
	env.acked <- ack.Payload
}

// Connections counts the Socket Mode connections accepted so far.
func (f *Fake) Connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connCount
}

// WaitConnected blocks until the app holds a Socket Mode connection that
// takes envelopes (in HTTP mode it returns at once).
func (f *Fake) WaitConnected(ctx context.Context) error {
	_, err := f.liveConn(ctx)
	return err
}

// WaitConnections blocks until n Socket Mode connections take envelopes:
// every replica of a run with several bots is connected.
func (f *Fake) WaitConnections(ctx context.Context, n int) error {
	return f.waitFor(ctx, fmt.Sprintf("%d Socket Mode connections", n), func() bool {
		live := 0
		for _, c := range f.conns {
			if !c.draining && c.alive() {
				live++
			}
		}
		return live >= n
	})
}

func (f *Fake) liveConn(ctx context.Context) (*socketConn, error) {
	var c *socketConn
	err := f.waitFor(ctx, "a Socket Mode connection", func() bool {
		if f.httpBase != "" {
			return true
		}
		var live []*socketConn
		for _, x := range f.conns {
			if !x.draining && x.alive() {
				live = append(live, x)
			}
		}
		if len(live) == 0 {
			return false
		}
		// Slack spreads envelopes over an app's connections (one per replica).
		f.rr++
		c = live[f.rr%len(live)]
		return true
	})
	return c, err
}

// Disconnect asks every connection to reconnect, as Slack does before it
// recycles a server ({"type":"disconnect","reason":"refresh_requested"}),
// and returns once the app has opened a new connection.
func (f *Fake) Disconnect(ctx context.Context) error {
	f.mu.Lock()
	var old []*socketConn
	for _, c := range f.conns {
		if !c.draining {
			c.draining = true
			old = append(old, c)
		}
	}
	f.notifyLocked()
	f.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": "refresh_requested",
		"debug_info": map[string]any{"host": "fakeslack"}})
	for _, c := range old {
		if err := c.write(websocket.TextMessage, msg); err != nil {
			c.close()
		}
	}
	_, err := f.liveConn(ctx)
	return err
}

// DropConnections closes every Socket Mode connection without warning, the
// way a network failure would.
func (f *Fake) DropConnections() {
	f.mu.Lock()
	conns := append([]*socketConn(nil), f.conns...)
	f.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// UseHTTP switches deliveries from Socket Mode to signed HTTP POSTs to the
// app at baseURL, signed with signingSecret.
func (f *Fake) UseHTTP(baseURL, signingSecret string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.httpBase, f.httpSecret = strings.TrimSuffix(baseURL, "/"), signingSecret
	f.notifyLocked()
}

// Sign computes Slack's v0 request signature for body sent at ts.
func Sign(secret string, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", ts.Unix())
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// deliver sends d over the current transport and returns the app's answer:
// the ack payload (Socket Mode) or the response body (HTTP).
func (f *Fake) deliver(ctx context.Context, d delivery) (json.RawMessage, error) {
	f.mu.Lock()
	base, secret, path := f.httpBase, f.httpSecret, httpPaths[d.typ]
	f.mu.Unlock()
	if base != "" {
		return f.deliverHTTP(ctx, base+path, secret, d)
	}
	return f.deliverSocket(ctx, d)
}

func (f *Fake) deliverSocket(ctx context.Context, d delivery) (json.RawMessage, error) {
	f.mu.Lock()
	env := &envelope{id: fmt.Sprintf("%08x-fake-%04d-envelope", f.nextLocked(), f.seq), acked: make(chan json.RawMessage, 1)}
	f.pending[env.id] = env
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if _, unacked := f.pending[env.id]; unacked {
			// A late ack of an envelope given up on (timeout, cancelled
			// context) is not a second failure.
			f.abandoned[env.id] = true
		}
		delete(f.pending, env.id)
		f.mu.Unlock()
	}()
	for attempt := 0; ; attempt++ {
		c, err := f.liveConn(ctx)
		if err != nil {
			return nil, err
		}
		frame := map[string]any{
			"envelope_id":              env.id,
			"type":                     d.typ,
			"payload":                  json.RawMessage(d.payload),
			"accepts_response_payload": d.typ != TypeEventsAPI,
		}
		if d.typ == TypeEventsAPI {
			frame["retry_attempt"] = d.retryNum + attempt
			frame["retry_reason"] = d.retryReason
		}
		data, err := json.Marshal(frame)
		if err != nil {
			return nil, fmt.Errorf("fakeslack: encode envelope: %w", err)
		}
		if err := c.write(websocket.TextMessage, data); err != nil {
			c.close() // its reader unregisters it; the next attempt waits for a new connection
			continue
		}
		timer := time.NewTimer(f.ackTimeout)
		select {
		case p := <-env.acked:
			timer.Stop()
			return p, nil
		case <-c.done:
			timer.Stop() // the connection died before the ack: Slack resends on the next one
		case <-timer.C:
			f.recordFailure(DeliveryFailure{Type: d.typ, ID: env.id, Reason: fmt.Sprintf("not acked within %s", f.ackTimeout)})
			return nil, fmt.Errorf("fakeslack: %s envelope %s not acked within %s", d.typ, env.id, f.ackTimeout)
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("fakeslack: %s envelope %s: %w", d.typ, env.id, ctx.Err())
		case <-f.closing:
			timer.Stop()
			return nil, fmt.Errorf("fakeslack: %s envelope %s: fake closed", d.typ, env.id)
		}
	}
}

func (f *Fake) deliverHTTP(ctx context.Context, target, secret string, d delivery) (json.RawMessage, error) {
	var body []byte
	contentType := "application/x-www-form-urlencoded"
	switch d.typ {
	case TypeEventsAPI:
		body, contentType = d.payload, "application/json"
	case TypeInteractive:
		body = []byte(url.Values{"payload": {string(d.payload)}}.Encode())
	default:
		body = []byte(d.form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("fakeslack: deliver %s: %w", d.typ, err)
	}
	now := time.Now()
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", Sign(secret, now, body))
	if d.retryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(d.retryNum))
		req.Header.Set("X-Slack-Retry-Reason", d.retryReason)
	}
	resp, err := f.httpClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fakeslack: deliver %s to %s: %w", d.typ, target, ctx.Err())
		}
		f.recordFailure(DeliveryFailure{Type: d.typ, ID: target, Reason: err.Error()})
		return nil, fmt.Errorf("fakeslack: deliver %s to %s: %w", d.typ, target, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("fakeslack: read answer to %s: %w", d.typ, err)
	}
	if resp.StatusCode != http.StatusOK {
		reason := fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(out)))
		f.recordFailure(DeliveryFailure{Type: d.typ, ID: target, Reason: reason})
		return nil, fmt.Errorf("fakeslack: deliver %s to %s: %w", d.typ, target, &HTTPStatusError{Code: resp.StatusCode, Body: string(out)})
	}
	return out, nil
}

// HTTPStatusError is the app's non-200 answer to an HTTP delivery.
type HTTPStatusError struct {
	Code int
	Body string
}

func (e *HTTPStatusError) Error() string { return fmt.Sprintf("app answered HTTP %d", e.Code) }

// RetryLastEvent delivers the last Events API event again, the way Slack
// retries when it did not get a timely ack: the same event_id, with
// X-Slack-Retry-Num / retry_attempt counting up and the given reason
// ("timeout", "http_error", ...).
func (f *Fake) RetryLastEvent(ctx context.Context, reason string) error {
	f.mu.Lock()
	last := f.lastEvent
	if last != nil {
		last.retries++
	}
	f.mu.Unlock()
	if last == nil {
		return errors.New("fakeslack: retry: no event was delivered yet")
	}
	_, err := f.deliver(ctx, delivery{typ: TypeEventsAPI, payload: last.payload, retryNum: last.retries, retryReason: reason})
	return err
}

// VerifyURL sends the url_verification challenge Slack sends when an Events
// API request URL is saved, and checks that the app echoes the challenge
// (as plain text or as {"challenge": ...}). HTTP mode only.
func (f *Fake) VerifyURL(ctx context.Context) error {
	f.mu.Lock()
	base, secret, path := f.httpBase, f.httpSecret, httpPaths[TypeEventsAPI]
	challenge := fmt.Sprintf("fakeslack-challenge-%d", f.nextLocked())
	f.mu.Unlock()
	if base == "" {
		return errors.New("fakeslack: url_verification needs HTTP mode (UseHTTP)")
	}
	payload, _ := json.Marshal(map[string]string{"token": VerificationToken, "challenge": challenge, "type": "url_verification"})
	out, err := f.deliverHTTP(ctx, base+path, secret, delivery{typ: TypeEventsAPI, payload: payload})
	if err != nil {
		return err
	}
	var obj struct {
		Challenge string `json:"challenge"`
	}
	if strings.TrimSpace(string(out)) == challenge || (json.Unmarshal(out, &obj) == nil && obj.Challenge == challenge) {
		return nil
	}
	return fmt.Errorf("fakeslack: url_verification: app answered %q, want the challenge %q", out, challenge)
}
