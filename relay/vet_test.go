package relay_test

import (
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
)

// malloryKey signs what a second bot on the same store, with a key of its
// own, would write.
var malloryKey = ed25519.NewKeyFromSeed([]byte("relay e2e tests: mallory's seed!"))

// requireAudit finds the audit entry of action about sessionID and checks
// it names who the refused record claimed and says why.
func requireAudit(t *testing.T, h *harness, action store.AuditAction, sessionID, claimedBy, why string) {
	t.Helper()
	entries, err := h.st.AuditLog(h.ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == action && e.SessionID == sessionID && strings.Contains(e.Message, why) {
			if e.By != claimedBy {
				t.Errorf("%s audit entry %+v names %q, want the claimed %q", action, e, e.By, claimedBy)
			}
			return
		}
	}
	t.Errorf("no %s audit entry of %s saying %q in %+v", action, sessionID, why, entries)
}

// TestE2EAWorkerRunsOnlySignedSessionsInItsOwnDirectories writes sessions
// into the store as someone with store access would: unsigned, signed
// with another key, signed and then altered, and signed by the bots' key
// but asking for what the worker's own configuration does not allow. Each
// asks for acceptEdits, in which Claude would write files without asking.
// The worker starts no Claude for any of them: each is failed, its thread
// told why, its refusal audited; and the worker goes on to run a genuine
// session.
func TestE2EAWorkerRunsOnlySignedSessionsInItsOwnDirectories(t *testing.T) {
	onEachBackend(t, testOnlySignedSessions)
}

func testOnlySignedSessions(t *testing.T, open func(testing.TB) store.Store) {
	h := newHarnessOn(t, open, "", []relaytest.Step{relaytest.Text("the genuine session ran")})
	outside := t.TempDir()
	mallory := func(id string, change func(*store.Session)) store.Session {
		s := store.Session{ID: id, Thread: store.MessageRef{Channel: "C1", TS: uuid.NewString()}, WorkDir: h.dir,
			StartedBy: "U6", PermissionMode: "acceptEdits", Model: "claude-opus-4-1", State: store.SessionQueued, CreatedAt: time.Now()}
		if change != nil {
			change(&s)
		}
		return s
	}
	type forged struct {
		name string
		s    store.Session
		key  ed25519.PrivateKey
		why  string
		// after changes the session once it is signed.
		after func(*store.Session)
	}
	cases := []forged{
		{"unsigned", mallory(uuid.NewString(), nil), nil, relay.WhyUnsigned, nil},
		{"signed with another key", mallory(uuid.NewString(), nil), malloryKey, relay.WhyForged, nil},
		{"bypassPermissions swapped in after signing", mallory(uuid.NewString(), func(s *store.Session) { s.PermissionMode = "default" }), botKey, relay.WhyForged,
			func(s *store.Session) { s.PermissionMode = "bypassPermissions" }},
		{"signed, in /", mallory(uuid.NewString(), func(s *store.Session) { s.WorkDir = "/" }), botKey, relay.WhyWorkDir, nil},
		{"signed, in another directory", mallory(uuid.NewString(), func(s *store.Session) { s.WorkDir = outside }), botKey, relay.WhyWorkDir, nil},
		{"signed, in an allowed directory's parent", mallory(uuid.NewString(), func(s *store.Session) { s.WorkDir = h.dir + "/.." }), botKey, relay.WhyWorkDir, nil},
		{"signed, without a directory", mallory(uuid.NewString(), func(s *store.Session) { s.WorkDir = "" }), botKey, relay.WhyWorkDir, nil},
		{"signed, with an id no bot makes", mallory("../../sessions/x", nil), botKey, relay.WhyBadID, nil},
		{"signed, with an upper-case id", mallory(strings.ToUpper(uuid.NewString()), nil), botKey, relay.WhyBadID, nil},
		{"signed approval API session", mallory(uuid.NewString(), func(s *store.Session) { s.API = true }), botKey, relay.WhyAPI, nil},
		{"signed, with a mode Claude Code does not know", mallory(uuid.NewString(), func(s *store.Session) { s.PermissionMode = "yolo" }), botKey, relay.WhyMode, nil},
	}
	for _, c := range cases {
		if c.key != nil {
			if err := store.SignSession(c.key, &c.s); err != nil {
				t.Fatal(err)
			}
		}
		if c.after != nil {
			c.after(&c.s)
		}
		h.createSession(c.s, nil)
		h.queue(store.Input{SessionID: c.s.ID, Text: "write forged.txt", User: "U6"}, botKey)
	}
	for _, c := range cases {
		e := h.waitEventOf(c.s.ID, c.name+"'s refusal", ofType(store.EventRefused))
		if e.Text != relay.RefusedSession(c.why) {
			t.Errorf("%s: the thread is told %q, want %q", c.name, e.Text, relay.RefusedSession(c.why))
		}
		checkSession(t, h, c.s.ID, func(s store.Session) bool { return s.State == store.SessionFailed && s.Worker == "" })
		requireAudit(t, h, store.AuditSessionRefused, c.s.ID, "U6", c.why)
	}
	for _, e := range h.seen {
		if e.Type == store.EventSessionStarted {
			t.Errorf("a Claude process started for a refused session: %+v", e)
		}
	}
	if n := h.srv.StepsUsed(); n != 0 {
		t.Errorf("the model was called %d times for refused sessions", n)
	}

	h.startSession("hello")
	if res := h.waitResult(); res.IsError || res.Text != "the genuine session ran" {
		t.Errorf("the genuine session after the refusals: %+v", res)
	}
}

