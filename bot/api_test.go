package bot

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
)

const (
	apiTokenA = "token-a-0123456789abcdef0123456789"
	apiTokenB = "token-b-0123456789abcdef0123456789"
)

func testAPITokens(t testing.TB) []approvalapi.Token {
	t.Helper()
	toks, err := ParseAPITokens("laptop:C1:" + apiTokenA + ", ci:C1:" + apiTokenB)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// newAPIHarness runs a bot with the approval API on; it returns the API's
// base URL (Socket Mode serves it on a listener of its own).
func newAPIHarness(t *testing.T, transport string) (*harness, string) {
	t.Helper()
	var base string
	h := newHarness(t, transport, harnessOpts{cfg: func(c *Config) {
		c.APITokens = testAPITokens(t)
		if transport == transportSocket {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			c.Listener = ln
			base = "http://" + ln.Addr().String()
		}
	}})
	if base == "" {
		base = h.base
	}
	return h, base
}

type apiResp struct {
	code   int
	header http.Header
	body   map[string]any
	st     approvalapi.RequestStatus
}

func apiCall(t testing.TB, method, url, token string, body []byte) apiResp {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatalf("%s %s: %d with a body that is not JSON: %v", method, url, resp.StatusCode, err)
	}
	out := apiResp{code: resp.StatusCode, header: resp.Header}
	_ = json.Unmarshal(raw, &out.body)
	_ = json.Unmarshal(raw, &out.st)
	return out
}

func bashBody(session string) []byte {
	return fmt.Appendf(nil, `{"tool_name":"Bash","input":{"command":"make deploy","description":"Deploy"},"tool_use_id":"toolu_1",
		"session":{"id":%q,"host":"build-7","cwd":"/srv/repo","name":"alice"}}`, session)
}

// assertNothingCreated checks that the store holds no request.
func assertNothingCreated(t *testing.T, st store.Store) {
	t.Helper()
	pending, err := st.ListPending(testCtx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Errorf("%d requests were created, want none", len(pending))
	}
}

func TestAPIApprovalInSlackReachesTheLongPoll(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h, base := newAPIHarness(t, tr)
			ctx := testCtx(t)
			created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody("sess-1"))
			if created.code != http.StatusCreated || created.st.ID == "" || created.st.Status != "pending" || created.st.Kind != store.KindTool {
				t.Fatalf("create = %d %v", created.code, created.body)
			}
			root, err := h.fake.WaitMessage(ctx, fakeslack.Text("Claude Code session on *build-7* in `/srv/repo`"))
			if err != nil {
				t.Fatalf("no root message: %v", err)
			}
			// Signed as an API session, which no worker runs.
			s, err := h.st.GetSession(ctx, created.st.SessionID)
			if err != nil || !s.API || store.VerifySession(testSigningKey.Public().(ed25519.PublicKey), s) != nil {
				t.Errorf("the API session %+v (%v) is not signed as one", s, err)
			}
			card, err := h.fake.WaitThread(ctx, "C1", root.TS, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
			if err != nil {
				t.Fatalf("no card in the session's thread: %v", err)
			}
			url := base + "/v1/requests/" + created.st.ID
			if r := apiCall(t, http.MethodGet, url, apiTokenA, nil); r.st.Status != "pending" || r.st.Decision != nil {
				t.Fatalf("before the click: %v", r.body)
			}
			if err := h.fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
				t.Fatal(err)
			}
			r := apiCall(t, http.MethodGet, url+"?wait=20s", apiTokenA, nil)
			d := r.st.Decision
			if r.code != 200 || r.st.Status != "decided" || d == nil || d.Outcome != store.OutcomeAllow || d.By != "U2" {
				t.Fatalf("long poll = %d %v, want allow by U2", r.code, r.body)
			}
			if !jsonEqual(d.UpdatedInput, `{"command":"make deploy","description":"Deploy"}`) {
				t.Errorf("updated_input = %s, want the whole original input", d.UpdatedInput)
			}
			// A second request of the same Claude session joins its thread.
			second := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody("sess-1"))
			if second.st.SessionID != created.st.SessionID {
				t.Errorf("second request in session %s, want %s", second.st.SessionID, created.st.SessionID)
			}
			roots := 0
			for _, m := range h.fake.Messages("C1") {
				if m.HasText("Claude Code session on") {
					roots++
				}
			}
			if roots != 1 {
				t.Errorf("%d session roots in C1, want one per Claude session", roots)
			}
		})
	}
}

func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
}

func TestAPIWithdrawnRequestSettlesItsCard(t *testing.T) {
	h, base := newAPIHarness(t, transportSocket)
	ctx := testCtx(t)
	created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody("sess-w"))
	card, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	r := apiCall(t, http.MethodDelete, base+"/v1/requests/"+created.st.ID, apiTokenA, nil)
	if r.code != 200 || r.st.Decision == nil || r.st.Decision.Outcome != store.OutcomeCancelled {
		t.Fatalf("withdraw = %d %v", r.code, r.body)
	}
	if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0 && m.HasText("Cancelled")
	}); err != nil {
		t.Errorf("card not settled as cancelled: %v", err)
	}
}

