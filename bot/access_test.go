package bot

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// refused waits for the ephemeral user gets that contains text.
func (h *harness) refused(t testing.TB, user, text string) fakeslack.Message {
	t.Helper()
	m, err := h.fake.WaitEphemeral(testCtx(t), user, fakeslack.Text(text))
	if err != nil {
		t.Fatalf("%s was not told %q: %v", user, text, err)
	}
	return m
}

// noSession checks that nothing was started in thread.
func (h *harness) noSession(t testing.TB, channel, ts string) {
	t.Helper()
	if s, err := h.st.SessionByThread(testCtx(t), store.MessageRef{Channel: channel, TS: ts}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused start created session %+v (err %v)", s, err)
	}
}

// nextIs sends a sentinel reply as the starter and checks it is the next
// input of s: whatever was refused before it reached no queue.
func (h *harness) nextIs(t testing.TB, s store.Session, user string) {
	t.Helper()
	if _, err := h.fake.Reply(testCtx(t), user, s.Thread.Channel, s.Thread.TS, "sentinel"); err != nil {
		t.Fatal(err)
	}
	if in := h.next(t, s.ID); in.Text != "sentinel" {
		t.Errorf("next input = %+v, want the sentinel: a refused message was queued", in)
	}
}

func TestThreadRepliesReachTheSessionOnlyFromItsStarterOrAnApprover(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			// U1, who is no approver, starts the session: STARTERS=*.
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) {
				c.Approvers, c.Starters = People{IDs: []string{"S0OPS"}}, People{Anyone: true}
			}})
			h.fake.AddUserGroup("S0OPS", "U2")
			h.fake.AddUser("U4", "dave")
			ctx := testCtx(t)
			ts, err := h.fake.Mention(ctx, "U1", "C1", "start")
			if err != nil {
				t.Fatal(err)
			}
			s, _ := h.claim(t)
			if _, err := h.fake.Reply(ctx, "U3", "C1", ts, "use your grants for me"); err != nil {
				t.Fatal(err)
			}
			eph := h.refused(t, "U3", "can send Claude messages in this thread")
			if !strings.Contains(eph.Text, "<@U1>") || !strings.Contains(eph.Text, "S0OPS") {
				t.Errorf("refusal %q does not say who may reply", eph.Text)
			}
			// A mention in the thread takes the same path.
			if _, err := h.fake.Reply(ctx, "U4", "C1", ts, "<@"+fakeslack.BotUserID+"> and mine"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, "U4", "can send Claude messages in this thread")
			h.nextIs(t, s, "U1")
			if _, err := h.fake.Reply(ctx, "U2", "C1", ts, "approver here"); err != nil {
				t.Fatal(err)
			}
			if in := h.next(t, s.ID); in.Text != "approver here" || in.User != "U2" {
				t.Errorf("an approver's reply = %+v, want it queued", in)
			}
		})
	}
}

func TestDirectMessagesAreRefusedUnlessAllowed(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.AllowDMs, c.DMWorkDir = false, "" }})
	ts, err := h.fake.DM(testCtx(t), "U3", "read .env")
	if err != nil {
		t.Fatal(err)
	}
	h.refused(t, "U3", "Direct messages to me are turned off")
	h.noSession(t, fakeslack.DMChannel("U3"), ts)
}

func TestStartsOnlyInAllowedChannels(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{cfg: func(c *Config) { c.AllowedChannels = []string{"C1"} }})
			h.fake.AddChannel("C2", "random")
			ctx := testCtx(t)
			ts, err := h.fake.Mention(ctx, "U1", "C2", "deploy")
			if err != nil {
				t.Fatal(err)
			}
			h.refused(t, "U1", "not in ALLOWED_CHANNELS")
			h.noSession(t, "C2", ts)
			if err := h.fake.SlashCommand(ctx, "U2", "C2", "/claude", "deploy"); err != nil {
				t.Fatal(err)
			}
			h.refused(t, "U2", "not in ALLOWED_CHANNELS")
			for _, m := range h.fake.Messages("C2") {
				if m.FromBot() {
					t.Errorf("a refused /claude posted %q in the channel", m.Text)
				}
			}
			if _, err := h.fake.Mention(ctx, "U1", "C1", "allowed here"); err != nil {
				t.Fatal(err)
			}
			if s, in := h.claim(t); s.Thread.Channel != "C1" || in.Text != "allowed here" {
				t.Errorf("claimed %+v / %+v, want only the C1 session", s.Thread, in)
			}
		})
	}
}

