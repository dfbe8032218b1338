package main

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/store"
)

// metrics is every Prometheus series slackgate exports. Packages bot and
// relay know nothing of Prometheus: the bot takes a bot.Metrics (this type
// implements it), and the store is measured from outside by timedStore.
type metrics struct {
	reg *prometheus.Registry

	decisions    *prometheus.CounterVec
	decisionTime *prometheus.HistogramVec
	slackCalls   *prometheus.CounterVec
	slackErrors  *prometheus.CounterVec
	slackLimited *prometheus.CounterVec
	slackTime    *prometheus.HistogramVec
	outboxWait   *prometheus.HistogramVec
	sessions     *prometheus.CounterVec
	cliExits     *prometheus.CounterVec
	storeTime    *prometheus.HistogramVec
}

// approvalBuckets span a click seconds after the card to a request that
// waited past a long lunch (REQUEST_TIMEOUT is 30 minutes by default).
var approvalBuckets = []float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "slackgate", Name: name, Help: help}, labels)
		f(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "slackgate", Name: name, Help: help, Buckets: buckets}, labels)
		f(h)
		return h
	}
	m.decisions = counter("decisions_total", "Requests settled by this process, by outcome and by who settled them (person, memory: a remembered answer, policy: a rule of POLICY_FILE, or system).", "outcome", "decider")
	m.decisionTime = histogram("decision_seconds", "Time from a request's creation to its decision by a person, by request kind: the approval SLO.", approvalBuckets, "kind")
	m.slackCalls = counter("slack_calls_total", "Slack Web API calls made by the outbox, by method.", "method")
	m.slackErrors = counter("slack_errors_total", "Slack Web API calls that failed other than by a 429, by method.", "method")
	m.slackLimited = counter("slack_rate_limited_total", "Slack Web API calls answered 429 (rate limited), by method.", "method")
	m.slackTime = histogram("slack_call_seconds", "Duration of Slack Web API calls, by method.", prometheus.DefBuckets, "method")
	m.outboxWait = histogram("outbox_wait_seconds", "Time a Slack write waited in the outbox before it was sent, by lane.", []float64{.01, .05, .1, .5, 1, 2, 5, 10, 30, 60, 300}, "lane")
	m.sessions = counter("session_transitions_total", "Sessions entering a state (queued, running, idle, failed), as written by this process.", "state")
	m.cliExits = counter("cli_exits_total", "Claude Code processes that ended, by cause.", "cause")
	m.storeTime = histogram("store_op_seconds", "Duration of store operations (blocking waits excluded), by operation.", []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, "op")
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// SlackCall implements bot.Metrics.
func (m *metrics) SlackCall(method string, d time.Duration, err error) {
	m.slackCalls.WithLabelValues(method).Inc()
	m.slackTime.WithLabelValues(method).Observe(d.Seconds())
	var limited *slack.RateLimitedError
	switch {
	case err == nil:
	case errors.As(err, &limited):
		m.slackLimited.WithLabelValues(method).Inc()
	default:
		m.slackErrors.WithLabelValues(method).Inc()
	}
}

// OutboxWait implements bot.Metrics.
func (m *metrics) OutboxWait(lane string, d time.Duration) {
	m.outboxWait.WithLabelValues(lane).Observe(d.Seconds())
}

// deciderLabels are the decider label's values: the metric's names
// predate store.Decider's.
var deciderLabels = map[store.DeciderKind]string{
	store.DecidedByPerson: "person", store.DecidedByAnswer: "memory", store.DecidedByRule: "policy",
	store.DecidedByGrant: "grant", store.DecidedBySystem: "system",
}

// decided counts a settled request; only a person's decision measures the
// approval time (a deadline, an ended process or a remembered answer says
// nothing about it).
func (m *metrics) decided(r store.Request) {
	if r.Decision == nil {
		return
	}
	kind := r.Decision.Decider().Kind
	if kind == store.DecidedByPerson && !r.CreatedAt.IsZero() {
		m.decisionTime.WithLabelValues(string(r.Kind)).Observe(r.Decision.At.Sub(r.CreatedAt).Seconds())
	}
	m.decisions.WithLabelValues(string(r.Decision.Outcome), deciderLabels[kind]).Inc()
}

