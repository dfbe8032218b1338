package fakeslack

import (
	"context"
	"net/http"
	"net/url"
	"slices"
)

// Faults of Slack's Web API, for tests of what the app does when a call
// hangs, fails with a 5xx, or is carried out while its answer is lost.

// Held is a Web API call the fake holds before handling it (see Hold).
type Held struct {
	fake    *Fake
	method  string
	match   func(Call) bool
	arrived chan struct{} // closed when a matching call is held
	release chan bool     // true: handle it; false: drop it unhandled
	call    Call
}

// Hold makes the next call to method that match accepts (any, when match
// is nil) wait in the fake, as a call to a slow Slack does, until Release
// or Drop. The app sees the call in flight: that is the moment a test
// kills or stops it. A held call still waiting when the fake closes is
// dropped.
func (f *Fake) Hold(method string, match func(Call) bool) *Held {
	h := &Held{fake: f, method: method, match: match, arrived: make(chan struct{}), release: make(chan bool, 1)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holds = append(f.holds, h)
	return h
}

// Wait blocks until the call is held and returns it as it arrived.
func (h *Held) Wait(ctx context.Context) (Call, error) {
	select {
	case <-h.arrived:
		return h.call, nil
	case <-ctx.Done():
		return Call{}, context.Cause(ctx)
	}
}

// Release lets the call go on: Slack carries it out, whether or not the
// app is still there to read the answer.
func (h *Held) Release() { h.release <- true }

// Drop ends the call without carrying it out, the way a request lost on
// the way to Slack ends: the connection closes with no answer.
func (h *Held) Drop() { h.release <- false }

// takeHoldLocked returns the hold waiting for this call, if any, and
// retires it.
func (f *Fake) takeHoldLocked(c Call) *Held {
	for i, h := range f.holds {
		if h.method == c.Method && (h.match == nil || h.match(c)) {
			f.holds = slices.Delete(f.holds, i, i+1)
			return h
		}
	}
	return nil
}

// hold parks a call that a Hold waits for; it reports whether to handle
// the call (false: drop it).
func (f *Fake) hold(method string, body []byte, p params) bool {
	f.mu.Lock()
	h := f.takeHoldLocked(Call{Method: method, Params: url.Values(p), Body: body, Time: f.now()})
	if h != nil {
		h.call = Call{Method: method, Params: url.Values(p), Body: body, Time: f.now()}
		close(h.arrived)
		f.notifyLocked()
	}
	f.mu.Unlock()
	if h == nil {
		return true
	}
	select {
	case handle := <-h.release:
		return handle
	case <-f.closing:
		return false
	}
}

// FailStatus makes the next n calls to method answer HTTP status (a 5xx:
// 500, 502, 503) without carrying them out, the way Slack answers while it
// is degraded.
func (f *Fake) FailStatus(method string, n, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failStatus[method] = &injectedStatus{left: n, status: status}
}

type injectedStatus struct {
	left, status int
}

// LoseAnswer makes the next call to method that match accepts (any, when
// match is nil) be carried out and its answer lost: the connection closes
// after Slack acted, the way a call that times out on the app's side after
// reaching Slack ends. The app cannot tell it from a call that never
// arrived.
func (f *Fake) LoseAnswer(method string, match func(Call) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseAnswer = append(f.loseAnswer, lostAnswer{method: method, match: match})
}

type lostAnswer struct {
	method string
	match  func(Call) bool
}

// injectedStatusLocked consumes one injected 5xx for method, recording the
// call; 0 means none.
func (f *Fake) injectedStatusLocked(method string, p params, body []byte) int {
	fs := f.failStatus[method]
	if fs == nil || fs.left <= 0 {
		return 0
	}
	fs.left--
	f.calls = append(f.calls, Call{Method: method, Params: url.Values(p), Body: body, Time: f.now(), Status: fs.status})
	f.notifyLocked()
	return fs.status
}

// loseAnswerLocked consumes the LoseAnswer that c matches, if any.
func (f *Fake) loseAnswerLocked(c Call) bool {
	for i, l := range f.loseAnswer {
		if l.method == c.Method && (l.match == nil || l.match(c)) {
			f.loseAnswer = slices.Delete(f.loseAnswer, i, i+1)
			return true
		}
	}
	return false
}

// hangUp closes the connection of w without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// Not hijackable (HTTP/2): the closest thing is a reset stream.
	panic(http.ErrAbortHandler)
}

// WaitCalls blocks until at least n calls to method have arrived.
func (f *Fake) WaitCalls(ctx context.Context, method string, n int) error {
	return f.waitFor(ctx, method+" calls", func() bool {
		got := 0
		for _, c := range f.calls {
			if c.Method == method {
				got++
			}
		}
		return got >= n
	})
}