func TestOnlyStartersStartSessions(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.Starters = People{IDs: []string{"U1", "S0DEV"}} }})
	h.fake.AddUserGroup("S0DEV", "U2")
	ctx := testCtx(t)
	ts, err := h.fake.Mention(ctx, "U3", "C1", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	eph := h.refused(t, "U3", "can start Claude sessions")
	if !strings.Contains(eph.Text, "<@U1>") || !strings.Contains(eph.Text, "S0DEV") {
		t.Errorf("refusal %q does not say who may start", eph.Text)
	}
	h.noSession(t, "C1", ts)
	if _, err := h.fake.Mention(ctx, "U2", "C1", "group member"); err != nil {
		t.Fatal(err)
	}
	if s, in := h.claim(t); s.StartedBy != "U2" || in.Text != "group member" {
		t.Errorf("claimed %+v / %+v, want the group member's session", s, in)
	}
}

func TestStartersDefaultToTheApprovers(t *testing.T) {
	for _, tt := range []struct {
		name           string
		starters       People
		strangerStarts bool
	}{
		{"STARTERS unset", People{}, false},
		{"STARTERS=*", anyone, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) {
				c.Approvers, c.Starters = People{IDs: []string{"U2"}}, tt.starters
			}})
			ctx := testCtx(t)
			ts, err := h.fake.Mention(ctx, "U1", "C1", "a non-approver's start")
			if err != nil {
				t.Fatal(err)
			}
			if tt.strangerStarts {
				if s, in := h.claim(t); s.StartedBy != "U1" || in.Text != "a non-approver's start" {
					t.Errorf("claimed %+v / %+v, want U1's session", s, in)
				}
			} else {
				if eph := h.refused(t, "U1", "can start Claude sessions"); !strings.Contains(eph.Text, "<@U2>") {
					t.Errorf("refusal %q does not name the approver who may start", eph.Text)
				}
				h.noSession(t, "C1", ts)
			}
			if _, err := h.fake.Mention(ctx, "U2", "C1", "the approver's start"); err != nil {
				t.Fatal(err)
			}
			if s, in := h.claim(t); s.StartedBy != "U2" || in.Text != "the approver's start" {
				t.Errorf("claimed %+v / %+v, want the approver's session next", s, in)
			}
		})
	}
}

func TestSessionsPerUserAreBounded(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.MaxSessionsPerUser = 1 }})
	ctx := testCtx(t)
	if _, err := h.fake.Mention(ctx, "U1", "C1", "first"); err != nil {
		t.Fatal(err)
	}
	s, _ := h.claim(t)
	ts, err := h.fake.Mention(ctx, "U1", "C1", "second")
	if err != nil {
		t.Fatal(err)
	}
	h.refused(t, "U1", "MAX_SESSIONS_PER_USER=1")
	h.noSession(t, "C1", ts)
	// Someone else is not held back by U1's sessions.
	if _, err := h.fake.Mention(ctx, "U2", "C1", "mine"); err != nil {
		t.Fatal(err)
	}
	// Once U1's session is idle, U1 may start another.
	if _, err := h.st.UpdateSession(ctx, s.ID, func(x *store.Session) error { x.State = store.SessionIdle; return nil }); err != nil {
		t.Fatal(err)
	}
	ts, err = h.fake.Mention(ctx, "U1", "C1", "third")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", ts, fakeslack.Text("Queued")); err != nil {
		t.Errorf("U1's start after the first session went idle was not queued: %v", err)
	}
}

