package main

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/relay/relaytest"
)

// BenchmarkApprovalRoundTrip measures what a person in Slack waits for, with
// the whole product and the real CLI: a mention until its card shows up
// (Claude Code starting, the model's first reply, the request stored,
// rendered and posted), and the Approve click until the command's result
// reaches the model (decision stored, control_response written, the tool
// run). Each iteration is a new session.
//
//	CLAUDE_BIN=… go test -run '^$' -bench ApprovalRoundTrip -benchtime 20x ./cmd/slackgate
func BenchmarkApprovalRoundTrip(b *testing.B) {
	for _, tr := range []transport{socketMode, httpMode} {
		b.Run(string(tr), func(b *testing.B) {
			// Every session asks to run a command named after its prompt,
			// then says done once the result is in.
			step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
				if rs := req.ToolResults(); len(rs) > 0 {
					return relaytest.Text("done")
				}
				n := strings.TrimPrefix(req.LastUserText(), "run ")
				return relaytest.ToolUse("toolu_"+n, "Bash", bash("echo "+n+" > out-"+n+".txt", "bench"))
			})
			steps := make([]relaytest.Step, 2*b.N)
			for i := range steps {
				steps[i] = step
			}
			// Finished sessions give their process up quickly, so the
			// machine runs one or two claude processes at a time.
			a := startApp(b, options{transport: tr, configure: func(c *Config) { c.IdleTimeout = time.Second }}, steps...)
			toCard := make([]time.Duration, 0, b.N)
			toResult := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				n := fmt.Sprint(i)
				start := time.Now()
				thread := a.mention("run " + n)
				card := a.card(thread, "out-"+n+".txt")
				toCard = append(toCard, time.Since(start))
				start = time.Now()
				a.click(lee, card.Ref(), "Approve")
				if res := a.toolResult("toolu_" + n); res.IsError {
					b.Fatalf("iteration %d: the command failed: %q", i, res.Content)
				}
				toResult = append(toResult, time.Since(start))
			}
			b.StopTimer()
			b.ReportMetric(p50(toCard), "mention-to-card-p50-ms")
			b.ReportMetric(p50(toResult), "approve-to-result-p50-ms")
		})
	}
}

func p50(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// approvalScript is a model that asks for n commands, one after another,
// each needing approval, then says done.
func approvalScript(n int) []relaytest.Step {
	step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
		i := len(req.ToolResults())
		if i >= n {
			return relaytest.Text("all done")
		}
		return relaytest.ToolUse(fmt.Sprint("toolu_", i), "Bash", bash(fmt.Sprintf("echo %d > out-%d.txt", i, i), "bench"))
	})
	steps := make([]relaytest.Step, n+1)
	for i := range steps {
		steps[i] = step
	}
	return steps
}

// BenchmarkTwentyApprovals measures one session of 20 approvals, each card
// clicked the moment it appears, with `slackgate run`'s defaults and
// fakeslack's rate model: from the mention to "all done" in the thread,
// and the Slack writes (posts and edits in the thread) per approval.
// Compare with BenchmarkTwentyApprovalsInProcess (./relay) and the Slack
// floor: 20 cards at 1 a second with a burst of 4 take 16 s. Targets: the
// whole within 1.1 × that floor (17.6 s), and 2 Slack writes an approval.
//
//	CLAUDE_BIN=… go test -run '^$' -bench 'TwentyApprovals$' -benchtime 1x -count 2 ./cmd/slackgate
//
// Measured 2026-11-23, machine shared with other builds, CLI 2.1.330:
//
//	through Slack, mention → "all done"              19.0 s (19.01, 19.00)
//	the same CLI answered in-process (relay)        2.5 s
//	Slack floor: 20 cards at 1/s, burst 4           16 s
//	Slack floor of the 22 posts the thread needs    18 s
//	Slack writes per approval                       2.25–2.3 (22 posts, 23–24 edits)
//	429s from the fake Slack                        0
//
// Both targets are missed by a little. 19.0 s is 1.19 × the card floor but
// 1.06 × the floor of the 22 posts the thread needs: the status line and
// Claude's answer take the channel's budget like any card. Each approval
// costs exactly one post (its card) and one edit (its outcome); the 0.25–0.3
// over 2 are the session's own writes (the status post and its 3–4 edits,
// the final answer) spread over 20 approvals.
func BenchmarkTwentyApprovals(b *testing.B) {
	const n = 20
	for range b.N {
		b.StopTimer()
		a := startApp(b, options{approvers: lee}, approvalScript(n)...)
		callsBefore := len(a.slack.Calls())
		b.StartTimer()
		start := time.Now()
		thread := a.mention("run them")
		for i := range n {
			a.click(lee, a.card(thread, fmt.Sprintf("out-%d.txt", i)).Ref(), "Approve")
		}
		a.threadText(thread, "all done")
		total := time.Since(start)
		b.StopTimer()
		posts, edits := threadWrites(a, thread, callsBefore)
		b.ReportMetric(total.Seconds(), "total-s")
		b.ReportMetric(float64(posts+edits)/n, "writes/approval")
		b.ReportMetric(float64(posts), "posts")
		b.ReportMetric(float64(edits), "edits")
		b.ReportMetric(float64(limited(a, callsBefore)), "429s")
		a.stop()
	}
}

