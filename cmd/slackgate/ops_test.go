package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// get fetches url and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// TestReadyzNamesWhatIsDownAndNothingMore: whoever reaches the port (a
// command Claude runs, on the same host) learns which check fails, never
// why; the log has the why, once per failure and once per recovery.
func TestReadyzNamesWhatIsDownAndNothingMore(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	slackDown := errors.New("socket mode connecting to wss://wss-primary.slack.com/link?ticket=secret-ticket")
	var slack error
	logs := &syncBuffer{}
	srv := httptest.NewServer(opsHandler([]healthCheck{
		{"store", storeReady(st)},
		{"slack", func(context.Context) error { return slack }},
	}, nil, zerolog.New(logs)))
	defer srv.Close()

	if code, body := get(t, srv.URL+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || body != `{"ready":true}`+"\n" {
		t.Errorf("/readyz with everything up = %d %q", code, body)
	}

	slack = slackDown
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		code, body := get(t, srv.URL+"/readyz")
		if code != http.StatusServiceUnavailable || body != `{"ready":false,"down":["store","slack"]}`+"\n" {
			t.Errorf("/readyz with the store closed and Slack down = %d %q, want 503 naming both and nothing more", code, body)
		}
	}
	slack = nil
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || body != `{"ready":false,"down":["store"]}`+"\n" {
		t.Errorf("/readyz with Slack back = %d %q", code, body)
	}

	// The why is in the log, once per failure however often probed.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var failing, passing []string
	for _, l := range lines {
		var e struct{ Check, Message, Error string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch e.Message {
		case "readiness check failing":
			failing = append(failing, e.Check+": "+e.Error)
		case "readiness check passing again":
			passing = append(passing, e.Check)
		}
	}
	if len(failing) != 2 || !strings.HasPrefix(failing[0], "store: ") || !strings.Contains(failing[0], "readyz-probe") ||
		failing[1] != "slack: "+slackDown.Error() {
		t.Errorf("logged failures %q; want the store's and Slack's error, once each", failing)
	}
	if !slices.Equal(passing, []string{"slack"}) {
		t.Errorf("logged recoveries %q; want slack's, once", passing)
	}
}

// TestWorkerServesHealthAndReadiness runs `slackgate worker` on the real
// Redis: a worker has no Slack side, and still answers its probes.
func TestWorkerServesHealthAndReadiness(t *testing.T) {
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RedisURL, cfg.RedisKeyPrefix = redistest.URL(t), testPrefix("ops")
	cfg.ClaudeBin, cfg.WorkDir, cfg.WorkerID = relaytest.CLI(t), t.TempDir(), "ops-worker"
	cfg.DecisionVerifyKey = testKeys.verify
	cfg.ClaudeAsRoot = os.Geteuid() == 0 // Claude runs as whoever runs the tests (testConfig)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The CLI's environment: a key for the scripted model, which the
	// worker's start asks the CLI about.
	p := program{environ: relaytest.NewServer(t).Env(t), config: &cfg, stdout: io.Discard, stderr: io.Discard, healthListener: ln}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.run(ctx, []string{"worker"}) }()

	base := "http://" + ln.Addr().String()
	// The listener is bound already: these wait in its backlog until the
	// worker serves, so no retry is needed.
	if code, body := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || strings.Contains(body, "slack") {
		t.Errorf("/readyz = %d %q, want ready with no Slack check", code, body)
	}
	if _, body := get(t, base+"/metrics"); metricValue(t, body, "slackgate_pending_requests", `kind="tool"`) != 0 {
		t.Errorf("a fresh installation shows pending tool requests:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("slackgate worker returned %v", err)
	}
}

func TestMetricsCountAnApproval(t *testing.T) {
	t.Parallel()
	a := startApp(t, options{},
		relaytest.ToolUse("toolu_m", "Bash", bash("echo measured > m.txt", "Measure")),
		relaytest.Text("done"))
	thread := a.mention("measure it")
	card := a.card(thread, "echo measured")
	_, body := get(t, a.ops+"/metrics")
	if n := metricValue(t, body, "slackgate_pending_requests", `kind="tool"`); n != 1 {
		t.Errorf("slackgate_pending_requests{kind=tool} = %v with one card waiting, want 1", n)
	}
	// The click's response_url fails, so the outcome is an edit, and Slack
	// holds it back once: the failure and the 429 are counted.
	a.slack.FailNext(fakeslack.ResponseURLMethod, 1, "used_url")
	a.slack.RateLimit("chat.update", 1, time.Second)
	a.click(lee, card.Ref(), "Approve")
	a.settled(card.Ref(), "Approved")

	_, body = get(t, a.ops+"/metrics")
	if n := metricValue(t, body, "slackgate_pending_requests", `kind="tool"`); n != 0 {
		t.Errorf("slackgate_pending_requests{kind=tool} = %v once decided, want 0", n)
	}
	if n := metricValue(t, body, "slackgate_outbox_depth", `lane="card"`); n < 0 {
		t.Errorf("slackgate_outbox_depth{lane=card} is missing:\n%s", grepLines(body, "outbox"))
	}
	for _, want := range []struct{ name, labels string }{
		{"slackgate_decisions_total", `decider="person",outcome="allow"`},
		{"slackgate_decision_seconds_count", `kind="tool"`},
		{"slackgate_slack_calls_total", `method="chat.postMessage"`},
		{"slackgate_slack_rate_limited_total", `method="chat.update"`},
		{"slackgate_slack_errors_total", `method="response_url"`},
		{"slackgate_outbox_wait_seconds_count", `lane="card"`},
		{"slackgate_store_op_seconds_count", `op="decide"`},
	} {
		if v := metricValue(t, body, want.name, want.labels); v < 1 {
			t.Errorf("%s{%s} = %v after one approval, want at least 1", want.name, want.labels, v)
		}
	}
	if code, body := get(t, a.ops+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz of a running app = %d %q", code, body)
	}
}

// metricValue finds one sample in Prometheus' text format (labels in the
// order the exposition sorts them); -1 when absent.
func metricValue(t *testing.T, body, name, labels string) float64 {
	t.Helper()
	prefix := fmt.Sprintf("%s{%s} ", name, labels)
	if labels == "" {
		prefix = name + " "
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f
		}
	}
	return -1
}