// TestE2EAForgedInputIsDroppedAndTheSessionGoesOn queues, into a genuine
// session whose Claude is running, inputs someone with store access could
// write: unsigned, signed with another key, a signed one moved to this
// session, a copy of a delivered one, and an unsigned stop. Each is
// dropped (Claude never sees it, nothing is put back), the thread is told
// in the worker's words, each is audited, and the genuine message queued
// among them still reaches Claude.
func TestE2EAForgedInputIsDroppedAndTheSessionGoesOn(t *testing.T) {
	onEachBackend(t, testForgedInputs)
}

func testForgedInputs(t *testing.T, open func(testing.TB) store.Store) {
	h := newHarnessOn(t, open, "", []relaytest.Step{relaytest.Text("first done"), relaytest.Text("second done")})
	id := h.startSession("first")
	if res := h.waitEventOf(id, "the first turn", ofType(store.EventResult)).Result; res.Text != "first done" {
		t.Fatalf("first turn: %+v", res)
	}
	moved := store.Input{ID: uuid.NewString(), SessionID: uuid.NewString(), Text: forgedMessage + " (moved)", User: "U1", At: time.Now()}
	if err := store.SignInput(botKey, &moved); err != nil {
		t.Fatal(err)
	}
	moved.SessionID = id
	type want struct {
		why     string
		control bool
		by      string
	}
	var wants []want
	h.queue(store.Input{SessionID: id, Text: forgedMessage + " (unsigned)", User: "U6"}, nil)
	wants = append(wants, want{relay.WhyUnsigned, false, "U6"})
	h.queue(store.Input{SessionID: id, Text: forgedMessage + " (another key)", User: "U6"}, malloryKey)
	wants = append(wants, want{relay.WhyForged, false, "U6"})
	h.queue(moved, nil)
	wants = append(wants, want{relay.WhyForged, false, "U1"})
	h.queue(store.Input{SessionID: id, Control: store.ControlInterrupt, User: "U6"}, nil)
	wants = append(wants, want{relay.WhyUnsigned, true, "U6"})
	genuine := h.queue(store.Input{SessionID: id, Text: "second", User: "U1"}, botKey)
	if _, err := h.st.Enqueue(h.ctx, genuine); err != nil { // the same signed input, queued again
		t.Fatal(err)
	}
	wants = append(wants, want{relay.WhyReplay, false, "U1"})

	for i, w := range wants {
		e := h.waitEventOf(id, "refusal", ofType(store.EventRefused))
		if e.Text != relay.RefusedInput(w.control, w.why) {
			t.Errorf("refusal %d: the thread is told %q, want %q", i, e.Text, relay.RefusedInput(w.control, w.why))
		}
	}
	entries, err := h.st.AuditLog(h.ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var refused []store.AuditEntry
	for _, e := range entries {
		if e.Action == store.AuditInputRefused && e.SessionID == id {
			refused = append(refused, e)
		}
	}
	if len(refused) != len(wants) {
		t.Fatalf("%d input_refused audit entries, want %d: %+v", len(refused), len(wants), refused)
	}
	for i, w := range wants {
		if e := refused[i]; e.By != w.by || !strings.Contains(e.Message, w.why) {
			t.Errorf("audit entry %d = %+v, want by %s saying %q", i, e, w.by, w.why)
		}
	}
	if res := h.waitEventOf(id, "the second turn", ofType(store.EventResult)).Result; res.IsError || res.Text != "second done" {
		t.Errorf("second turn: %+v", res)
	}
	reqs := h.srv.Requests()
	texts := strings.Join(reqs[len(reqs)-1].UserTexts(), "|")
	if strings.Contains(texts, "FORGED") || strings.Count(texts, "second") != 1 {
		t.Errorf("the model saw %q; want the genuine message once and no forged one", texts)
	}
	for _, e := range h.seen {
		if e.Type == store.EventInterrupted || strings.Contains(e.Text, "FORGED") {
			t.Errorf("a forged input acted or its words reached the thread: %+v", e)
		}
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionRunning })
}

// TestE2EAForgedFirstInputStartsNothing: a genuine session whose first
// queued input is forged starts no Claude; the session is not failed for
// it, and its next genuine message starts it.
func TestE2EAForgedFirstInputStartsNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "", []relaytest.Step{relaytest.Text("genuine")})
	id := uuid.NewString()
	h.createSession(store.Session{ID: id, Thread: store.MessageRef{Channel: "C1", TS: id}, WorkDir: h.dir, StartedBy: "U1",
		State: store.SessionQueued, CreatedAt: time.Now()}, botKey)
	h.sessID = id
	h.queue(store.Input{SessionID: id, Text: forgedMessage, User: "U1"}, malloryKey)
	if e := h.waitEvent("the refusal", ofType(store.EventRefused)); e.Text != relay.RefusedInput(false, relay.WhyForged) {
		t.Errorf("the thread is told %q", e.Text)
	}
	if n := h.srv.StepsUsed(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	checkSession(t, h, id, func(s store.Session) bool { return s.State == store.SessionQueued })
	h.send("hello")
	if res := h.waitResult(); res.Text != "genuine" {
		t.Errorf("result %+v", res)
	}
	if strings.Contains(h.srv.LastUserText(), "FORGED") {
		t.Errorf("the model saw the forged input: %q", h.srv.LastUserText())
	}
}
