package fakeslack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

// BenchmarkCardRound measures what the fake itself spends on one decision
// of the load run (cmd/slackgate's BenchmarkDecisionsUnderLoad): a card
// posted (chat.postMessage), clicked (block_actions over Socket Mode, acked
// at once), and edited to its outcome (chat.update), with an OnMessage
// hook that reads every message the way the load run's does. The app's side
// is as thin as it can be (form bodies encoded once, a bare websocket that
// acks), so the figure is mostly the fake's.
//
//	go test -run '^$' -bench CardRound -benchtime 2000x ./bot/fakeslack
//
// Measured 2026-11-23: 526–595 → 435–453 µs a round and 1,875 → 1,245
// allocations, after blocks were decoded once per message version,
// messages found by ts through an index and Socket Mode frames written
// around the payload; 0.52–0.55 ms of CPU a round (cpu-µs/op), every limit
// still checked on every message and view.
func BenchmarkCardRound(b *testing.B) {
	f := fakeslack.New(b, fakeslack.WithoutRateModel(), fakeslack.OnMessage(func(_ string, m fakeslack.Message) {
		_, _, _ = m.AllText(), m.Buttons(), m.HasText("Approved")
	}))
	f.AddUser("U1", "alice")
	f.AddChannel("C1", "general")
	ctx := b.Context()
	ackAll(ctx, b, f)
	if err := f.WaitConnected(ctx); err != nil {
		b.Fatal(err)
	}
	pending, final := benchCards()
	post := form(b, url.Values{"channel": {"C1"}}, pending)
	hc := &http.Client{}
	b.Cleanup(hc.CloseIdleConnections)
	cpu := processCPU()
	for b.Loop() {
		var posted struct {
			OK      bool   `json:"ok"`
			Channel string `json:"channel"`
			TS      string `json:"ts"`
		}
		call(b, hc, f, "chat.postMessage", post, &posted)
		ref := fakeslack.MessageRef{Channel: posted.Channel, TS: posted.TS}
		if err := f.Click(ctx, "U1", ref, "Approve"); err != nil {
			b.Fatal(err)
		}
		call(b, hc, f, "chat.update", form(b, url.Values{"channel": {ref.Channel}, "ts": {ref.TS}}, final), nil)
	}
	// CPU, not wall time, is what the load run is short of (and the
	// machine may be shared, which stretches wall time but not CPU).
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCards renders a request the way the load run's stand-in asks it,
// pending and approved.
func benchCards() (pending, final blocks.Message) {
	at := time.Unix(1700000000, 0)
	s := store.Session{ID: "sess-bench", Thread: store.MessageRef{Channel: "C1", TS: "1700000000.000001"}, StartedBy: "U1",
		WorkDir: "/tmp/bench", State: store.SessionRunning, CreatedAt: at}
	r := store.Request{ID: "req-bench", SessionID: s.ID, CLIRequestID: "cli-bench", Kind: store.KindTool, ToolName: "Bash",
		Input: json.RawMessage(`{"command":"echo '[run s1] step 3' # asked-at 1700000000123456789","description":"Step 3"}`), CreatedAt: at}
	pending = blocks.Card(r, s)
	r.Decision = &store.Decision{Outcome: store.OutcomeAllow, By: "U1", ByName: "alice", At: at.Add(time.Second)}
	return pending, blocks.Card(r, s)
}

// form encodes a message's arguments the way slack-go sends them.
func form(b *testing.B, v url.Values, m blocks.Message) string {
	raw, err := json.Marshal(m.Blocks)
	if err != nil {
		b.Fatal(err)
	}
	v.Set("text", m.Text)
	v.Set("blocks", string(raw))
	return v.Encode()
}

func call(b *testing.B, hc *http.Client, f *fakeslack.Fake, method, body string, out any) {
	req, err := http.NewRequest(http.MethodPost, f.APIURL()+method, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+fakeslack.BotToken)
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(raw), `"ok":true`) {
		b.Fatalf("%s: %s, %v", method, raw, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.Fatal(err)
		}
	}
}

// ackAll connects a bare Socket Mode client that acks every envelope.
func ackAll(ctx context.Context, b *testing.B, f *fakeslack.Fake) {
	_, wsURL, err := slack.New(fakeslack.AppToken, slack.OptionAPIURL(f.APIURL()), slack.OptionAppLevelToken(fakeslack.AppToken)).StartSocketModeContext(ctx)
	if err != nil {
		b.Fatal(err)
	}
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	done := make(chan struct{})
	b.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var env struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(data, &env) != nil || env.EnvelopeID == "" {
				continue
			}
			if err := conn.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"envelope_id":%q}`, env.EnvelopeID)); err != nil {
				return
			}
		}
	}()
}