func TestQueuedFollowUpsAreBounded(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.MaxQueuedInputs = 2 }})
	ctx := testCtx(t)
	s := h.newSession(t, "sess-backlog")
	for _, text := range []string{"one", "two", "three"} {
		if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, text); err != nil {
			t.Fatal(err)
		}
	}
	h.refused(t, "U1", "MAX_QUEUED_INPUTS=2")
	id, err := h.st.Claim(ctx, "worker-test")
	if err != nil || id != s.ID {
		t.Fatalf("Claim = %s, %v", id, err)
	}
	// Replies are handled as they arrive, concurrently: any two of the three
	// are queued, the third was refused and never queued.
	got := map[string]bool{}
	for range 2 {
		in := h.next(t, s.ID)
		if got[in.Text] || (in.Text != "one" && in.Text != "two" && in.Text != "three") {
			t.Errorf("queued %q (after %v); want two distinct replies of one, two, three", in.Text, got)
		}
		got[in.Text] = true
	}
	// With the backlog taken, a message gets through again (and the refused
	// reply was never queued).
	h.nextIs(t, s, "U1")
	// Stop is no prompt: it gets through whatever the backlog.
	for _, text := range []string{"a", "b", "stop"} {
		if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, text); err != nil {
			t.Fatal(err)
		}
	}
	h.refused(t, "U1", "Stopping Claude's current turn")
}

func TestLongPromptsAreRefusedSayingTheLimit(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{cfg: func(c *Config) { c.MaxPromptBytes = 64 }})
	ctx := testCtx(t)
	long := strings.Repeat("é", 33) // 66 bytes, 33 characters
	ts, err := h.fake.Mention(ctx, "U1", "C1", long)
	if err != nil {
		t.Fatal(err)
	}
	h.refused(t, "U1", "at most 64 bytes per message (MAX_PROMPT_BYTES)")
	h.noSession(t, "C1", ts)
	s := h.newSession(t, "sess-long")
	if _, err := h.fake.Reply(ctx, "U2", "C1", s.Thread.TS, long); err != nil {
		t.Fatal(err)
	}
	h.refused(t, "U2", "66 bytes")
	if _, err := h.fake.Reply(ctx, "U1", "C1", s.Thread.TS, "sentinel"); err != nil {
		t.Fatal(err)
	}
	if got, in := h.claim(t); got.ID != s.ID || in.Text != "sentinel" {
		t.Errorf("first input of %s = %+v, want the sentinel: the long reply was queued", got.ID, in)
	}
}

// postSigned posts body to path signed as Slack would at now and returns
// the status.
func (h *harness) postSigned(t testing.TB, path string, now time.Time, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, h.base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", fakeslack.Sign(testSecret, now, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func TestReplayedSignedRequestsAreRefused(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{})
	now := time.Now()
	command := []byte(url.Values{"command": {"/claude"}, "text": {"deploy"}, "user_id": {"U2"}, "channel_id": {"C1"}, "team_id": {fakeslack.TeamID}}.Encode())
	if got := h.postSigned(t, "/slack/commands", now, command); got != http.StatusOK {
		t.Fatalf("first /claude: status %d", got)
	}
	if got := h.postSigned(t, "/slack/commands", now, command); got != http.StatusUnauthorized {
		t.Errorf("replayed /claude: status %d, want 401", got)
	}
	click := []byte(url.Values{"payload": {`{"type":"block_actions","user":{"id":"U2"},"actions":[]}`}}.Encode())
	if got := h.postSigned(t, "/slack/interactive", now, click); got != http.StatusOK {
		t.Fatalf("first interaction: status %d", got)
	}
	if got := h.postSigned(t, "/slack/interactive", now, click); got != http.StatusUnauthorized {
		t.Errorf("replayed interaction: status %d, want 401", got)
	}
	// One session: the replay started nothing. A second start by U2 is the
	// next one claimed after the first.
	s, in := h.claim(t)
	if in.Text != "deploy" || s.StartedBy != "U2" {
		t.Fatalf("claimed %+v / %+v", s, in)
	}
	if err := h.fake.SlashCommand(testCtx(t), "U2", "C1", "/claude", "sentinel"); err != nil {
		t.Fatal(err)
	}
	if _, in := h.claim(t); in.Text != "sentinel" {
		t.Errorf("next session's prompt = %q, want the sentinel: the replay started a session", in.Text)
	}
}
