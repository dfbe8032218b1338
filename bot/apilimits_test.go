package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/bot/outbox"
)

// assertLimited checks that r is a 429 naming limit, with a Retry-After
// header and a JSON error a person can act on.
func assertLimited(t *testing.T, r apiResp, limit string) {
	t.Helper()
	msg := fmt.Sprint(r.body["error"])
	if r.code != http.StatusTooManyRequests || r.body["limit"] != limit || !strings.Contains(msg, limit+"=") || !strings.Contains(msg, "laptop") {
		t.Errorf("got %d %v, want 429 naming %s and the token", r.code, r.body, limit)
	}
	if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 || fmt.Sprint(r.body["retry_after"]) != strconv.Itoa(secs) {
		t.Errorf("Retry-After = %q (body %v), want whole seconds, the same in the body", r.header.Get("Retry-After"), r.body["retry_after"])
	}
}

// One token's burst of new sessions (each waits for its thread's first
// post, paced by Slack's per-channel budget) must not slow another
// token's request in a session that is open already.
func TestOneTokensBurstOfNewSessionsDoesNotSlowAnothersRequest(t *testing.T) {
	// Registered first, so it runs once the bot has stopped: token A's
	// calls still waiting for Slack then end, and are waited for.
	var burstCalls sync.WaitGroup
	t.Cleanup(burstCalls.Wait)
	// Slack's real budgets: the fake answers 429 past them. B's threads
	// are in a channel of their own, so its cards do not pace A's roots.
	h := newHarness(t, transportHTTP, harnessOpts{cfg: func(c *Config) {
		toks, err := ParseAPITokens("laptop:C1:" + apiTokenA + ",ci:C2:" + apiTokenB)
		if err != nil {
			t.Fatal(err)
		}
		c.APITokens = toks
	}})
	h.fake.AddChannel("C2", "ci")
	base := h.base
	timed := func() time.Duration {
		t.Helper()
		start := time.Now()
		if r := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenB, bashBody("b-open")); r.code != http.StatusCreated {
			t.Fatalf("token B's create = %d %v", r.code, r.body)
		}
		return time.Since(start)
	}
	timed() // opens B's session
	var unloaded time.Duration
	for range 5 {
		unloaded = max(unloaded, timed())
	}
	const burst = 12
	var finished atomic.Int32
	for i := range burst {
		burstCalls.Go(func() {
			// Its outcome is not this test's subject: the bot stops
			// under the calls still waiting.
			_ = apiPost(base+"/v1/requests", apiTokenA, bashBody(fmt.Sprintf("a-%d", i)))
			finished.Add(1)
		})
	}
	// The channel's burst is spent on A's first threads: the rest of its
	// roots wait a second each.
	roots := map[string]bool{}
	if _, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool {
		if m.HasText("API token *laptop* reports") {
			roots[m.TS] = true
		}
		return len(roots) >= outbox.DefaultPostBurst
	}); err != nil {
		t.Fatal(err)
	}
	if finished.Load() == burst {
		t.Fatal("token A's burst was over before B's requests were timed; the test would measure nothing")
	}
	var loaded time.Duration
	for range 3 {
		loaded = max(loaded, timed())
	}
	if loaded > unloaded+100*time.Millisecond {
		t.Errorf("token B's request took %s during token A's burst, %s without it: more than 100ms slower", loaded, unloaded)
	}
	t.Logf("token B's request: %s at most without token A's burst, %s during it (%d of A's %d sessions open)", unloaded, loaded, finished.Load(), burst)
}

// apiPost creates a request from a goroutine other than the test's: it
// returns what went wrong instead of failing the test.
func apiPost(url, token string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("create = %d %v", resp.StatusCode, out)
	}
	return nil
}