// TestDashboardQueriesOurMetrics parses the Grafana dashboard and checks
// that every series it queries is one newMetrics defines, so a renamed
// metric cannot leave a panel silently empty.
func TestDashboardQueriesOurMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/slackgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("deploy/grafana/slackgate.json: %v", err)
	}
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`slackgate_[a-z_]+`)
	queried := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range series.FindAllString(tg.Expr, -1) {
				queried++
				base := strings.TrimPrefix(name, "slackgate_")
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					base = strings.TrimSuffix(base, suffix)
				}
				if !strings.Contains(string(src), `"`+base+`"`) {
					t.Errorf("panel %q queries %s, which metrics.go does not define", p.Title, name)
				}
			}
		}
	}
	if queried < 8 {
		t.Errorf("the dashboard queries %d series; want a panel for each of slackgate's metrics", queried)
	}
}

// TestMetricsCountSessionsByState holds one place (MAX_SESSIONS=1) with a
// session waiting for a decision while a second one queues behind it, then
// lets the first finish: the gauges follow each step.
func TestMetricsCountSessionsByState(t *testing.T) {
	t.Parallel()
	step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
		if len(req.ToolResults()) > 0 {
			return relaytest.Text("counted")
		}
		n := strings.TrimPrefix(req.LastUserText(), "count ")
		return relaytest.ToolUse("toolu_"+n, "Bash", bash("echo "+n+" > "+n+".txt", "Count"))
	})
	a := startApp(t, options{configure: func(c *Config) { c.MaxSessions = 1 }}, step, step, step, step)
	sessionsAre(t, a, "before any session", 0, 0, 0, 0)

	first := a.mention("count one")
	card := a.card(first, "echo one")
	second := a.mention("count two")
	a.threadText(second, "Queued")
	sessionsAre(t, a, "one waits for a decision, one for a place", 0, 1, 0, 1)

	// The first finishes and gives its place way to the second, which
	// starts and waits for its own decision.
	a.click(lee, card.Ref(), "Approve")
	a.threadText(first, "counted")
	card = a.card(second, "echo two")
	sessionsAre(t, a, "the second waits for a decision", 0, 1, 0, 0)
	// The first's process was stopped (and its exit told) before the
	// second's could start.
	if _, body := get(t, a.ops+"/metrics"); metricValue(t, body, "slackgate_cli_exits_total", `cause="evicted"`) != 1 {
		t.Errorf("one claude evicted to make room; metrics say:\n%s", grepLines(body, "cli_exits"))
	}

	a.click(lee, card.Ref(), "Approve")
	a.threadText(second, "counted")
	_, body := get(t, a.ops+"/metrics")
	if busy := metricValue(t, body, "slackgate_sessions", `state="running"`) + metricValue(t, body, "slackgate_sessions", `state="idle"`); busy != 1 ||
		metricValue(t, body, "slackgate_sessions", `state="waiting"`) != 0 {
		t.Errorf("after the last answer: want the one process running or idle, none waiting:\n%s", grepLines(body, "slackgate_sessions"))
	}
}

// sessionsAre checks the session gauges of a scrape.
func sessionsAre(t *testing.T, a *app, when string, running, waiting, idle, queued float64) {
	t.Helper()
	_, body := get(t, a.ops+"/metrics")
	got := []float64{
		metricValue(t, body, "slackgate_sessions", `state="running"`),
		metricValue(t, body, "slackgate_sessions", `state="waiting"`),
		metricValue(t, body, "slackgate_sessions", `state="idle"`),
		metricValue(t, body, "slackgate_sessions_queued", ""),
	}
	if !slices.Equal(got, []float64{running, waiting, idle, queued}) {
		t.Errorf("%s: running, waiting, idle, queued = %v, want %v\n%s", when, got,
			[]float64{running, waiting, idle, queued}, grepLines(body, "slackgate_sessions"))
	}
}

// grepLines keeps the lines of s that contain substr.
func grepLines(s, substr string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(out, "\n")
}

// TestSlackCallErrorsAndLimitsAreCountedApart: a failed call counts as an
// error, a 429 as rate limited and not as an error, by method.
func TestSlackCallErrorsAndLimitsAreCountedApart(t *testing.T) {
	m := newMetrics()
	m.SlackCall("chat.update", time.Millisecond, nil)
	m.SlackCall("chat.update", time.Millisecond, errors.New("internal_error"))
	m.SlackCall("chat.postMessage", time.Millisecond, &slack.RateLimitedError{RetryAfter: time.Second})
	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	_, body := get(t, srv.URL)
	for _, tc := range []struct {
		name, labels string
		want         float64
	}{
		{"slackgate_slack_calls_total", `method="chat.update"`, 2},
		{"slackgate_slack_errors_total", `method="chat.update"`, 1},
		{"slackgate_slack_rate_limited_total", `method="chat.postMessage"`, 1},
		{"slackgate_slack_errors_total", `method="chat.postMessage"`, -1}, // a 429 is no error
	} {
		if got := metricValue(t, body, tc.name, tc.labels); got != tc.want {
			t.Errorf("%s{%s} = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
