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
	"github.com/slackgate/slackgate/store"
)

// newLimitedAPIHarness runs a bot with the approval API on, driven by a
// fake clock (so the per-minute rates and the hour a session stays open
// pass by hand), with limits.
func newLimitedAPIHarness(t *testing.T, limits APILimits) *harness {
	t.Helper()
	return newHarness(t, transportHTTP, harnessOpts{useClock: true, cfg: func(c *Config) {
		c.APITokens, c.APILimits = testAPITokens(t), limits
	},
		// The bot's budgets are off under a hand-moved clock (see
		// newHarness), so Slack's pacing is too: these tests pin the
		// API's limits, and the pacing has tests of its own.
		fake: []fakeslack.Option{fakeslack.WithoutRateModel()},
	})
}

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

func TestAPITokenOverMaxPendingIsRefusedWithoutCreatingAnything(t *testing.T) {
	h := newLimitedAPIHarness(t, APILimits{MaxPending: 2})
	var ids []string
	for range 2 {
		r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-p"))
		if r.code != http.StatusCreated {
			t.Fatalf("create = %d %v", r.code, r.body)
		}
		ids = append(ids, r.st.ID)
	}
	// Neither in the open session nor in a new one, which would cost a thread.
	for _, session := range []string{"sess-p", "sess-new"} {
		assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody(session)), "API_MAX_PENDING")
	}
	if n, err := h.st.CountPendingUnder(testCtx(t), "api.laptop."); err != nil || n != 2 {
		t.Errorf("pending = %d, %v; want the 2 admitted", n, err)
	}
	if _, err := h.st.GetSession(testCtx(t), "api.laptop.sess-new"); err == nil {
		t.Error("a refused request opened a session")
	}
	// Another token is not held back by this one's limit.
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenB, bashBody("sess-b")); r.code != http.StatusCreated {
		t.Errorf("the other token's create = %d %v", r.code, r.body)
	}
	// Once one is withdrawn, there is room again.
	apiCall(t, http.MethodDelete, h.base+"/v1/requests/"+ids[0], apiTokenA, nil)
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-p")); r.code != http.StatusCreated {
		t.Errorf("create after a withdrawal = %d %v", r.code, r.body)
	}
}

func TestAPITokenOverMaxSessionsOpensNoThreadUntilOneGoesQuiet(t *testing.T) {
	h := newLimitedAPIHarness(t, APILimits{MaxSessions: 2})
	ctx := testCtx(t)
	report := func(token, session string) apiResp {
		body := fmt.Appendf(nil, `{"tool_name":"Read","input":{"file_path":"/x"},"session":{"id":%q}}`, session)
		return apiCall(t, http.MethodPost, h.base+"/v1/tool-results", token, body)
	}
	for _, s := range []string{"s1", "s2"} {
		if r := report(apiTokenA, s); r.code != http.StatusCreated {
			t.Fatalf("report in %s = %d %v", s, r.code, r.body)
		}
	}
	posts := len(h.fake.CallsTo("chat.postMessage"))
	assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("s3")), "API_MAX_SESSIONS")
	assertLimited(t, report(apiTokenA, "s4"), "API_MAX_SESSIONS")
	// The open sessions still work, and the other token opens its own.
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("s1")); r.code != http.StatusCreated {
		t.Errorf("a request in an open session = %d %v", r.code, r.body)
	}
	if r := report(apiTokenB, "b1"); r.code != http.StatusCreated {
		t.Errorf("the other token's new session = %d %v", r.code, r.body)
	}
	// s2 goes quiet for an hour (s1 was used again at the start of it):
	// its place is free.
	h.clock.Advance(apiSessionIdle - time.Minute)
	if r := report(apiTokenA, "s1"); r.code != http.StatusCreated {
		t.Fatalf("report in s1 = %d %v", r.code, r.body)
	}
	assertLimited(t, report(apiTokenA, "s5"), "API_MAX_SESSIONS")
	h.clock.Advance(2 * time.Minute)
	if r := report(apiTokenA, "s5"); r.code != http.StatusCreated {
		t.Errorf("a new session once s2 went quiet = %d %v", r.code, r.body)
	}
	for _, s := range []string{"s3", "s4"} {
		if _, err := h.st.GetSession(ctx, "api.laptop."+s); err == nil {
			t.Errorf("refused session %s was opened", s)
		}
	}
	for _, c := range h.fake.CallsTo("chat.postMessage")[posts:] {
		if strings.Contains(string(c.Body), "s3") || strings.Contains(string(c.Body), "s4") {
			t.Errorf("a refused session was posted: %s", c.Body)
		}
	}
}