func TestReplyInAnAPISessionThreadSaysItRunsElsewhere(t *testing.T) {
	h, base := newAPIHarness(t, transportSocket)
	ctx := testCtx(t)
	created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody("sess-r"))
	root, err := h.fake.WaitMessage(ctx, fakeslack.Text("Claude Code session on"))
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"please also run the tests", "stop"} {
		if _, err := h.fake.Reply(ctx, "U1", "C1", root.TS, text); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.Text("runs elsewhere")); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.st.QueuedInputs(ctx, created.st.SessionID); err != nil || n != 0 {
		t.Errorf("queued inputs = %d, %v; want none: no worker may claim an API session", n, err)
	}
}

// TestAPILongPollSurvivesABotRestart: a request created through one bot is
// decided and reported by the next one on the same store.
func TestAPILongPollSurvivesABotRestart(t *testing.T) {
	fake := fakeslack.New(t)
	fake.AddUser("U2", "bob")
	fake.AddChannel("C1", "general")
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "slackgate.db"), boltstore.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	base, stop := startAPIBot(t, fake, st)
	created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody("sess-restart"))
	ctx := testCtx(t)
	card, err := fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	base, stop = startAPIBot(t, fake, st)
	defer stop()
	polled := make(chan apiResp, 1)
	go func() {
		polled <- apiCall(t, http.MethodGet, base+"/v1/requests/"+created.st.ID+"?wait=20s", apiTokenA, nil)
	}()
	if err := fake.Click(ctx, "U2", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	r := <-polled
	if r.st.Decision == nil || r.st.Decision.Outcome != store.OutcomeAllow || r.st.Decision.By != "U2" {
		t.Fatalf("long poll after restart = %d %v", r.code, r.body)
	}
}

// startAPIBot runs a bot in HTTP mode on st; stop ends it and waits.
func startAPIBot(t *testing.T, fake *fakeslack.Fake, st store.Store) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := Config{BotToken: fakeslack.BotToken, APIURL: fake.APIURL(), SigningSecret: testSecret, Listener: ln,
		WorkDir: testWorkDir, ConsumerName: "bot-test", SigningKey: testSigningKey, Approvers: People{Anyone: true},
		APITokens: testAPITokens(t)}
	fake.UseHTTP(base, testSecret)
	b, err := New(cfg, st, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
			return base, stop
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

func TestAPIRequestPastItsTimeoutExpires(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{useClock: true, cfg: func(c *Config) { c.APITokens = testAPITokens(t) }})
	body := []byte(`{"tool_name":"Bash","input":{"command":"ls"},"timeout":"1m","session":{"id":"sess-exp"}}`)
	created := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, body)
	card, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool { return hasButton(m, "Approve") })
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Minute)
	r := apiCall(t, http.MethodGet, h.base+"/v1/requests/"+created.st.ID+"?wait=30s", apiTokenA, nil)
	if r.st.Decision == nil || r.st.Decision.Outcome != store.OutcomeExpired {
		t.Fatalf("after the timeout: %v, want expired", r.body)
	}
	if _, err := h.fake.WaitMessage(testCtx(t), func(m fakeslack.Message) bool {
		return m.Ref() == card.Ref() && len(m.Buttons()) == 0 && m.HasText("Expired")
	}); err != nil {
		t.Errorf("card not settled as expired: %v", err)
	}
}

func TestAPIWithdrawSaysWhy(t *testing.T) {
	h, base := newAPIHarness(t, transportSocket)
	ctx := testCtx(t)
	if r := apiCall(t, http.MethodDelete, base+"/v1/requests/x?reason=bored", apiTokenA, nil); r.code != 400 {
		t.Errorf("DELETE with an unknown reason = %d %v, want 400", r.code, r.body)
	}
	for i, tc := range []struct{ query, want string }{
		{"?reason=terminal", "Answered in the terminal"},
		{"?reason=timeout&waited=5m0s", "Nobody answered within 5m; the terminal asks again"},
		{"?reason=unanswered&waited=90s", "Nobody answered within 1m30s, so Claude was told no"},
	} {
		created := apiCall(t, http.MethodPost, base+"/v1/requests", apiTokenA, bashBody(fmt.Sprintf("sess-why-%d", i)))
		if r := apiCall(t, http.MethodDelete, base+"/v1/requests/"+created.st.ID+tc.query, apiTokenA, nil); r.code != 200 {
			t.Fatalf("withdraw %s = %d %v", tc.query, r.code, r.body)
		}
		if _, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool {
			return len(m.Buttons()) == 0 && m.HasText("make deploy") && m.HasText(tc.want)
		}); err != nil {
			t.Errorf("no settled card saying %q: %v", tc.want, err)
		}
	}
}

