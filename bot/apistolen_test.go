package bot

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// TestAStolenHookTokenCanDoNoMoreThanAHook plays a command Claude ran that
// read the hook's token (token A) and uses it as an outsider would: it may
// put cards before the approvers and report what it likes, but only as
// that token's claims, within its limits, and it can decide nothing nor
// touch anyone else's requests or sessions.
func TestAStolenHookTokenCanDoNoMoreThanAHook(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{cfg: func(c *Config) {
		c.APITokens = testAPITokens(t)
		c.APILimits = approvalapi.Limits{RequestsPerMinute: 4, ToolResultsPerMinute: 4}
	}})
	base := h.base
	ctx := testCtx(t)
	slackSession := h.newSession(t, "sess-slack")
	theirs := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenB, bashBody("sess-b"))

	// A fake session "on prod-db-1": the thread says whose word that is.
	forged := fmt.Appendf(nil, `{"tool_name":"Bash","input":{"command":"make deploy"},"session":{"id":"sess-a","host":"prod-db-1","cwd":"/srv/prod","name":"root"}}`)
	mine := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, forged)
	if mine.code != http.StatusCreated {
		t.Fatalf("create = %d %v", mine.code, mine.body)
	}
	root, err := h.fake.WaitMessage(ctx, fakeslack.Text("prod-db-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(root.Text, "API token *laptop* reports a Claude Code session on *prod-db-1*") || !root.HasText("cannot check") {
		t.Errorf("root = %q, want it to lead with the token that claims the host", root.Text)
	}
	card, err := h.fake.WaitThread(ctx, "C1", root.TS, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	if !card.HasText("API token *laptop*") {
		t.Errorf("card = %s, want it to name the token it came through", card.AllText())
	}

	// It cannot decide, by any route: the request stays pending.
	url := base + "/v1/requests/" + mine.st.ID
	for _, try := range []struct{ method, url, body string }{
		{http.MethodPost, url, `{"outcome":"allow"}`},
		{http.MethodPut, url, `{"outcome":"allow"}`},
		{http.MethodPatch, url, `{"status":"decided","decision":{"outcome":"allow"}}`},
		{http.MethodPost, url + "/decision", `{"outcome":"allow"}`},
		{http.MethodPost, base + "/v1/decisions", `{"id":"` + mine.st.ID + `","outcome":"allow"}`},
		{http.MethodPost, base + "/slack/interactive", `payload={}`},
	} {
		if code := rawCall(t, try.method, try.url, apiTokenA, try.body); code/100 == 2 {
			t.Errorf("%s %s = %d, want it refused", try.method, try.url, code)
		}
	}
	if got, err := h.st.GetRequest(ctx, mine.st.ID); err != nil || !got.Pending() {
		t.Fatalf("after the attempts the request is %+v (%v), want pending", got.Decision, err)
	}

	// Another token's request: not found, not withdrawn.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if r := apiCall(t, method, base+"/v1/requests/"+theirs.st.ID, apiTokenA, nil); r.code != http.StatusNotFound {
			t.Errorf("%s of token B's request = %d %v, want 404", method, r.code, r.body)
		}
	}
	if got, _ := h.st.GetRequest(ctx, theirs.st.ID); !got.Pending() {
		t.Errorf("token B's request was settled: %+v", got.Decision)
	}

	// A report naming a session Slack started lands in a session of the
	// token's own, marked as its claim, in the log and in the thread.
	ran := fmt.Appendf(nil, `{"tool_name":"Bash","input":{"command":"make test FORGED"},"session":{"id":%q}}`, slackSession.ID)
	if r := apiCall(t, http.MethodPost, base+"/v1/tool-results", apiTokenA, ran); r.code != http.StatusCreated {
		t.Fatalf("report = %d %v", r.code, r.body)
	}
	line, err := h.fake.WaitMessage(ctx, fakeslack.Text("FORGED"))
	if err != nil {
		t.Fatal(err)
	}
	if !line.HasText("as reported by API token laptop") || line.ThreadTS == slackSession.Thread.TS {
		t.Errorf("line = %q in thread %s, want it marked as the token's report, outside the Slack session's thread", line.Text, line.ThreadTS)
	}
	entries, err := h.st.AuditLog(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	var claim store.AuditEntry
	for _, e := range entries {
		if e.Action == store.AuditToolRan {
			claim = e
		}
	}
	if claim.ReportedBy != "api:laptop" || claim.SessionID != "api.laptop."+slackSession.ID {
		t.Errorf("tool_ran entry = %+v, want reported by api:laptop in the token's own session", claim)
	}

	// And it runs out of calls within a minute.
	assertRunsOut(t, base+"/v1/requests", bashBody("sess-a"), "API_REQUESTS_PER_MINUTE", 4)
	assertRunsOut(t, base+"/v1/tool-results", ran, "API_TOOL_RESULTS_PER_MINUTE", 4)

	// The one change it can make to its own request is to withdraw it.
	if r := apiCall(t, http.MethodDelete, url, apiTokenA, nil); r.st.Decision == nil || r.st.Decision.Outcome != store.OutcomeCancelled {
		t.Errorf("withdraw = %d %v, want cancelled", r.code, r.body)
	}
}

// The answers approvers remembered for a channel answer the sessions
// slackgate runs there; a question through a token in that channel (its
// own word, from anyone holding it) meets none of them and gets a card.
func TestAnAPIQuestionDoesNotMeetTheChannelsRememberedAnswers(t *testing.T) {
	h, base := newAPIHarness(t, transportSocket)
	rememberFor(t, h.st, store.Scope{Kind: store.ScopeChannel, Value: "C1"}, "U2", "Postgres")
	body := fmt.Appendf(nil, `{"tool_name":"AskUserQuestion","input":%s,"session":{"id":"sess-q","cwd":"/srv/repo"}}`, dbForm)
	created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, body)
	if created.code != http.StatusCreated {
		t.Fatalf("create = %d %v", created.code, created.body)
	}
	if _, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool { return hasButton(m, "SQLite") }); err != nil {
		t.Fatalf("no card for the question: %v", err)
	}
	if r := apiCall(t, http.MethodGet, base+"/v1/requests/"+created.st.ID, apiTokenA, nil); r.st.Status != "pending" {
		t.Errorf("the channel's remembered answer answered the token's question: %v", r.body)
	}
}

// assertRunsOut calls url with token A until it answers 429 naming limit,
// which must happen within perMinute calls in all.
func assertRunsOut(t *testing.T, url string, body []byte, limit string, perMinute int) {
	t.Helper()
	for range perMinute {
		r := apiCall(t, http.MethodPost, url, apiTokenA, body)
		if r.code == http.StatusTooManyRequests {
			assertLimited(t, r, limit)
			return
		}
		if r.code != http.StatusCreated {
			t.Fatalf("POST %s = %d %v", url, r.code, r.body)
		}
	}
	t.Errorf("POST %s never answered 429 within %d calls", url, perMinute)
}

// rawCall sends body with token's bearer and returns the status.
func rawCall(t *testing.T, method, url, token, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