func TestAPITokenOverItsRatesIsRefusedUntilTheMinuteAllows(t *testing.T) {
	h := newLimitedAPIHarness(t, APILimits{RequestsPerMinute: 3, ToolResultsPerMinute: 2})
	ctx := testCtx(t)
	for range 3 {
		if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-r")); r.code != http.StatusCreated {
			t.Fatalf("create = %d %v", r.code, r.body)
		}
	}
	over := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-r"))
	assertLimited(t, over, "API_REQUESTS_PER_MINUTE")
	if got := over.header.Get("Retry-After"); got != "20" {
		t.Errorf("Retry-After = %s, want 20 (one request of 3 a minute)", got)
	}
	ran := []byte(`{"tool_name":"Bash","input":{"command":"make test"},"session":{"id":"sess-r"}}`)
	for range 2 {
		if r := apiCall(t, http.MethodPost, h.base+"/v1/tool-results", apiTokenA, ran); r.code != http.StatusCreated {
			t.Fatalf("report = %d %v", r.code, r.body)
		}
	}
	assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/tool-results", apiTokenA, ran), "API_TOOL_RESULTS_PER_MINUTE")
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenB, bashBody("sess-b")); r.code != http.StatusCreated {
		t.Errorf("the other token's create = %d %v", r.code, r.body)
	}
	h.clock.Advance(20 * time.Second)
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-r")); r.code != http.StatusCreated {
		t.Errorf("create after Retry-After = %d %v", r.code, r.body)
	}
	if n, err := h.st.CountPendingUnder(ctx, "api.laptop."); err != nil || n != 4 {
		t.Errorf("pending = %d, %v; want the 4 admitted", n, err)
	}
	entries, err := h.st.AuditLog(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	reports := 0
	for _, e := range entries {
		if e.Action == store.AuditToolRan {
			reports++
		}
	}
	if reports != 2 {
		t.Errorf("%d tool_ran entries, want the 2 admitted", reports)
	}
}

// An API request whose client never polls again (it died, or gave up
// without withdrawing) expires at its deadline, and its card says so.
func TestAnUnpolledAPIRequestExpiresAtItsDeadline(t *testing.T) {
	armed := make(chan time.Time, 64)
	h := newHarness(t, transportHTTP, harnessOpts{useClock: true,
		cfg: func(c *Config) {
			c.APITokens = testAPITokens(t)
			// The sweeper's fallback pass must not fall inside the
			// minute: its only timer is then the request's deadline.
			c.ReconcileInterval = time.Hour
		},
		before: func(b *Bot) {
			b.expiryArmed = func(due time.Time) {
				select {
				case armed <- due:
				default:
				}
			}
		}})
	ctx := testCtx(t)
	body := []byte(`{"tool_name":"Bash","input":{"command":"make deploy"},"timeout":"1m","session":{"id":"sess-gone"}}`)
	created := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, body)
	if created.code != http.StatusCreated {
		t.Fatalf("create = %d %v", created.code, created.body)
	}
	card, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	// The sweeper has set its timer for this deadline.
	for due := (time.Time{}); !due.Equal(created.st.Deadline); {
		select {
		case due = <-armed:
		case <-ctx.Done():
			t.Fatal("the sweeper never set a timer for the request's deadline")
		}
	}
	h.clock.Advance(time.Minute - time.Second)
	if r, _ := h.st.GetRequest(ctx, created.st.ID); !r.Pending() {
		t.Fatalf("settled %+v before its deadline", r.Decision)
	}
	h.clock.Advance(time.Second)
	d, err := h.st.WaitDecision(ctx, created.st.ID)
	if err != nil || d.Outcome != store.OutcomeExpired || !d.At.Equal(created.st.Deadline) {
		t.Fatalf("decision = %+v, %v; want expired at the deadline %v", d, err, created.st.Deadline)
	}
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0 && m.HasText("Expired")
	}); err != nil {
		t.Errorf("card not settled as expired: %v", err)
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
		return len(roots) >= DefaultPostBurst
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