// threadWrites counts the chat.postMessage and chat.update calls Slack
// took for a thread's messages, from call index from on.
func threadWrites(a *app, thread string, from int) (posts, edits int) {
	inThread := map[string]bool{}
	for _, m := range a.slack.Thread(general, thread) {
		inThread[m.TS] = true
	}
	for _, c := range a.slack.Calls()[from:] {
		if c.Status != http.StatusOK || c.Error != "" {
			continue
		}
		switch {
		case c.Method == "chat.postMessage" && c.Params.Get("thread_ts") == thread:
			posts++
		case c.Method == "chat.update" && inThread[c.Params.Get("ts")]:
			edits++
		}
	}
	return posts, edits
}

// limited counts the calls Slack answered with 429, from call index from on.
func limited(a *app, from int) int {
	n := 0
	for _, c := range a.slack.Calls()[from:] {
		if c.Status == http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// BenchmarkConcurrentSessions starts sessions in 5 channels at once, each
// asking for approvals clicked the moment their card appears, and checks
// what people would see: every card and every final answer arrives, cards
// keep their order in each thread, no 429 surfaces as a failed write. Card
// latency is measured from the mention (first card) or the previous
// click (later cards) to the card in Slack, so it includes Claude Code's
// own turn. It is the real CLI's fidelity check of
// BenchmarkFiftySessionsStandIn: 10 CLIs, 2 per channel.
//
//	CLAUDE_BIN=… go test -run '^$' -bench 'ConcurrentSessions$' -benchtime 1x ./cmd/slackgate
//
// Nothing lost and no 429 on either run. Card latency p50 / p99: 11.9 /
// 18.4 s on 2026-11-23 under load average 17; 4.3–4.8 / 8.7–12.6 s on an
// idle machine the day before.
func BenchmarkConcurrentSessions(b *testing.B) {
	const sessions, channels, approvals = 10, 5, 2
	step := relaytest.Func(func(req relaytest.Request) relaytest.Reply {
		i := len(req.ToolResults())
		s := strings.TrimPrefix(req.LastUserText(), "run ")
		if i >= approvals {
			return relaytest.Text("all done " + s)
		}
		return relaytest.ToolUse(fmt.Sprintf("toolu_%s_%d", s, i), "Bash", bash(fmt.Sprintf("echo %d > out-%s-%d.txt", i, s, i), "bench"))
	})
	for range b.N {
		b.StopTimer()
		steps := make([]relaytest.Step, sessions*(approvals+1))
		for i := range steps {
			steps[i] = step
		}
		a := startApp(b, options{approvers: lee, configure: func(c *Config) { c.MaxSessions = sessions }}, steps...)
		for c := range channels {
			a.slack.AddChannel(fmt.Sprintf("CB%d", c), fmt.Sprintf("bench-%d", c))
		}
		from := len(a.slack.Calls())
		b.StartTimer()
		lat := make(chan time.Duration, sessions*approvals)
		var wg sync.WaitGroup
		for s := range sessions {
			wg.Go(func() { runBenchSession(a, fmt.Sprintf("CB%d", s%channels), fmt.Sprint("s", s), approvals, lat) })
		}
		wg.Wait()
		b.StopTimer()
		close(lat)
		var ds []time.Duration
		for d := range lat {
			ds = append(ds, d)
		}
		slices.Sort(ds)
		b.ReportMetric(p50(ds), "card-latency-p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "card-latency-p99-ms")
		b.ReportMetric(float64(limited(a, from)), "429s")
		a.stop()
	}
}

// runBenchSession runs one session in channel and checks its thread.
func runBenchSession(a *app, channel, name string, approvals int, lat chan<- time.Duration) {
	start := time.Now()
	thread, err := a.slack.Mention(a.ctx, dana, channel, "run "+name)
	if err != nil {
		a.tb.Errorf("mention: %v", err)
		return
	}
	var cards []string
	for i := range approvals {
		want := fmt.Sprintf("out-%s-%d.txt", name, i)
		card, err := a.slack.WaitThread(a.ctx, channel, thread, func(m fakeslack.Message) bool {
			return m.FromBot() && m.HasText(want) && len(m.Buttons()) > 0
		})
		if err != nil {
			a.tb.Errorf("session %s: card %d lost: %v", name, i, err)
			return
		}
		lat <- time.Since(start)
		cards = append(cards, card.TS)
		start = time.Now()
		if err := a.slack.Click(a.ctx, lee, card.Ref(), "Approve"); err != nil {
			a.tb.Errorf("session %s: click: %v", name, err)
			return
		}
	}
	if _, err := a.slack.WaitThread(a.ctx, channel, thread, fakeslack.Text("all done "+name)); err != nil {
		a.tb.Errorf("session %s: final answer lost: %v", name, err)
	}
	if !slices.IsSorted(cards) {
		a.tb.Errorf("session %s: cards out of order: %v", name, cards)
	}
}

// BenchmarkFiftySessionsStandIn starts 50 sessions at once, 10 in each of 5
// channels, on the stand-in CLI (relay/relaytest/standin): each asks for 2
// approvals, one after the other, clicked the moment their card appears.
// slackgate runs with its Slack budgets at their defaults, fakeslack with
// its rate model; only MAX_SESSIONS is raised so all 50 run at once. It
// checks what people would see (every card, its outcome and the final
// answer arrive; cards keep their order in each thread; no write fails and
// no one gets an error) and measures each card from the moment the
// stand-in wrote its control_request to the card's chat.postMessage
// reaching Slack: as is, and less the wait Slack's post budget alone
// imposes on that card (slackFloor): a bucket of 4 refilled once a second
// per channel, spent on cards only, so ten cards asked for at once in one
// channel wait 0, 0, 0, 0, 1, 2 … 6 s whatever the bot does. Target: card
// p99 ≤ 1.5 s.
//
//	CLAUDE_BIN=… go test -run '^$' -bench FiftySessionsStandIn -benchtime 1x ./cmd/slackgate
//
// Measured 2026-11-23 on an otherwise idle machine (load average under 1.5):
//
//	                                                 run 1          run 2
//	lost: cards (100), outcomes (100), answers (50)  0 / 0 / 0      0 / 0 / 0
//	429s / failed writes or error ephemerals         0 / 0          0 / 0
//	cards out of order within a thread               0              0
//	card latency p50 / p99                           8.6 / 10.0 s   8.7 / 10.0 s
//	the same less Slack's floor, p50 / p99           1.9 / 2.0 s    1.9 / 2.9 s
//	whole scenario / Slack calls                     96.8 s / 350   96.5 s / 350
//
// The p99 target cannot hold as measured: twenty cards a channel at one
// post a second need 16 s of Slack's budget whatever the bot does, and the
// p99 of 10.0 s sits on that floor. What is left over the cards-only floor,
// about 2 s, is the channel's other posts (ten status lines and ten final
// answers) taking their turn in the same budget, not waiting in slackgate:
// the outbox keeps cards first, and the event consumer waits only for a
// write being sent (up to 200 ms), not one queued behind Slack's budget.
// Before that change the same run measured 41.6–58.8 s card p99 (34.5–53.8
// s over the floor): outcome edits, which share the workspace's
// 50-a-minute update budget, held the consumer for about 1.2 s each. The
// whole scenario is the update budget's floor: 100 outcome edits through a
// burst of 20 at 50 a minute need 96 s.
//
// 2026-11-26, outcomes through the clicks' response_urls (no chat.update):
// the whole scenario 46.9 s in 415 Slack calls, under load average 20
// (card p50 / p99 7.8 / 10.0 s, over the floor 4.1 / 5.4 s); what is left
// is the channels' post budget, 40 posts a channel.
func BenchmarkFiftySessionsStandIn(b *testing.B) {
	const sessions, channels, approvals = 50, 5, 2
	standin := buildStandIn(b)
	for range b.N {
		b.StopTimer()
		a := startApp(b, options{approvers: lee, timeout: 5 * time.Minute,
			configure: func(c *Config) { c.ClaudeBin, c.MaxSessions = standin, sessions },
			environ:   []string{"CLAUDE_CODE_STANDIN_REQUESTS=" + fmt.Sprint(approvals)}})
		for c := range channels {
			a.slack.AddChannel(fmt.Sprintf("CL%d", c), fmt.Sprintf("load-%d", c))
		}
		for s := range sessions {
			// One starter each: MAX_SESSIONS_PER_USER stays at its default.
			a.slack.AddUser(fmt.Sprintf("U1S%02d", s), fmt.Sprintf("starter-%d", s))
		}
		from := len(a.slack.Calls())
		cards := make(chan benchCard, sessions*approvals)
		ready := make(chan struct{})
		var wg sync.WaitGroup
		b.StartTimer()
		for s := range sessions {
			wg.Go(func() {
				<-ready
				runStandInSession(a, fmt.Sprintf("CL%d", s%channels), fmt.Sprintf("U1S%02d", s), fmt.Sprint("s", s), approvals, cards)
			})
		}
		close(ready)
		wg.Wait()
		b.StopTimer()
		close(cards)
		reportLoad(b, a, from, sessions*approvals, cards)
		a.stop()
	}
}

// buildStandIn compiles the stand-in CLI once for the benchmark.
func buildStandIn(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "standin")
	out, err := exec.Command("go", "build", "-o", bin, module+"/relay/relaytest/standin").CombinedOutput()
	if err != nil {
		b.Fatalf("go build standin: %v\n%s", err, out)
	}
	return bin
}

// benchCard is one card as the benchmark saw it.
type benchCard struct {
	channel, ts string
	asked       time.Time // the stand-in wrote its control_request
}

// runStandInSession runs one session: it clicks each card as it appears,
// then waits for every card's outcome and for the final answer.
func runStandInSession(a *app, channel, user, name string, approvals int, out chan<- benchCard) {
	thread, err := a.slack.Mention(a.ctx, user, channel, "run "+name)
	if err != nil {
		a.tb.Errorf("session %s: mention: %v", name, err)
		return
	}
	var refs []fakeslack.MessageRef
	for i := range approvals {
		want := fmt.Sprintf("[run %s] step %d", name, i)
		card, err := a.slack.WaitThread(a.ctx, channel, thread, func(m fakeslack.Message) bool {
			return m.FromBot() && m.HasText(want) && len(m.Buttons()) > 0
		})
		if err != nil {
			a.tb.Errorf("session %s: card %d lost: %v", name, i, err)
			return
		}
		asked, err := askedAt(card.AllText())
		if err != nil {
			a.tb.Errorf("session %s: card %d: %v", name, i, err)
			return
		}
		out <- benchCard{channel: channel, ts: card.TS, asked: asked}
		refs = append(refs, card.Ref())
		if err := a.slack.Click(a.ctx, lee, card.Ref(), "Approve"); err != nil {
			a.tb.Errorf("session %s: click: %v", name, err)
			return
		}
	}
	if _, err := a.slack.WaitThread(a.ctx, channel, thread, fakeslack.Text(fmt.Sprintf("finished run %s (0 denied)", name))); err != nil {
		a.tb.Errorf("session %s: final answer lost: %v", name, err)
	}
	for i, ref := range refs {
		if _, err := a.slack.WaitMessage(a.ctx, func(m fakeslack.Message) bool {
			return m.Ref() == ref && m.HasText("Approved") && len(m.Buttons()) == 0
		}); err != nil {
			a.tb.Errorf("session %s: card %d never showed its outcome: %v", name, i, err)
		}
	}
	if !slices.IsSortedFunc(refs, func(x, y fakeslack.MessageRef) int { return strings.Compare(x.TS, y.TS) }) {
		a.tb.Errorf("session %s: cards out of order: %v", name, refs)
	}
}

var askedRE = regexp.MustCompile(`asked-at (\d+)`)

// askedAt reads the time the stand-in put in the command it asked for.
func askedAt(text string) (time.Time, error) {
	m := askedRE.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, fmt.Errorf("no asked-at in the card: %q", text)
	}
	ns, err := strconv.ParseInt(m[1], 10, 64)
	return time.Unix(0, ns), err
}

// reportLoad checks the run's Slack traffic and reports card latency, raw
// and less Slack's floor, with the 429s Slack answered along the way.
func reportLoad(b *testing.B, a *app, from, want int, seen <-chan benchCard) {
	b.Helper()
	calls := a.slack.Calls()[from:]
	var cards []benchCard
	for c := range seen {
		cards = append(cards, c)
	}
	if len(cards) != want {
		b.Errorf("%d of %d cards arrived", len(cards), want)
	}
	failed, ephemerals := 0, 0
	for _, c := range calls {
		if c.Error != "" && c.Status != http.StatusTooManyRequests {
			failed++
			b.Errorf("%s failed: %s", c.Method, c.Error)
		}
		if c.Method == "chat.postEphemeral" {
			ephemerals++
			b.Errorf("someone got an ephemeral: %s", c.Params.Get("text"))
		}
	}
	posted := make([]time.Duration, 0, len(cards))
	added := make([]time.Duration, 0, len(cards))
	byChannel := map[string][]benchCard{}
	for _, c := range cards {
		byChannel[c.channel] = append(byChannel[c.channel], c)
	}
	for _, cs := range byChannel {
		floors := slackFloor(cs, time.Second, 4)
		for i, c := range cs {
			at, ok := postedAt(calls, c)
			if !ok {
				b.Errorf("no chat.postMessage found for the card asked at %d", c.asked.UnixNano())
				continue
			}
			posted = append(posted, at.Sub(c.asked))
			added = append(added, at.Sub(c.asked)-floors[i])
		}
	}
	if len(posted) == 0 {
		return
	}
	b.ReportMetric(p50(posted), "card-p50-ms")
	b.ReportMetric(p99(posted), "card-p99-ms")
	b.ReportMetric(p50(added), "added-p50-ms")
	b.ReportMetric(p99(added), "added-p99-ms")
	b.ReportMetric(float64(limited(a, from)), "429s")
	b.ReportMetric(float64(failed+ephemerals), "errors-seen")
	b.ReportMetric(float64(len(calls)), "slack-calls")
}

func p99(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)*99/100].Microseconds()) / 1000
}