func TestAPIToolResultIsAuditedAndShownInTheThread(t *testing.T) {
	h, base := newAPIHarness(t, transportHTTP)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name, body, want string
		code             int
	}{
		{"no tool", `{"input":{},"session":{"id":"s1"}}`, "tool_name", 400},
		{"input not an object", `{"tool_name":"Bash","input":[1],"session":{"id":"s1"}}`, "JSON object", 400},
		{"no session", `{"tool_name":"Bash","input":{}}`, "session.id", 400},
		{"error too long", `{"tool_name":"Bash","input":{},"session":{"id":"s1"},"error":"` + strings.Repeat("e", approvalapi.MaxErrorText+1) + `"}`, "too long", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := apiCall(t, http.MethodPost, base+"/v1/tool-results", apiTokenA, []byte(tc.body))
			if r.code != tc.code || !strings.Contains(fmt.Sprint(r.body["error"]), tc.want) {
				t.Errorf("got %d %v, want %d with an error saying %q", r.code, r.body, tc.code, tc.want)
			}
		})
	}
	if r := apiCall(t, http.MethodPost, base+"/v1/tool-results", "", []byte(`{}`)); r.code != 401 {
		t.Errorf("without a token = %d, want 401", r.code)
	}
	body := `{"tool_name":"Bash","input":{"command":"rm -rf <!channel> build"},"tool_use_id":"toolu_9","failed":true,
		"error":"permission denied","session":{"id":"sess-ran","host":"build-7","cwd":"/srv/repo"}}`
	if r := apiCall(t, http.MethodPost, base+"/v1/tool-results", apiTokenA, []byte(body)); r.code != 201 {
		t.Fatalf("report = %d %v", r.code, r.body)
	}
	line, err := h.fake.WaitMessage(ctx, fakeslack.Text("failed"))
	if err != nil {
		t.Fatal(err)
	}
	if !line.HasText("rm -rf &lt;!channel&gt; build") || !line.HasText("permission denied") || line.ThreadTS == "" {
		t.Errorf("thread line = %s (thread %q), want the escaped command and the error in the session's thread", line.AllText(), line.ThreadTS)
	}
	entries, err := h.st.AuditLog(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Action != store.AuditToolRan || entries[0].Result != store.ToolFailed ||
		entries[0].Message != "rm -rf <!channel> build" || entries[0].SessionID != "api.laptop.sess-ran" {
		t.Errorf("audit = %+v, want one failed tool_ran entry for the session", entries)
	}
}

func TestAPITokenOfAPersonPutsItsThreadsInTheirDMAndGrantsThemNothing(t *testing.T) {
	var base string
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
		toks, err := ParseAPITokens("carol:U3:" + apiTokenA + ",alice:U1:" + apiTokenB)
		if err != nil {
			t.Fatal(err)
		}
		c.APITokens, c.Approvers = toks, People{IDs: []string{"U1"}}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c.Listener, base = ln, "http://"+ln.Addr().String()
	}})
	ctx := testCtx(t)
	cardIn := func(token, session, user string) (apiResp, fakeslack.Message) {
		t.Helper()
		created := apiCall(t, http.MethodPost, base+"/v1/requests", token, bashBody(session))
		if created.code != 201 {
			t.Fatalf("create = %d %v", created.code, created.body)
		}
		dm := fakeslack.DMChannel(user)
		card, err := h.fake.WaitMessage(ctx, func(m fakeslack.Message) bool { return m.Channel == dm && hasButton(m, "Approve") })
		if err != nil {
			t.Fatalf("no card in the DM with %s: %v", user, err)
		}
		if card.ThreadTS == "" {
			t.Errorf("the card is not in the session's thread in the DM")
		}
		return created, card
	}

	// Carol owns the token but is no approver: the card reaches her, the
	// decision does not.
	created, card := cardIn(apiTokenA, "sess-dm-carol", "U3")
	if err := h.fake.Click(ctx, "U3", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U3", fakeslack.Text("Nothing was changed")); err != nil {
		t.Fatal(err)
	}
	if got, err := h.st.GetRequest(ctx, created.st.ID); err != nil || !got.Pending() {
		t.Errorf("after the owner's click the request is %+v (%v), want pending", got.Decision, err)
	}

	// Alice is an approver: in her own DM she decides.
	created, card = cardIn(apiTokenB, "sess-dm-alice", "U1")
	if err := h.fake.Click(ctx, "U1", card.Ref(), "Approve"); err != nil {
		t.Fatal(err)
	}
	r := apiCall(t, http.MethodGet, base+"/v1/requests/"+created.st.ID+"?wait=20s", apiTokenB, nil)
	if r.st.Decision == nil || r.st.Decision.Outcome != store.OutcomeAllow || r.st.Decision.By != "U1" {
		t.Errorf("decision = %+v, want allow by U1", r.st.Decision)
	}
}
