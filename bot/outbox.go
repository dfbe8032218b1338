package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// slackWriter is the part of the Web API the outbox drives; *slack.Client
// has it.
type slackWriter interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
}

// outMsg is one message as the outbox sends it.
type outMsg struct {
	Text   string
	Blocks []slack.Block
}

// errOutboxClosed is returned for writes still queued when the outbox stops.
var errOutboxClosed = errors.New("bot: outbox closed")

const (
	// maxAttempts bounds retries of transient failures (network, 5xx); a
	// 429 is waited out and never counts as an attempt.
	maxAttempts = 8
	backoffBase = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
)

type opKind int

const (
	opPost opKind = iota
	opUpdate
	opUpload
)

func (k opKind) String() string {
	switch k {
	case opPost:
		return "chat.postMessage"
	case opUpdate:
		return "chat.update"
	default:
		return "files.upload"
	}
}

// op is one queued Web API write. Waiters get the result; a coalesced
// update carries the waiters of every update it replaced.
type op struct {
	kind     opKind
	channel  string
	threadTS string // post, upload
	ts       string // update
	msg      outMsg
	file     fileUpload
	log      zerolog.Logger
	waiters  []chan opResult
}

type fileUpload struct {
	name, title, content string
}

type opResult struct {
	ts  string
	err error
}

// channelQueue is the ordered backlog of one channel. Only its worker sends,
// so order within a channel (and so within every thread) is kept.
type channelQueue struct {
	ops     []*op
	running bool
	last    time.Time // when the last call to this channel finished
}

// outbox sends every post, edit and upload of the bot. Per channel it keeps
// order, paces calls (Slack allows about one post per second per channel),
// coalesces edits of one message so only the newest is sent, waits out 429s
// for as long as Retry-After says, and retries transient failures with
// backoff. It never drops a write silently: each caller learns the outcome.
type outbox struct {
	api      slackWriter
	interval time.Duration
	clock    Clock
	log      zerolog.Logger

	mu     sync.Mutex
	queues map[string]*channelQueue
	idle   []string // channels with work and no worker yet
	closed bool
	wake   chan struct{}
}

// newOutbox returns an outbox writing through api. interval is the minimum
// gap between two calls to one channel (<= 0: none).
func newOutbox(api slackWriter, interval time.Duration, clock Clock, log zerolog.Logger) *outbox {
	if clock == nil {
		clock = wallClock{}
	}
	return &outbox{
		api:      api,
		interval: interval,
		clock:    clock,
		log:      log,
		queues:   map[string]*channelQueue{},
		wake:     make(chan struct{}, 1),
	}
}

// Run starts a worker per channel with work and waits for them. When ctx
// ends, writes not yet sent fail with errOutboxClosed; Run returns nil.
func (o *outbox) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer func() {
		wg.Wait()
		o.mu.Lock()
		o.closed = true
		var left []*op
		for _, q := range o.queues {
			left = append(left, q.ops...)
			q.ops = nil
		}
		o.mu.Unlock()
		for _, p := range left {
			p.finish(opResult{err: errOutboxClosed})
		}
	}()
	for {
		o.mu.Lock()
		start := o.idle
		o.idle = nil
		o.mu.Unlock()
		for _, ch := range start {
			wg.Go(func() { o.drain(ctx, ch) })
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		}
	}
}

// Post sends a message (in a thread when threadTS is set) and returns its ts
// once Slack has it. It waits for the outcome even after ctx ends: a post
// that reached Slack while the bot was stopping must still be reported, or
// its caller could not record where it went and would post it again after
// a restart. The wait is bounded: a stopping outbox finishes the call in
// flight (callTimeout) and fails everything still queued.
func (o *outbox) Post(_ context.Context, log zerolog.Logger, channel, threadTS string, m outMsg) (string, error) {
	r := <-o.enqueue(&op{kind: opPost, channel: channel, threadTS: threadTS, msg: m, log: log}, true)
	return r.ts, r.err
}

// Update edits a message and waits until the edit (or a newer one that
// replaced it) is sent.
func (o *outbox) Update(ctx context.Context, log zerolog.Logger, ref store.MessageRef, m outMsg) error {
	res := o.enqueue(&op{kind: opUpdate, channel: ref.Channel, ts: ref.TS, msg: m, log: log}, true)
	_, err := wait(ctx, res)
	return err
}

// UpdateLater queues an edit without waiting: for state that a newer edit
// supersedes anyway (status lines). Failures are logged.
func (o *outbox) UpdateLater(log zerolog.Logger, ref store.MessageRef, m outMsg) {
	o.enqueue(&op{kind: opUpdate, channel: ref.Channel, ts: ref.TS, msg: m, log: log}, false)
}

// Upload shares a text file in a thread, after everything queued before it.
func (o *outbox) Upload(ctx context.Context, log zerolog.Logger, channel, threadTS, name, title, content string) error {
	res := o.enqueue(&op{kind: opUpload, channel: channel, threadTS: threadTS, file: fileUpload{name: name, title: title, content: content}, log: log}, true)
	_, err := wait(ctx, res)
	return err
}

