package relay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// TestE2EAnInputFiledUnderAnotherSessionIsDropped: someone with access to
// Redis moves a genuine message, signed for one session, into another
// session's inbox (as text, past Enqueue). Its signature verifies, but it
// was signed for the other session: the worker drops it, says so in the
// thread and the audit log, and the session goes on.
func TestE2EAnInputFiledUnderAnotherSessionIsDropped(t *testing.T) {
	t.Parallel()
	prefix := "relaytest:" + uuid.NewString()[:8]
	url := redistest.URL(t)
	h := newHarnessOn(t, func(tb testing.TB) store.Store {
		st, err := redisstore.New(context.Background(), url, redisstore.WithPrefix(prefix))
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}, "", []relaytest.Step{relaytest.Text("first done"), relaytest.Text("second done")})
	id := h.startSession("first")
	if res := h.waitEventOf(id, "the first turn", ofType(store.EventResult)).Result; res.Text != "first done" {
		t.Fatalf("first turn: %+v", res)
	}

	other := store.Input{ID: uuid.NewString(), SessionID: uuid.NewString(), Text: forgedMessage + " (another session's)",
		User: "U1", At: time.Now()}
	if err := store.SignInput(botKey, &other); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	inbox := "{" + prefix + ":s:" + id + "}:inbox" // store/redisstore/keys.go
	if err := rdb.RPush(h.ctx, inbox, raw).Err(); err != nil {
		t.Fatal(err)
	}
	if e := h.waitEventOf(id, "refusal", ofType(store.EventRefused)); e.Text != relay.RefusedInput(false, relay.WhyOtherSession) {
		t.Errorf("the thread is told %q, want %q", e.Text, relay.RefusedInput(false, relay.WhyOtherSession))
	}
	refusedAudit := false
	entries, err := h.st.AuditLog(h.ctx, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		refusedAudit = refusedAudit || (e.Action == store.AuditInputRefused && e.SessionID == id && strings.Contains(e.Message, relay.WhyOtherSession))
	}
	if !refusedAudit {
		t.Errorf("no input_refused audit entry saying %q", relay.WhyOtherSession)
	}
	h.send("second")
	if res := h.waitEventOf(id, "the second turn", ofType(store.EventResult)).Result; res.IsError || res.Text != "second done" {
		t.Errorf("second turn: %+v", res)
	}
	reqs := h.srv.Requests()
	if texts := strings.Join(reqs[len(reqs)-1].UserTexts(), "|"); strings.Contains(texts, "FORGED") {
		t.Errorf("the model saw %q; the other session's message must not reach it", texts)
	}
}
