package bot

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// mentionBody is an app_mention event_callback as Slack posts it.
func mentionBody(eventID, ts string) []byte {
	return []byte(`{"token":"x","team_id":"T0FAKE","api_app_id":"A0FAKE","type":"event_callback","event_id":"` + eventID + `","event_time":1700000000,` +
		`"event":{"type":"app_mention","user":"U1","text":"<@U0BOT> rm -rf /","ts":"` + ts + `","channel":"C1","event_ts":"` + ts + `"}}`)
}

func TestHTTPRequestsMustBeSignedBySlack(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{})
	now := time.Now()
	tests := []struct {
		name   string
		path   string
		body   []byte
		sign   func(body []byte) (ts, sig string)
		status int
	}{
		{
			name: "missing signature is refused",
			path: "/slack/events", body: mentionBody("Ev1", "1700000001.000001"),
			sign:   func([]byte) (string, string) { return strconv.FormatInt(now.Unix(), 10), "" },
			status: http.StatusUnauthorized,
		},
		{
			name: "signature with the wrong secret is refused",
			path: "/slack/events", body: mentionBody("Ev2", "1700000002.000001"),
			sign: func(b []byte) (string, string) {
				return strconv.FormatInt(now.Unix(), 10), fakeslack.Sign("not-the-secret", now, b)
			},
			status: http.StatusUnauthorized,
		},
		{
			name: "signature over another body is refused",
			path: "/slack/interactive", body: []byte("payload=%7B%7D"),
			sign: func([]byte) (string, string) {
				return strconv.FormatInt(now.Unix(), 10), fakeslack.Sign(testSecret, now, []byte("payload=other"))
			},
			status: http.StatusUnauthorized,
		},
		{
			name: "stale timestamp is refused even when correctly signed",
			path: "/slack/events", body: mentionBody("Ev3", "1700000003.000001"),
			sign: func(b []byte) (string, string) {
				old := now.Add(-6 * time.Minute)
				return strconv.FormatInt(old.Unix(), 10), fakeslack.Sign(testSecret, old, b)
			},
			status: http.StatusUnauthorized,
		},
		{
			name: "oversized body is refused before it is verified",
			path: "/slack/commands", body: bytes.Repeat([]byte("a"), maxBodyBytes+1),
			sign: func(b []byte) (string, string) {
				return strconv.FormatInt(now.Unix(), 10), fakeslack.Sign(testSecret, now, b)
			},
			status: http.StatusRequestEntityTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, sig := tt.sign(tt.body)
			req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, h.base+tt.path, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			if sig != "" {
				req.Header.Set("X-Slack-Signature", sig)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.status)
			}
		})
	}
	// None of the refused mentions started anything.
	for _, ts := range []string{"1700000001.000001", "1700000002.000001", "1700000003.000001"} {
		if _, err := h.st.SessionByThread(testCtx(t), store.MessageRef{Channel: "C1", TS: ts}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a refused request created a session in thread %s: %v", ts, err)
		}
	}
	// A correctly signed copy of the same event is accepted, which shows
	// the refusals above were about the signature and nothing else.
	body := mentionBody("Ev9", "1700000009.000001")
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, h.base+"/slack/events", bytes.NewReader(body))
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", fakeslack.Sign(testSecret, now, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("signed request: status %d", resp.StatusCode)
	}
	s, _ := h.claim(t)
	if s.Thread.TS != "1700000009.000001" {
		t.Errorf("session thread = %+v", s.Thread)
	}
}

func TestHealthzAnswersWithoutASignature(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{})
	resp, err := http.Get(h.base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != "ok" {
		t.Errorf("healthz = %d %q", resp.StatusCode, b)
	}
}
