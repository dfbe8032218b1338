package bot

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// publisher returns a function that publishes an event of session s, as
// its worker would.
func (h *harness) publisher(t *testing.T, s store.Session) func(store.Event) {
	ctx := testCtx(t)
	return func(e store.Event) {
		t.Helper()
		e.SessionID, e.At = s.ID, time.Now()
		if _, err := h.st.Publish(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestThreadShowsTheWorkAndKeepsOneStatusLine(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	s := h.newSession(t, "sess-thread")
	ctx := testCtx(t)
	publish := h.publisher(t, s)
	publish(store.Event{Type: store.EventSessionStarted})
	publish(store.Event{Type: store.EventAssistantText, Text: "I will **run the tests** first."})
	publish(store.Event{Type: store.EventToolUse, Tool: "Bash", Input: json.RawMessage(`{"command":"make test"}`)})
	publish(store.Event{Type: store.EventResult, Result: &store.Result{Subtype: "success", Turns: 3, DurationMS: 4200, CostUSD: 0.0123}})

	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("*run the tests*")); err != nil {
		t.Error("assistant text not shown as mrkdwn:", err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("make test")); err != nil {
		t.Error("tool use not shown:", err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, fakeslack.Text("3 turns")); err != nil {
		t.Error("result not shown:", err)
	}
	status, err := h.fake.WaitThread(ctx, "C1", s.Thread.TS, func(m fakeslack.Message) bool {
		return m.HasText("Done: reply in this thread")
	})
	if err != nil {
		t.Fatal("status line never said done:", err)
	}
	got, err := h.st.GetSession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != (store.MessageRef{Channel: status.Channel, TS: status.TS}) {
		t.Errorf("session status ref = %+v, want the status message %s", got.Status, status.TS)
	}
	statusLines := 0
	for _, m := range h.fake.Thread("C1", s.Thread.TS) {
		if m.HasText("Session `") && m.FromBot() {
			statusLines++
		}
	}
	if statusLines != 1 {
		t.Errorf("%d status messages in the thread, want one edited in place", statusLines)
	}
}

func TestTruncatedInputIsAttachedToTheThread(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	s := h.newSession(t, "sess-big")
	content := strings.Repeat("line of a big file\n", 4000)
	input, _ := json.Marshal(map[string]string{"file_path": "/srv/work/big.txt", "content": content})
	h.createRequest(t, s, store.Request{ID: "req-big", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Write", Input: input}}, "Approve")
	f, err := h.fake.WaitFile(testCtx(t), func(f fakeslack.File) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if f.Channel != "C1" || f.ThreadTS != s.Thread.TS {
		t.Errorf("file shared in %s/%s, want the session's thread %s", f.Channel, f.ThreadTS, s.Thread.TS)
	}
	if !strings.Contains(string(f.Content), "line of a big file") || len(f.Content) < len(content) {
		t.Errorf("file holds %d bytes, want the full input (%d bytes of content)", len(f.Content), len(content))
	}
}

func TestPlanFeedbackIsRequiredAndTheModalSaysSo(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			s := h.newSession(t, "sess-plan")
			card := h.createRequest(t, s, store.Request{ID: "req-plan", Kind: store.KindPlan, ToolCall: store.ToolCall{
				ToolName: "ExitPlanMode",
				Input:    json.RawMessage(`{"plan":"1. Do it\n2. Ship it"}`),
			}}, "Keep planning")
			ctx := testCtx(t)
			if err := h.fake.Click(ctx, "U2", card.Ref(), "Keep planning"); err != nil {
				t.Fatal(err)
			}
			view, err := h.fake.WaitView(ctx, "U2")
			if err != nil {
				t.Fatal(err)
			}
			// Blank feedback passes Slack's own "required" check; the bot
			// must refuse it in the ack.
			resp, err := h.fake.SubmitView(ctx, "U2", view.ID, map[string]string{"What should Claude change?": "   "})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Action != "errors" || len(resp.Errors) == 0 {
				t.Fatalf("empty feedback answered with %+v, want response_action errors", resp)
			}
			r, err := h.st.GetRequest(ctx, "req-plan")
			if err != nil || !r.Pending() {
				t.Errorf("plan after refused feedback: %+v, %v; want pending", r.Decision, err)
			}
		})
	}
}

func TestOneTapAnswersASingleQuestion(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			h := newHarness(t, tr, harnessOpts{})
			s := h.newSession(t, "sess-question")
			input := `{"questions":[{"question":"Which database?","header":"Database","multiSelect":false,` +
				`"options":[{"label":"Postgres","description":"relational"},{"label":"SQLite","description":"a file"}]}]}`
			card := h.createRequest(t, s, store.Request{ID: "req-q", Kind: store.KindQuestion, ToolCall: store.ToolCall{
				ToolName: "AskUserQuestion",
				Input:    json.RawMessage(input),
			}}, "SQLite")
			if err := h.fake.Click(testCtx(t), "U3", card.Ref(), "SQLite"); err != nil {
				t.Fatal(err)
			}
			got, final := h.waitSettled(t, store.Request{ID: "req-q"}, card)
			if d := got.Decision; d.Outcome != store.OutcomeAllow || d.Answers["Which database?"] != "SQLite" || d.By != "U3" {
				t.Errorf("decision = %+v, want SQLite answered by U3", d)
			}
			if !final.HasText("SQLite") {
				t.Errorf("final card does not show the answer: %s", final.AllText())
			}
		})
	}
}

func TestSocketModeReconnectsWhenSlackAsks(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	if err := h.fake.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if n := h.fake.Connections(); n < 2 {
		t.Errorf("connections = %d, want a second one after the disconnect", n)
	}
	ts, err := h.fake.Mention(ctx, "U1", "C1", "after the reconnect")
	if err != nil {
		t.Fatal(err)
	}
	s, in := h.claim(t)
	if s.Thread.TS != ts || in.Text != "after the reconnect" {
		t.Errorf("session %+v input %+v", s.Thread, in)
	}
}

func TestSeveralQuestionsAreAnsweredWithMenusAndOneSubmit(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	s := h.newSession(t, "sess-multi")
	input := `{"questions":[` +
		`{"question":"Which database?","header":"DB","multiSelect":false,"options":[{"label":"Postgres","description":"big"},{"label":"SQLite","description":"small"}]},` +
		`{"question":"Which extras?","header":"Extras","multiSelect":true,"options":[{"label":"Metrics","description":"m"},{"label":"Tracing","description":"t"},{"label":"Logs","description":"l"}]}]}`
	card := h.createRequest(t, s, store.Request{ID: "req-multi", Kind: store.KindQuestion, ToolCall: store.ToolCall{
		ToolName: "AskUserQuestion",
		Input:    json.RawMessage(input),
	}}, "Submit answers")
	ctx := testCtx(t)
	// Submitting before answering is refused with an ephemeral.
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Submit answers"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U2", fakeslack.Text("Which database?")); err != nil {
		t.Fatal("incomplete submit not explained:", err)
	}
	if err := h.fake.Select(ctx, "U2", card.Ref(), "sg_q:0|0|req-multi", "Postgres"); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Select(ctx, "U2", card.Ref(), "sg_q:1|0|req-multi", "Metrics", "Logs"); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Click(ctx, "U2", card.Ref(), "Submit answers"); err != nil {
		t.Fatal(err)
	}
	got, _ := h.waitSettled(t, store.Request{ID: "req-multi"}, card)
	want := map[string]string{"Which database?": "Postgres", "Which extras?": "Metrics, Logs"}
	if d := got.Decision; d.Outcome != store.OutcomeAllow || d.Answers["Which database?"] != want["Which database?"] || d.Answers["Which extras?"] != want["Which extras?"] {
		t.Errorf("decision = %+v, want answers %v", d, want)
	}
}