// gaugeFunc is a labelled gauge read when scraped.
type gaugeFunc struct {
	desc *prometheus.Desc
	read func() map[string]float64
}

func (g gaugeFunc) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g gaugeFunc) Collect(ch chan<- prometheus.Metric) {
	for label, v := range g.read() {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v, label)
	}
}

// gauge registers a gauge with one label, computed at scrape time by read.
func (m *metrics) gauge(name, help, label string, read func() map[string]float64) {
	m.reg.MustRegister(gaugeFunc{desc: prometheus.NewDesc("slackgate_"+name, help, []string{label}, nil), read: read})
}

// watchPending exports the pending requests of the whole installation by
// kind, read from the store at each scrape (every process sees the same
// figure: aggregate with max, not sum).
func (m *metrics) watchPending(st store.Store) {
	m.gauge("pending_requests", "Requests waiting for a person, installation-wide, by kind.", "kind", func() map[string]float64 {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		pending, err := st.ListPending(ctx, "")
		if err != nil {
			return nil // no sample beats a wrong zero
		}
		n := map[string]float64{string(store.KindTool): 0, string(store.KindQuestion): 0, string(store.KindPlan): 0, string(store.KindElicitation): 0}
		for _, r := range pending {
			n[string(r.Kind)]++
		}
		return n
	})
}

// watchQueued exports the sessions waiting for a worker, installation-wide,
// read from the store at each scrape (aggregate with max, like
// pending_requests).
func (m *metrics) watchQueued(st store.Store) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "slackgate", Name: "sessions_queued",
		Help: "Sessions with input waiting for a worker to claim them, installation-wide."}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		n, err := st.ReadySessions(ctx)
		if err != nil {
			return math.NaN() // no figure beats a wrong zero
		}
		return float64(n)
	}))
}

// watchSessions exports the sessions a worker holds a claude process for,
// by state (running, waiting for a decision, idle between turns).
func (m *metrics) watchSessions(count func() map[string]int) {
	m.gauge("sessions", "Sessions this worker runs a Claude Code process for, by state: running (a turn), waiting (a request waits for a person), idle (between turns).", "state", func() map[string]float64 {
		n := map[string]float64{}
		for state, c := range count() {
			n[state] = float64(c)
		}
		return n
	})
}

// watchOutbox exports the bot's outbox depth by lane.
func (m *metrics) watchOutbox(depth func() map[string]int) {
	m.gauge("outbox_depth", "Slack writes queued in the outbox, by lane.", "lane", func() map[string]float64 {
		n := map[string]float64{}
		for lane, d := range depth() {
			n[lane] = float64(d)
		}
		return n
	})
}

// watchAuditSinks exports, per audit sink (channel, webhook), the entries
// not yet delivered and when one last was, as the store holds them (every
// process sees the same figures: aggregate with max). A sink whose last
// look at the store failed has no sample.
func (m *metrics) watchAuditSinks(sinks map[string]func() auditsink.Status) {
	read := func(v func(auditsink.Status) (float64, bool)) func() map[string]float64 {
		return func() map[string]float64 {
			out := map[string]float64{}
			for name, status := range sinks {
				if x, ok := v(status()); ok {
					out[name] = x
				}
			}
			return out
		}
	}
	m.gauge("audit_backlog", "Audit entries not yet delivered to an audit sink (channel: AUDIT_CHANNEL, webhook: AUDIT_WEBHOOK_URL), installation-wide.", "sink",
		read(func(s auditsink.Status) (float64, bool) { return float64(s.Backlog), s.Looked }))
	m.gauge("audit_last_delivery_timestamp_seconds", "When an audit sink last took an entry (unix seconds), installation-wide.", "sink",
		read(func(s auditsink.Status) (float64, bool) {
			return float64(s.Delivered.UnixNano()) / 1e9, s.Looked && !s.Delivered.IsZero()
		}))
}
