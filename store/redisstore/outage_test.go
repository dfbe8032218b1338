package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"PasswordOnlyIsMasked", "redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"},
		{"UserAndPasswordKeepsUser", "rediss://app:s3cret@host:6380/2", "rediss://app:***@host:6380/2"},
		{"NoPasswordIsUnchanged", "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"},
		{"UnparseableStillHidesUserinfo", "redis://:s3cret@host:port/0", "redis://***@host:port/0"},
		{"ClusterPasswordIsMasked", "redis+cluster://app:s3cret@h1:6379,h2:6379/", "redis+cluster://app:***@h1:6379,h2:6379/"},
		{"SentinelPasswordIsMasked", "rediss+sentinel://:s3cret@s1:26379,s2:26379/main/0", "rediss+sentinel://:***@s1:26379,s2:26379/main/0"},
		{"SeedListIsUnchanged", "10.0.0.1:6379,10.0.0.2:6379", "10.0.0.1:6379,10.0.0.2:6379"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := redisstore.MaskURL(tc.in); got != tc.want {
				t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNewFailsFastWithoutLeakingThePassword(t *testing.T) {
	port := redistest.FreePort(t)
	for _, tc := range []struct {
		name, url, wantInErr string
	}{
		{"NothingListening", fmt.Sprintf("redis://:s3cret@127.0.0.1:%d/0", port), fmt.Sprintf("redis://:***@127.0.0.1:%d/0", port)},
		{"BadPort", "redis://:s3cret@127.0.0.1:notaport/0", "redis://***@127.0.0.1:notaport/0"},
		{"WrongScheme", "http://:s3cret@127.0.0.1:6379/0", "http://:***@127.0.0.1:6379/0"},
		{"BadDatabase", "redis://:s3cret@127.0.0.1:6379/x", "redis://:***@127.0.0.1:6379/x"},
		{"NoClusterListening", fmt.Sprintf("redis+cluster://:s3cret@127.0.0.1:%d,127.0.0.1:%d/", port, port), fmt.Sprintf("redis+cluster://:***@127.0.0.1:%d,127.0.0.1:%d/", port, port)},
		{"NoSentinelListening", fmt.Sprintf("redis+sentinel://:s3cret@127.0.0.1:%d/main", port), fmt.Sprintf("redis+sentinel://:***@127.0.0.1:%d/main", port)},
		{"ClusterWithADatabase", "redis+cluster://:s3cret@127.0.0.1:6379/2", "redis+cluster://:***@127.0.0.1:6379/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := redisstore.New(t.Context(), tc.url)
			if err == nil {
				_ = s.Close()
				t.Fatal("New succeeded")
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error leaks the password: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("error %q does not name %s", err, tc.wantInErr)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("New took %v to fail", d)
			}
		})
	}
}

func TestNewRejectsBadPrefix(t *testing.T) {
	for _, p := range []string{"", "a{b}", "a*", "a?b", "a[b]"} {
		t.Run(strconv.Quote(p), func(t *testing.T) {
			_, err := redisstore.New(t.Context(), "redis://127.0.0.1:1/0", redisstore.WithPrefix(p))
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("New with prefix %q: err = %v, want ErrInvalid", p, err)
			}
		})
	}
}

