package approvalapi

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// newLimitedHarness is a server with limits, driven by a fake clock (so
// the per-minute rates and the hour a session stays open pass by hand).
func newLimitedHarness(t *testing.T, limits Limits) *serverHarness {
	t.Helper()
	return newServerHarness(t, serverOpts{limits: limits, useClock: true})
}

func TestAPITokenOverMaxPendingIsRefusedWithoutCreatingAnything(t *testing.T) {
	h := newLimitedHarness(t, Limits{MaxPending: 2})
	var ids []string
	for range 2 {
		r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("sess-p"))
		if r.code != http.StatusCreated {
			t.Fatalf("create = %d %v", r.code, r.body)
		}
		ids = append(ids, r.st.ID)
	}
	// Neither in the open session nor in a new one, which would cost a thread.
	for _, session := range []string{"sess-p", "sess-new"} {
		assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody(session)), "API_MAX_PENDING")
	}
	if n, err := h.st.CountPendingUnder(t.Context(), "api.laptop."); err != nil || n != 2 {
		t.Errorf("pending = %d, %v; want the 2 admitted", n, err)
	}
	if _, err := h.st.GetSession(t.Context(), "api.laptop.sess-new"); err == nil {
		t.Error("a refused request opened a session")
	}
	if slices.Contains(h.host.threadsFor(), "sess-new") {
		t.Error("a refused request opened a thread")
	}
	// Another token is not held back by this one's limit.
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenB, bashBody("sess-b")); r.code != http.StatusCreated {
		t.Errorf("the other token's create = %d %v", r.code, r.body)
	}
	// Once one is withdrawn, there is room again.
	apiCall(t, http.MethodDelete, h.base+"/v1/requests/"+ids[0], tokenA, nil)
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("sess-p")); r.code != http.StatusCreated {
		t.Errorf("create after a withdrawal = %d %v", r.code, r.body)
	}
}

func TestAPITokenOverMaxSessionsOpensNoThreadUntilOneGoesQuiet(t *testing.T) {
	h := newLimitedHarness(t, Limits{MaxSessions: 2})
	ctx := t.Context()
	report := func(token, session string) apiResp {
		body := fmt.Appendf(nil, `{"tool_name":"Read","input":{"file_path":"/x"},"session":{"id":%q}}`, session)
		return apiCall(t, http.MethodPost, h.base+"/v1/tool-results", token, body)
	}
	for _, s := range []string{"s1", "s2"} {
		if r := report(tokenA, s); r.code != http.StatusCreated {
			t.Fatalf("report in %s = %d %v", s, r.code, r.body)
		}
	}
	assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("s3")), "API_MAX_SESSIONS")
	assertLimited(t, report(tokenA, "s4"), "API_MAX_SESSIONS")
	// The open sessions still work, and the other token opens its own.
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("s1")); r.code != http.StatusCreated {
		t.Errorf("a request in an open session = %d %v", r.code, r.body)
	}
	if r := report(tokenB, "b1"); r.code != http.StatusCreated {
		t.Errorf("the other token's new session = %d %v", r.code, r.body)
	}
	// s2 goes quiet for an hour (s1 was used again at the start of it):
	// its place is free.
	h.clock.Advance(sessionIdle - time.Minute)
	if r := report(tokenA, "s1"); r.code != http.StatusCreated {
		t.Fatalf("report in s1 = %d %v", r.code, r.body)
	}
	assertLimited(t, report(tokenA, "s5"), "API_MAX_SESSIONS")
	h.clock.Advance(2 * time.Minute)
	if r := report(tokenA, "s5"); r.code != http.StatusCreated {
		t.Errorf("a new session once s2 went quiet = %d %v", r.code, r.body)
	}
	for _, s := range []string{"s3", "s4"} {
		if _, err := h.st.GetSession(ctx, "api.laptop."+s); err == nil {
			t.Errorf("refused session %s was opened", s)
		}
		if slices.Contains(h.host.threadsFor(), s) {
			t.Errorf("a thread was opened for refused session %s", s)
		}
	}
}

func TestAPITokenOverItsRatesIsRefusedUntilTheMinuteAllows(t *testing.T) {
	h := newLimitedHarness(t, Limits{RequestsPerMinute: 3, ToolResultsPerMinute: 2})
	ctx := t.Context()
	for range 3 {
		if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("sess-r")); r.code != http.StatusCreated {
			t.Fatalf("create = %d %v", r.code, r.body)
		}
	}
	over := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("sess-r"))
	assertLimited(t, over, "API_REQUESTS_PER_MINUTE")
	if got := over.header.Get("Retry-After"); got != "20" {
		t.Errorf("Retry-After = %s, want 20 (one request of 3 a minute)", got)
	}
	ran := []byte(`{"tool_name":"Bash","input":{"command":"make test"},"session":{"id":"sess-r"}}`)
	for range 2 {
		if r := apiCall(t, http.MethodPost, h.base+"/v1/tool-results", tokenA, ran); r.code != http.StatusCreated {
			t.Fatalf("report = %d %v", r.code, r.body)
		}
	}
	assertLimited(t, apiCall(t, http.MethodPost, h.base+"/v1/tool-results", tokenA, ran), "API_TOOL_RESULTS_PER_MINUTE")
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenB, bashBody("sess-b")); r.code != http.StatusCreated {
		t.Errorf("the other token's create = %d %v", r.code, r.body)
	}
	h.clock.Advance(20 * time.Second)
	if r := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, bashBody("sess-r")); r.code != http.StatusCreated {
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
	h.host.mu.Lock()
	lines := len(h.host.ran)
	h.host.mu.Unlock()
	if reports != 2 || lines != 2 {
		t.Errorf("%d tool_ran entries and %d thread lines, want the 2 admitted", reports, lines)
	}
}