func wait(ctx context.Context, res <-chan opResult) (string, error) {
	select {
	case r := <-res:
		return r.ts, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (o *outbox) enqueue(p *op, waits bool) <-chan opResult {
	var res chan opResult
	if waits {
		res = make(chan opResult, 1)
		p.waiters = append(p.waiters, res)
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		p.finish(opResult{err: errOutboxClosed})
		return res
	}
	q := o.queues[p.channel]
	if q == nil {
		q = &channelQueue{}
		o.queues[p.channel] = q
	}
	if p.kind == opUpdate {
		// Coalesce: a queued edit of the same message takes the newest
		// content and keeps its place; its caller learns the outcome too.
		for _, old := range q.ops {
			if old.kind == opUpdate && old.ts == p.ts {
				old.msg = p.msg
				old.log = p.log
				old.waiters = append(old.waiters, p.waiters...)
				o.mu.Unlock()
				return res
			}
		}
	}
	q.ops = append(q.ops, p)
	if !q.running {
		q.running = true
		o.idle = append(o.idle, p.channel)
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	o.mu.Unlock()
	return res
}

// drain sends a channel's backlog in order and returns when it is empty.
func (o *outbox) drain(ctx context.Context, channel string) {
	for {
		o.mu.Lock()
		q := o.queues[channel]
		if len(q.ops) == 0 {
			q.running = false
			o.mu.Unlock()
			return
		}
		next := q.last.Add(o.interval)
		o.mu.Unlock()

		// Pace before taking the op off the queue, so edits arriving
		// meanwhile still coalesce with it.
		if o.interval > 0 && !q.last.IsZero() {
			if err := sleep(ctx, o.clock, next.Sub(o.clock.Now())); err != nil {
				o.mu.Lock()
				q.running = false
				o.mu.Unlock()
				return
			}
		}

		o.mu.Lock()
		p := q.ops[0]
		q.ops = q.ops[1:]
		o.mu.Unlock()

		res := o.send(ctx, p)

		o.mu.Lock()
		q.last = o.clock.Now()
		o.mu.Unlock()
		p.finish(res)
		if ctx.Err() != nil {
			o.mu.Lock()
			q.running = false
			o.mu.Unlock()
			return
		}
	}
}

// send performs one op, waiting out rate limits and retrying transient
// failures.
func (o *outbox) send(ctx context.Context, p *op) opResult {
	log := p.log.With().Str("channel", p.channel).Str("method", p.kind.String()).Logger()
	for attempt := 1; ; {
		ts, err := o.call(ctx, p)
		if err == nil {
			return opResult{ts: ts}
		}
		if ctx.Err() != nil {
			return opResult{err: fmt.Errorf("bot: %s in %s: %w", p.kind, p.channel, errOutboxClosed)}
		}
		var limited *slack.RateLimitedError
		if errors.As(err, &limited) {
			log.Warn().Dur("retry_after", limited.RetryAfter).Msg("slack rate limit, waiting")
			if sleep(ctx, o.clock, limited.RetryAfter) != nil {
				return opResult{err: fmt.Errorf("bot: %s in %s: %w", p.kind, p.channel, errOutboxClosed)}
			}
			continue
		}
		if permanent(err) || attempt >= maxAttempts {
			log.Error().Err(err).Int("attempts", attempt).Int("payload_bytes", p.size()).Msg("slack write failed")
			return opResult{err: fmt.Errorf("bot: %s in %s: %w", p.kind, p.channel, err)}
		}
		delay := min(backoffBase<<(attempt-1), backoffMax)
		log.Warn().Err(err).Int("attempt", attempt).Dur("backoff", delay).Msg("slack write failed, retrying")
		attempt++
		if sleep(ctx, o.clock, delay) != nil {
			return opResult{err: fmt.Errorf("bot: %s in %s: %w", p.kind, p.channel, errOutboxClosed)}
		}
	}
}

// callTimeout bounds one Web API call. A call in flight is not cancelled
// when the bot stops (its outcome must reach the caller), only cut off by
// this.
const callTimeout = 15 * time.Second

func (o *outbox) call(ctx context.Context, p *op) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	switch p.kind {
	case opPost:
		opts := []slack.MsgOption{slack.MsgOptionText(p.msg.Text, false)}
		if len(p.msg.Blocks) > 0 {
			opts = append(opts, slack.MsgOptionBlocks(p.msg.Blocks...))
		}
		if p.threadTS != "" {
			opts = append(opts, slack.MsgOptionTS(p.threadTS))
		}
		_, ts, err := o.api.PostMessageContext(ctx, p.channel, opts...)
		return ts, err
	case opUpdate:
		opts := []slack.MsgOption{slack.MsgOptionText(p.msg.Text, false), slack.MsgOptionBlocks(p.msg.Blocks...)}
		_, _, _, err := o.api.UpdateMessageContext(ctx, p.channel, p.ts, opts...)
		return p.ts, err
	default:
		_, err := o.api.UploadFileContext(ctx, slack.UploadFileParameters{
			Filename:        p.file.name,
			Title:           p.file.title,
			Content:         p.file.content,
			FileSize:        len(p.file.content),
			Channel:         p.channel,
			ThreadTimestamp: p.threadTS,
		})
		return "", err
	}
}

func (p *op) finish(r opResult) {
	for _, w := range p.waiters {
		w <- r // buffered, one result each
	}
	if r.err != nil && len(p.waiters) == 0 && !errors.Is(r.err, errOutboxClosed) {
		p.log.Error().Err(r.err).Str("channel", p.channel).Msg("queued slack write failed")
	}
}

// size is the payload size logged with permanent failures (invalid_blocks
// and msg_too_long are mostly about size).
func (p *op) size() int {
	if p.kind == opUpload {
		return len(p.file.content)
	}
	b, _ := json.Marshal(p.msg.Blocks)
	return len(p.msg.Text) + len(b)
}

// permanent reports whether retrying err cannot help: Slack refused the
// request itself (invalid_blocks, msg_too_long, channel_not_found, …) or
// answered with a 4xx other than 429.
func permanent(err error) bool {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited":
			return false
		}
		return true
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) {
		return sc.Code >= 400 && sc.Code < 500 && sc.Code != http.StatusTooManyRequests
	}
	return false
}