func TestOutage(t *testing.T) {
	srv := redistest.Start(t)
	t.Run("DecisionReachesWaiterAcrossRestart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		prefix := uniquePrefix()
		waiter := open(t, srv.URL(), prefix)
		r := store.Request{ID: "req-outage", SessionID: "sess-outage", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: time.Now()}
		if err := waiter.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		type result struct {
			d   store.Decision
			err error
		}
		done := make(chan result, 1)
		go func() {
			d, err := waiter.WaitDecision(ctx, r.ID)
			done <- result{d, err}
		}()
		eventually(t, "the waiter to register", func() bool { return redisstore.Waiters(waiter) == 1 })

		srv.Kill()
		srv.Restart()

		decider := open(t, srv.URL(), prefix)
		d := store.Decision{Outcome: store.OutcomeAllow, By: "U1", At: time.Now()}
		if _, err := decider.Decide(ctx, r.ID, d); err != nil {
			t.Fatalf("Decide after restart: %v", err)
		}
		res := <-done
		if res.err != nil {
			t.Fatalf("WaitDecision across a restart: %v", res.err)
		}
		if res.d.By != "U1" || res.d.Outcome != store.OutcomeAllow {
			t.Fatalf("WaitDecision = %+v, want the decision by U1", res.d)
		}
	})
	t.Run("DecisionReachesWaiterWhenPubSubConnectionDrops", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		prefix := uniquePrefix()
		waiter := open(t, srv.URL(), prefix)
		decider := open(t, srv.URL(), prefix)
		r := store.Request{ID: "req-drop", SessionID: "sess-drop", Kind: store.KindTool, ToolCall: store.ToolCall{ToolName: "Bash"}, CreatedAt: time.Now()}
		if err := waiter.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := waiter.WaitDecision(ctx, r.ID)
			done <- err
		}()
		eventually(t, "the waiter to register", func() bool { return redisstore.Waiters(waiter) == 1 })
		// Drop every pub/sub connection, then decide at once: the decision
		// is published while the waiter's store is, or is not yet,
		// subscribed again; it must arrive either way.
		if err := decider.Client().ClientKillByFilter(ctx, "TYPE", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := decider.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeDeny, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("WaitDecision after the pub/sub connection dropped: %v", err)
		}
	})
	t.Run("NextInputSurvivesRestart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		prefix := uniquePrefix()
		worker := open(t, srv.URL(), prefix)
		if _, err := worker.Enqueue(ctx, store.Input{SessionID: "sess-n", Text: "first"}); err != nil {
			t.Fatal(err)
		}
		if _, err := worker.Claim(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
		if _, err := worker.NextInput(ctx, "sess-n", "w1"); err != nil {
			t.Fatal(err)
		}
		type result struct {
			in  store.Input
			err error
		}
		done := make(chan result, 1)
		go func() {
			in, err := worker.NextInput(ctx, "sess-n", "w1")
			done <- result{in, err}
		}()
		eventually(t, "NextInput to block in Redis", func() bool { return blockedClients(t, srv.URL()) == 1 })

		srv.Kill()
		srv.Restart()

		bot := open(t, srv.URL(), prefix)
		if _, err := bot.Enqueue(ctx, store.Input{SessionID: "sess-n", Text: "second"}); err != nil {
			t.Fatalf("Enqueue after restart: %v", err)
		}
		res := <-done
		if res.err != nil || res.in.Text != "second" {
			t.Fatalf("NextInput across a restart = %+v, %v; want the second input", res.in, res.err)
		}
	})
	t.Run("ConsumeSurvivesRestart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		prefix := uniquePrefix()
		bot := open(t, srv.URL(), prefix)
		got := make(chan store.Event, 16)
		cctx, stop := context.WithCancel(ctx)
		consumed := make(chan error, 1)
		go func() {
			consumed <- bot.Consume(cctx, "bots", "b1", func(_ context.Context, e store.Event) error {
				got <- e
				return nil
			})
		}()
		defer func() {
			stop()
			if err := <-consumed; err != nil {
				t.Errorf("Consume: %v", err)
			}
		}()
		eventually(t, "Consume to block in Redis", func() bool { return blockedClients(t, srv.URL()) == 1 })

		srv.Kill()
		srv.Restart()

		worker := open(t, srv.URL(), prefix)
		if _, err := worker.Publish(ctx, store.Event{Type: store.EventAssistantText, SessionID: "s", Text: "after", At: time.Now()}); err != nil {
			t.Fatalf("Publish after restart: %v", err)
		}
		select {
		case e := <-got:
			if e.Text != "after" {
				t.Fatalf("Consume delivered %+v, want the event published after the restart", e)
			}
		case <-ctx.Done():
			t.Fatal("Consume delivered nothing after the restart")
		}
	})
	t.Run("ClaimSurvivesRestart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		prefix := uniquePrefix()
		worker := open(t, srv.URL(), prefix)
		type result struct {
			id  string
			err error
		}
		done := make(chan result, 1)
		go func() {
			id, err := worker.Claim(ctx, "w1")
			done <- result{id, err}
		}()
		eventually(t, "Claim to block in Redis", func() bool { return blockedClients(t, srv.URL()) == 1 })

		srv.Kill()
		srv.Restart()

		bot := open(t, srv.URL(), prefix)
		if _, err := bot.Enqueue(ctx, store.Input{SessionID: "sess-1", Text: "hello", At: time.Now()}); err != nil {
			t.Fatalf("Enqueue after restart: %v", err)
		}
		res := <-done
		if res.err != nil || res.id != "sess-1" {
			t.Fatalf("Claim across a restart = %q, %v; want sess-1", res.id, res.err)
		}
	})
}

// eventually polls cond until it holds (bounded), for states the test can
// observe but not be notified of.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// blockedClients reads INFO clients' blocked_clients.
func blockedClients(t *testing.T, url string) int {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	info, err := c.Info(t.Context(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "blocked_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}