// A worker's refusal is one line in the thread. A refused session (failed
// before the worker tells) shows failed on its status line; a refused
// input leaves a running session's status as it was.
func TestARefusalIsOneLineAndFailsOnlyARefusedSession(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	failed := h.newSession(t, "sess-refused")
	if _, err := h.st.UpdateSession(ctx, failed.ID, func(s *store.Session) error {
		s.State = store.SessionFailed
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h.publisher(t, failed)(store.Event{Type: store.EventRefused, Text: "slackgate refused to run this session: it is not signed <!here>"})
	if _, err := h.fake.WaitThread(ctx, "C1", failed.Thread.TS, fakeslack.Text("🚫 slackgate refused to run this session: it is not signed &lt;!here&gt;")); err != nil {
		t.Fatal("the refusal is not in the thread:", err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", failed.Thread.TS, fakeslack.Text("Failed: slackgate refused to run it")); err != nil {
		t.Fatal("the status line does not say the session failed:", err)
	}

	running := h.newSession(t, "sess-running")
	publish := h.publisher(t, running)
	publish(store.Event{Type: store.EventAssistantText, Text: "working on it"})
	publish(store.Event{Type: store.EventRefused, Text: "slackgate dropped a queued message: it is not signed"})
	// A session's events are shown one after another: once the next one
	// (a tool use, which leaves the status alone) is in the thread, the
	// refusal's status refresh, if any, is done.
	publish(store.Event{Type: store.EventToolUse, Tool: "Bash", Input: json.RawMessage(`{"command":"make lint"}`)})
	if _, err := h.fake.WaitThread(ctx, "C1", running.Thread.TS, fakeslack.Text("make lint")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitThread(ctx, "C1", running.Thread.TS, fakeslack.Text("🚫 slackgate dropped a queued message")); err != nil {
		t.Fatal("the refused input is not in the thread:", err)
	}
	e := h.bot.status.lock(running.ID)
	defer h.bot.status.unlock(e)
	if e.shown.Phase == blocks.PhaseFailed {
		t.Errorf("a refused input made the running session's status %+v", e.shown)
	}
}