// postedAt finds when the card's chat.postMessage reached Slack: the one
// successful post carrying the card's asked-at stamp.
func postedAt(calls []fakeslack.Call, c benchCard) (time.Time, bool) {
	stamp := fmt.Sprint("asked-at ", c.asked.UnixNano())
	for _, call := range calls {
		if call.Method == "chat.postMessage" && call.Status == http.StatusOK && call.Error == "" &&
			call.Params.Get("channel") == c.channel && strings.Contains(call.Params.Get("blocks")+call.Params.Get("text"), stamp) {
			return call.Time, true
		}
	}
	return time.Time{}, false
}

// slackFloor is, for each card of one channel (sorted in place by when it
// was asked for), how long Slack's post budget alone makes it wait: a
// token bucket refilled one post per interval and holding burst, full when
// the first card is asked for, spent on cards only. Ten cards asked for at
// once wait 0, 0, 0, 0, 1, 2 … 6 s whatever the bot does; what a card waits
// beyond this is the bot's own doing (or its other posts' in the channel).
func slackFloor(cards []benchCard, interval time.Duration, burst int) []time.Duration {
	slices.SortFunc(cards, func(x, y benchCard) int { return x.asked.Compare(y.asked) })
	floors := make([]time.Duration, len(cards))
	tokens := float64(burst)
	var last time.Time
	for i, c := range cards {
		t := c.asked
		if t.Before(last) {
			t = last // posts leave one after another
		}
		if i > 0 {
			tokens = min(float64(burst), tokens+float64(t.Sub(last))/float64(interval))
		}
		if tokens < 1 {
			t = t.Add(time.Duration((1 - tokens) * float64(interval)))
			tokens = 1
		}
		tokens--
		last = t
		floors[i] = t.Sub(c.asked)
	}
	return floors
}
