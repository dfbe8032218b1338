package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// BenchmarkReconcileTenThousand starts a bot on a Redis holding 10,000
// pending requests (100 sessions of 100 each, in 100 channels) whose
// creation events a bot that died had acknowledged: 99 in 100 have their
// card recorded, one in 100 lost its card. It measures, from Run, the
// bot's first reconcile pass and the time until every lost card is in
// Slack, with the bot's default budgets and fakeslack's rate model, and
// checks that each lost card is posted once and no other card is touched.
//
//	.ci/with-redis.sh go test -run '^$' -bench ReconcileTenThousand -benchtime 1x -count 3 ./bot
//
// Target: every lost card in Slack within 2 s. Measured 2026-11-23 12:52
// UTC (load average 7.2): 0.22–0.36 s. Before, with a status refresh per
// posted card, each reading every pending request: 9.0–16.7 s; now one
// refresh per session, counted from the list the pass read.
func BenchmarkReconcileTenThousand(b *testing.B) {
	const sessions, perSession, lostEvery = 100, 100, 100
	url := redistest.URL(b)
	for range b.N {
		b.StopTimer()
		ctx := testCtx(b)
		st, err := redisstore.New(ctx, url, redisstore.WithPrefix("reconcile-"+strconv.FormatInt(time.Now().UnixNano(), 10)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		posted := make(chan string, sessions*perSession)
		fake := fakeslack.New(b, fakeslack.OnMessage(func(method string, m fakeslack.Message) {
			if method == "chat.postMessage" && hasButton(m, "Approve") {
				posted <- m.Channel
			}
		}))
		lost := seedPending(b, st, fake, sessions, perSession, lostEvery)
		from := len(fake.Calls())
		passed := make(chan struct{})
		bot, err := New(Config{BotToken: fakeslack.BotToken, AppToken: fakeslack.AppToken, APIURL: fake.APIURL(), WorkDir: testWorkDir,
			ConsumerName: "bot-new", Approvers: People{Anyone: true}, SigningKey: testSigningKey}, st, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		bot.afterReconcile = sync.OnceFunc(func() { close(passed) })
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { done <- bot.Run(runCtx) }()
		<-passed
		pass := time.Since(start)
		for range lost {
			select {
			case <-posted:
			case <-ctx.Done():
				b.Fatalf("only some of the %d lost cards were posted", len(lost))
			}
		}
		all := time.Since(start)
		b.StopTimer()
		stop()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
		b.ReportMetric(pass.Seconds(), "pass-s")
		b.ReportMetric(all.Seconds(), "lost-cards-posted-s")
		checkReconciled(b, fake.Calls()[from:], st, lost)
	}
}

// cardTSPrefix starts the ts of every card the seed records.
const cardTSPrefix = "1700000500."

func benchChannel(c int) string { return fmt.Sprintf("CR%03d", c) }

// seedPending stores the sessions and their pending requests, records a
// card for all but every lostEvery-th, and has a bot that then died
// acknowledge every creation event. It returns the ids of the requests
// without a card.
func seedPending(b *testing.B, st store.Store, fake *fakeslack.Fake, sessions, perSession, lostEvery int) []string {
	ctx := testCtx(b)
	old := time.Now().Add(-time.Hour)
	var mu sync.Mutex
	var lost []string
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for s := range sessions {
		root, status := seedThread(b, fake, benchChannel(s))
		g.Go(func() error {
			sess := store.Session{ID: fmt.Sprint("sess-", s), Thread: root, Status: status,
				WorkDir: testWorkDir, StartedBy: "U1", State: store.SessionRunning, CreatedAt: old, UpdatedAt: old}
			if err := st.CreateSession(gctx, sess); err != nil {
				return err
			}
			for i := range perSession {
				id := fmt.Sprintf("req-%d-%d", s, i)
				r := store.Request{ID: id, SessionID: sess.ID, CLIRequestID: "cli-" + id, Kind: store.KindTool, ToolCall: store.ToolCall{
					ToolName: "Bash",
					Input:    json.RawMessage(`{"command":"make deploy","description":"Deploy"}`),
				}, CreatedAt: old.Add(time.Duration(i) * time.Millisecond)}
				if err := st.CreateRequest(gctx, r); err != nil {
					return err
				}
				if (s*perSession+i)%lostEvery == 0 {
					mu.Lock()
					lost = append(lost, id)
					mu.Unlock()
					continue
				}
				if _, err := st.SetCard(gctx, id, store.MessageRef{Channel: sess.Thread.Channel, TS: fmt.Sprintf("%s%06d", cardTSPrefix, i)}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	ackEverything(b, st)
	return lost
}

// seedThread makes a channel with a session's thread and its status line,
// as a bot that ran before left them.
func seedThread(b *testing.B, fake *fakeslack.Fake, channel string) (root, status store.MessageRef) {
	fake.AddChannel(channel, strings.ToLower(channel))
	api := slack.New(fakeslack.BotToken, slack.OptionAPIURL(fake.APIURL()))
	ch, ts, err := api.PostMessage(channel, slack.MsgOptionText("a session's first message", false))
	if err != nil {
		b.Fatal(err)
	}
	root = store.MessageRef{Channel: ch, TS: ts}
	if ch, ts, err = api.PostMessage(channel, slack.MsgOptionText("⏳ Working…", false), slack.MsgOptionTS(root.TS)); err != nil {
		b.Fatal(err)
	}
	return root, store.MessageRef{Channel: ch, TS: ts}
}

// ackEverything has a bot that dies right after consume every event in
// the log, up to a marker published last.
func ackEverything(b *testing.B, st store.Store) {
	ctx := testCtx(b)
	if _, err := st.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "sess-0", Text: "last words of the old bot"}); err != nil {
		b.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := st.Consume(cctx, consumerGroup, "bot-dead", func(_ context.Context, e store.Event) error {
		if e.Type == store.EventAssistantText {
			cancel()
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	if ctx.Err() != nil {
		b.Fatal("the dead bot never saw its events")
	}
}

// checkReconciled checks that every lost card was posted once and
// recorded, and that no card that existed was touched (a session's status
// line may be brought up to date).
func checkReconciled(b *testing.B, calls []fakeslack.Call, st store.Store, lost []string) {
	ctx := testCtx(b)
	cards := 0
	for _, c := range calls {
		switch {
		case c.Method == "chat.update" && strings.HasPrefix(c.Params.Get("ts"), cardTSPrefix):
			b.Errorf("a card that exists was edited: %s", c.Params.Get("text"))
		case c.Method == "chat.postMessage" && c.Error == "" && strings.Contains(c.Params.Get("text"), "Claude wants"):
			cards++
		}
	}
	if cards != len(lost) {
		b.Errorf("%d cards posted for %d lost", cards, len(lost))
	}
	for _, id := range lost {
		r, err := st.GetRequest(ctx, id)
		if err != nil || r.Card.IsZero() {
			b.Errorf("request %s: card %+v, err %v; want its new card recorded", id, r.Card, err)
		}
	}
}
