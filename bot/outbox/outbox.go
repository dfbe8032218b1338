package outbox

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/store"
)

// SlackWriter is the part of the Web API the outbox drives; *slack.Client
// has it.
type SlackWriter interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
}

// Msg is one message as the outbox sends it.
type Msg struct {
	Text   string
	Blocks []slack.Block
}

func (m Msg) empty() bool { return m.Text == "" && len(m.Blocks) == 0 }

// digest identifies a message's content, to drop an edit that would show
// what Slack shows already: its text and its blocks as JSON, the text's
// length first so no text and blocks run into another pair's.
func (m Msg) digest() [32]byte {
	blocks, _ := json.Marshal(m.Blocks)
	h := sha256.New()
	_ = binary.Write(h, binary.BigEndian, uint64(len(m.Text)))
	h.Write([]byte(m.Text))
	h.Write(blocks)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// ErrClosed is the outcome of a write still queued when the outbox stops,
// or given to it after.
var ErrClosed = errors.New("outbox: closed")

const (
	// maxAttempts bounds retries of transient failures (network, 5xx); a
	// 429 is waited out and never counts as an attempt.
	maxAttempts = 8
	backoffBase = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
	// maxShown bounds the memory of what each message shows; forgetting
	// costs at most one edit that changes nothing.
	maxShown = 4096
)

type opKind int

const (
	opPost opKind = iota
	opUpdate
	opUpload
	opRespond // a click's response_url replaces the message clicked
)

func (k opKind) String() string {
	switch k {
	case opPost:
		return "chat.postMessage"
	case opUpdate:
		return "chat.update"
	case opRespond:
		return "response_url"
	default:
		return "files.upload"
	}
}

// op is one queued Web API write. Waiters get the result; a coalesced
// update carries the waiters of every update it replaced.
type op struct {
	kind     opKind
	lane     Lane
	channel  string
	threadTS string // post, upload
	ts       string // update, respond
	url      string // respond: the click's response_url
	fallback bool   // respond: a failure becomes a chat.update
	msg      Msg
	file     fileUpload
	log      zerolog.Logger
	waiters  []chan Result
	starts   []chan struct{} // closed when the write is sent (see Pending)

	notBefore time.Time     // a live message's first post waits until then
	minGap    time.Duration // an edit waits this long after the message last changed
	live      *liveMsg      // the live message this op shows, if any
	queuedAt  time.Time     // when it was first queued, for OutboxWait
	// find, for a post, looks for the message in Slack before it is sent
	// again after a failure that may have reached Slack (see PostOnce).
	find func(context.Context) (ts string, found bool, err error)

	// digested memoizes msg.digest() (guarded by the outbox's lock): a
	// queued edit is compared with what Slack shows on every dispatch
	// pass, and marshalling its blocks each time was most of a busy bot's
	// CPU.
	digested *[32]byte
}

// digest is p.msg.digest(), computed once per content.
func (p *op) digest() [32]byte {
	if p.digested == nil {
		d := p.msg.digest()
		p.digested = &d
	}
	return *p.digested
}

type fileUpload struct {
	name, title, content string
}

// Result is the outcome of a write: the message's ts, or why it failed.
type Result struct {
	TS  string
	Err error
}

// msgKey names one message.
type msgKey struct{ channel, ts string }

func (p *op) key() msgKey { return msgKey{p.channel, p.ts} }

// channelState is one channel's posts: a FIFO per lane, the channel's post
// budget, and a Retry-After that holds every post to it.
type channelState struct {
	lanes   [numLanes][]*op
	busy    [numLanes]bool // a post of the lane is in flight: one at a time keeps its order
	budget  Bucket
	blocked time.Time
}

// shown is what the outbox last sent for a message, and when.
type shown struct {
	digest [32]byte
	at     time.Time
}

// Outbox sends every post, edit, upload and response of the bot (see the
// package comment). New makes one; Run sends.
type Outbox struct {
	api     SlackWriter
	budget  Budgets
	clock   store.Clock
	log     zerolog.Logger
	metrics Metrics

	mu         sync.Mutex
	chans      map[string]*channelState
	edits      [numLanes][]*op  // chat.update, workspace-wide
	responds   []*op            // response_url: no budget, one message at a time
	editBudget Bucket           // the workspace's chat.update budget
	editsUntil time.Time        // Retry-After of a chat.update 429
	queued     map[msgKey]*op   // the queued edit of each message
	editing    map[msgKey]bool  // an edit of the message is in flight
	shown      map[msgKey]shown // what each message shows
	live       map[string]*liveMsg
	closed     bool
	wg         sync.WaitGroup
	wake       chan struct{}
	// retries, once it ends, stops the retrying of failed calls while Run
	// still sends what is queued (the package comment's Stopping). nil:
	// Run's context.
	retries context.Context
}

// RunUntil is Run, retrying failed calls only until retries ends.
func (o *Outbox) RunUntil(ctx, retries context.Context) error {
	o.retries = retries
	return o.Run(ctx)
}

// giveUp reports whether a failed call is not to be tried again.
func (o *Outbox) giveUp(ctx context.Context) bool {
	return ctx.Err() != nil || o.retries != nil && o.retries.Err() != nil
}

// backoff waits d, unless the bot stops meanwhile.
func (o *Outbox) backoff(ctx context.Context, d time.Duration) error {
	if o.retries != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(o.retries, cancel)
		defer stop()
	}
	return store.Sleep(ctx, o.clock, d)
}

// New returns an outbox writing through api within budgets. A nil clock is
// the wall clock; nil metrics measure nothing.
func New(api SlackWriter, budgets Budgets, clock store.Clock, log zerolog.Logger, metrics Metrics) *Outbox {
	if clock == nil {
		clock = store.WallClock{}
	}
	if metrics == nil {
		metrics = noMetrics{}
	}
	b := budgets.withDefaults()
	return &Outbox{
		api:        api,
		budget:     b,
		clock:      clock,
		log:        log,
		metrics:    metrics,
		chans:      map[string]*channelState{},
		editBudget: NewBucket(b.UpdatesPerMinute/60, b.UpdateBurst),
		queued:     map[msgKey]*op{},
		editing:    map[msgKey]bool{},
		shown:      map[msgKey]shown{},
		live:       map[string]*liveMsg{},
		wake:       make(chan struct{}, 1),
	}
}

// Run sends queued writes as their budgets allow until ctx ends. Writes in
// flight then finish (each call is bounded by CallTimeout); writes not yet
// sent fail with ErrClosed. Run returns nil. A wake that leaves the next
// budget's time as it was keeps the timer already set for it.
func (o *Outbox) Run(ctx context.Context) error {
	defer o.close()
	var timer store.Timer // nil when nothing waits for a budget
	var at time.Time      // when timer fires
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		o.mu.Lock()
		next := o.dispatchLocked(ctx)
		o.mu.Unlock()
		if timer != nil && !next.Equal(at) {
			timer.Stop()
			timer = nil
		}
		if timer == nil && !next.IsZero() {
			timer, at = o.clock.NewTimer(max(next.Sub(o.clock.Now()), time.Millisecond)), next
		}
		var due <-chan time.Time // nil, never ready, without a timer
		if timer != nil {
			due = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		case <-due:
			timer = nil
		}
	}
}

// close waits for the sends in flight and fails everything still queued.
func (o *Outbox) close() {
	o.wg.Wait()
	o.mu.Lock()
	o.closed = true
	var left []*op
	for _, cs := range o.chans {
		for l := range cs.lanes {
			left = append(left, cs.lanes[l]...)
			cs.lanes[l] = nil
		}
	}
	for l := range o.edits {
		left = append(left, o.edits[l]...)
		o.edits[l] = nil
	}
	left = append(left, o.responds...)
	o.responds = nil
	o.mu.Unlock()
	for _, p := range left {
		p.finish(Result{Err: ErrClosed})
	}
}

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Pending is a write the outbox has queued: Started is closed once the
// outbox sends it (its budget allowed it), Done receives its outcome. A
// write that has not started waits for Slack's budget, however long that
// takes.
type Pending struct {
	res     <-chan Result
	started <-chan struct{}
}

// Done receives the write's outcome, once.
func (p Pending) Done() <-chan Result { return p.res }

// Started is closed once the write is sent.
func (p Pending) Started() <-chan struct{} { return p.started }

// Wait returns the write's ts once Slack has it, or ctx's error.
func (p Pending) Wait(ctx context.Context) (string, error) {
	select {
	case r := <-p.res:
		return r.TS, r.Err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Outcome returns the write's ts once Slack has it, however long the
// caller's context lasts: a post that reached Slack while the bot was
// stopping must still be reported, or its caller could not record where it
// went and would post it again after a restart. The wait is bounded: a
// stopping outbox finishes the call in flight (CallTimeout) and fails
// everything still queued.
func (p Pending) Outcome() (string, error) {
	r := <-p.res
	return r.TS, r.Err
}

// Post queues a message in lane l (in a thread when threadTS is set).
func (o *Outbox) Post(log zerolog.Logger, l Lane, channel, threadTS string, m Msg) Pending {
	return o.enqueuePending(&op{kind: opPost, lane: l, channel: channel, threadTS: threadTS, msg: m, log: log})
}

// PostOnce queues a post in lane l that find looks for in Slack before it
// is sent again after a failure that may have reached Slack, so it shows
// once (a card, an audit line).
func (o *Outbox) PostOnce(log zerolog.Logger, l Lane, channel, threadTS string, m Msg, find func(context.Context) (ts string, found bool, err error)) Pending {
	return o.enqueuePending(&op{kind: opPost, lane: l, channel: channel, threadTS: threadTS, msg: m, log: log, find: find})
}

// PostLater queues a post in lane l and returns at once; the outbox sends
// it within Slack's budget, in order with the thread's other writes, and
// logs it if it fails for good.
func (o *Outbox) PostLater(log zerolog.Logger, l Lane, channel, threadTS string, m Msg) {
	o.enqueue(&op{kind: opPost, lane: l, channel: channel, threadTS: threadTS, msg: m, log: log}, false)
}

// Edit queues an edit of the message at ref in lane l. Edits of one
// message coalesce: a newer one queued meanwhile is sent in its place, and
// its outcome is this one's.
func (o *Outbox) Edit(log zerolog.Logger, l Lane, ref store.MessageRef, m Msg) Pending {
	return o.enqueuePending(&op{kind: opUpdate, lane: l, channel: ref.Channel, ts: ref.TS, msg: m, log: log})
}

// EditLater queues an edit in lane l and returns at once; a failure is
// logged.
func (o *Outbox) EditLater(log zerolog.Logger, l Lane, ref store.MessageRef, m Msg) {
	o.enqueue(&op{kind: opUpdate, lane: l, channel: ref.Channel, ts: ref.TS, msg: m, log: log}, false)
}

func (o *Outbox) enqueuePending(p *op) Pending {
	started := make(chan struct{})
	p.starts = append(p.starts, started)
	return Pending{res: o.enqueue(p, true), started: started}
}

// Respond queues the replacement of the message at ref through a click's
// response_url. It spends no budget: it goes out as soon as no other
// write of that message is in flight, and takes the place of an edit of
// it still queued (older than what the click settled). It is sent once:
// when the response_url fails (used, expired, unreachable) and fallback is
// set, the same content becomes a chat.update in the cards lane;
// otherwise the caller gets the error.
func (o *Outbox) Respond(log zerolog.Logger, ref store.MessageRef, url string, m Msg, fallback bool) Pending {
	return o.enqueuePending(&op{kind: opRespond, lane: LaneCard, channel: ref.Channel, ts: ref.TS, url: url, fallback: fallback, msg: m, log: log})
}

// Upload shares a text file in a thread, after the cards queued before it.
func (o *Outbox) Upload(ctx context.Context, log zerolog.Logger, channel, threadTS, name, title, content string) error {
	res := o.enqueue(&op{kind: opUpload, lane: LaneCard, channel: channel, threadTS: threadTS, file: fileUpload{name: name, title: title, content: content}, log: log}, true)
	_, err := Pending{res: res}.Wait(ctx)
	return err
}

func (o *Outbox) enqueue(p *op, waits bool) <-chan Result {
	var res chan Result
	if waits {
		res = make(chan Result, 1)
		p.waiters = append(p.waiters, res)
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		p.finish(Result{Err: ErrClosed})
		return res
	}
	done := o.enqueueLocked(p)
	o.mu.Unlock()
	if done {
		p.finish(Result{TS: p.ts})
	}
	o.poke()
	return res
}

// enqueueLocked queues p, or merges it into a queued edit of the same
// message. It reports true when p has nothing to send: an edit to what the
// message shows already.
func (o *Outbox) enqueueLocked(p *op) bool {
	if p.queuedAt.IsZero() {
		p.queuedAt = o.clock.Now()
	}
	if p.kind == opRespond {
		o.supersedeLocked(p)
		o.responds = append(o.responds, p)
		return false
	}
	if p.kind != opUpdate {
		cs := o.channelLocked(p.channel)
		cs.lanes[p.lane] = append(cs.lanes[p.lane], p)
		return false
	}
	k := p.key()
	if old := o.queued[k]; old != nil {
		// Coalesce: the queued edit takes the newest content and keeps its
		// place; its caller learns the outcome too.
		old.msg, old.log, old.digested = p.msg, p.log, p.digested
		old.waiters = append(old.waiters, p.waiters...)
		old.starts = append(old.starts, p.starts...)
		old.minGap = min(old.minGap, p.minGap)
		return false
	}
	if s, ok := o.shown[k]; ok && !o.editing[k] && s.digest == p.digest() {
		return true
	}
	o.queued[k] = p
	o.edits[p.lane] = append(o.edits[p.lane], p)
	return false
}

// supersedeLocked drops the queued edit of the message p replaces
// through a response_url; its callers learn p's outcome.
func (o *Outbox) supersedeLocked(p *op) {
	k := p.key()
	old := o.queued[k]
	if old == nil {
		return
	}
	delete(o.queued, k)
	o.edits[old.lane] = slices.DeleteFunc(o.edits[old.lane], func(q *op) bool { return q == old })
	p.waiters = append(p.waiters, old.waiters...)
	p.starts = append(p.starts, old.starts...)
}

// fallBackLocked turns a response that failed into a chat.update of the
// same content in the cards lane. A newer edit of the message queued
// meanwhile wins; p's callers wait for it.
func (o *Outbox) fallBackLocked(p *op) {
	p.kind, p.url = opUpdate, ""
	k := p.key()
	if old := o.queued[k]; old != nil {
		old.waiters = append(old.waiters, p.waiters...)
		return
	}
	o.queued[k] = p
	o.edits[p.lane] = append(o.edits[p.lane], p)
}

func (o *Outbox) channelLocked(ch string) *channelState {
	cs := o.chans[ch]
	if cs == nil {
		cs = &channelState{budget: NewBucket(o.budget.PostsPerSecond, o.budget.PostBurst)}
		o.chans[ch] = cs
	}
	return cs
}

// dispatchLocked starts every write its budget allows now and returns when
// the next one may become sendable (zero: nothing waits on time).
func (o *Outbox) dispatchLocked(ctx context.Context) time.Time {
	now := o.clock.Now()
	var next time.Time
	later := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	o.dispatchRespondsLocked(ctx)
	for _, cs := range o.chans {
		o.dispatchPostsLocked(ctx, cs, now, later)
	}
	o.dispatchEditsLocked(ctx, now, later)
	return next
}

// dispatchRespondsLocked starts every response whose message has no write
// in flight: a response spends no budget, and one message's writes go out
// one at a time so an older edit cannot land after it.
func (o *Outbox) dispatchRespondsLocked(ctx context.Context) {
	keep := o.responds[:0]
	for _, p := range o.responds {
		k := p.key()
		if o.editing[k] {
			keep = append(keep, p)
			continue
		}
		o.editing[k] = true
		o.startLocked(ctx, p)
	}
	clear(o.responds[len(keep):])
	o.responds = keep
}

// dispatchPostsLocked starts the next post of each lane of one channel,
// highest lane first, while the channel's budget allows.
func (o *Outbox) dispatchPostsLocked(ctx context.Context, cs *channelState, now time.Time, later func(time.Time)) {
	if now.Before(cs.blocked) {
		later(cs.blocked)
		return
	}
	for l := range numLanes {
		if cs.busy[l] {
			continue
		}
		i, due := nextPost(cs.lanes[l], now)
		if i < 0 {
			if !due.IsZero() {
				later(due)
			}
			continue
		}
		p := cs.lanes[l][i]
		if p.kind == opPost && !cs.budget.take(now, l) {
			later(cs.budget.readyAt(now, l))
			continue
		}
		cs.lanes[l] = append(cs.lanes[l][:i:i], cs.lanes[l][i+1:]...)
		cs.busy[l] = true
		o.startLocked(ctx, p)
	}
}

// nextPost picks the first post of a lane that is due and has no earlier
// post of its thread still queued before it, so a delayed progress message
// holds back only its own thread. due is the earliest time a post not yet
// due becomes due.
func nextPost(q []*op, now time.Time) (i int, due time.Time) {
	held := map[string]bool{}
	for i, p := range q {
		if held[p.threadTS] {
			continue
		}
		if now.Before(p.notBefore) {
			held[p.threadTS] = true
			if due.IsZero() || p.notBefore.Before(due) {
				due = p.notBefore
			}
			continue
		}
		return i, time.Time{}
	}
	return -1, due
}

// dispatchEditsLocked starts queued edits, highest lane first, while the
// workspace's update budget allows. A lane whose next edit finds the budget
// short stops the lanes below it.
func (o *Outbox) dispatchEditsLocked(ctx context.Context, now time.Time, later func(time.Time)) {
	if now.Before(o.editsUntil) {
		later(o.editsUntil)
		return
	}
	for l := range numLanes {
		keep := o.edits[l][:0]
		short := false
		for _, p := range o.edits[l] {
			k := p.key()
			s, seen := o.shown[k]
			switch {
			case short || o.editing[k]:
				keep = append(keep, p)
			case seen && s.digest == p.digest():
				delete(o.queued, k)
				p.finish(Result{TS: p.ts}) // buffered: never blocks
			case seen && now.Before(s.at.Add(p.minGap)):
				later(s.at.Add(p.minGap))
				keep = append(keep, p)
			case !o.editBudget.take(now, l):
				later(o.editBudget.readyAt(now, l))
				short = true
				keep = append(keep, p)
			default:
				delete(o.queued, k)
				o.editing[k] = true
				o.startLocked(ctx, p)
			}
		}
		clear(o.edits[l][len(keep):])
		o.edits[l] = keep
		if short {
			return
		}
	}
}

// startLocked sends p on its own goroutine.
func (o *Outbox) startLocked(ctx context.Context, p *op) {
	for _, c := range p.starts {
		close(c)
	}
	p.starts = nil
	if p.live != nil {
		p.live.sending = true
	}
	if !p.queuedAt.IsZero() {
		o.metrics.OutboxWait(p.lane.String(), o.clock.Now().Sub(latest(p.queuedAt, p.notBefore)))
	}
	o.wg.Go(func() { o.done(p, o.send(ctx, p)) })
}

// done records what a send did and hands the outcome to its waiters.
func (o *Outbox) done(p *op, r Result) {
	o.mu.Lock()
	now := o.clock.Now()
	switch p.kind {
	case opUpdate, opRespond:
		delete(o.editing, p.key())
	default:
		o.chans[p.channel].busy[p.lane] = false
	}
	if p.kind == opRespond && r.Err != nil && p.fallback {
		p.log.Warn().Err(r.Err).Str("channel", p.channel).Msg("response_url failed; showing the outcome with chat.update")
		o.fallBackLocked(p)
		o.mu.Unlock()
		o.poke()
		return
	}
	if r.Err == nil && p.kind != opUpload {
		if len(o.shown) >= maxShown {
			clear(o.shown)
		}
		o.shown[msgKey{p.channel, r.TS}] = shown{digest: p.digest(), at: now}
	}
	var after func()
	if p.live != nil {
		after = o.livePostedLocked(p, r)
	}
	o.mu.Unlock()
	p.finish(r)
	if after != nil {
		after()
	}
	o.poke()
}

// blocked records a 429's Retry-After: no call of p's budget goes out
// before it has passed.
func (o *Outbox) blocked(p *op, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	until := o.clock.Now().Add(d)
	switch p.kind {
	case opUpdate:
		o.editsUntil = latest(o.editsUntil, until)
	case opPost:
		cs := o.chans[p.channel]
		cs.blocked = latest(cs.blocked, until)
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// send performs one op, waiting out rate limits and retrying transient
// failures.
func (o *Outbox) send(ctx context.Context, p *op) Result {
	log := p.log.With().Str("channel", p.channel).Str("method", p.kind.String()).Logger()
	for attempt := 1; ; {
		ts, err := o.call(ctx, p)
		if err == nil {
			return Result{TS: ts}
		}
		if p.kind == opRespond {
			// No retry: a chat.update shows it sooner than a backoff.
			return Result{Err: fmt.Errorf("outbox: %s in %s: %w", p.kind, p.channel, err)}
		}
		if o.giveUp(ctx) {
			return Result{Err: fmt.Errorf("outbox: %s in %s: %w", p.kind, p.channel, ErrClosed)}
		}
		var limited *slack.RateLimitedError
		if errors.As(err, &limited) {
			// Slack's word beats our model: hold the whole budget, not
			// only this write.
			log.Warn().Dur("retry_after", limited.RetryAfter).Msg("slack rate limit, waiting")
			o.blocked(p, limited.RetryAfter)
			if o.backoff(ctx, limited.RetryAfter) != nil {
				return Result{Err: fmt.Errorf("outbox: %s in %s: %w", p.kind, p.channel, ErrClosed)}
			}
			continue
		}
		if Permanent(err) || attempt >= maxAttempts {
			log.Error().Err(err).Int("attempts", attempt).Int("payload_bytes", p.size()).Msg("slack write failed")
			return Result{Err: fmt.Errorf("outbox: %s in %s: %w", p.kind, p.channel, err)}
		}
		delay := min(backoffBase<<(attempt-1), backoffMax)
		log.Warn().Err(err).Int("attempt", attempt).Dur("backoff", delay).Msg("slack write failed, retrying")
		attempt++
		if o.backoff(ctx, delay) != nil {
			return Result{Err: fmt.Errorf("outbox: %s in %s: %w", p.kind, p.channel, ErrClosed)}
		}
		if ts, found := o.sentAfterAll(ctx, log, p); found {
			return Result{TS: ts}
		}
	}
}

// sentAfterAll reports a post that Slack carried out although its answer
// was a failure: without this a retry would show it twice. A look that
// fails is logged and the post is sent again; a duplicate is better than a
// card nobody sees.
func (o *Outbox) sentAfterAll(ctx context.Context, log zerolog.Logger, p *op) (string, bool) {
	if p.kind != opPost || p.find == nil {
		return "", false
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	ts, found, err := p.find(fctx)
	if err != nil {
		log.Warn().Err(err).Msg("could not look for the failed post in slack; sending it again")
		return "", false
	}
	if found {
		log.Info().Str("ts", ts).Msg("the failed post reached slack after all; not sending it again")
	}
	return ts, found
}

// CallTimeout bounds one Web API call. A call in flight is not cancelled
// when the bot stops (its outcome must reach the caller), only cut off by
// this.
const CallTimeout = 15 * time.Second

func (o *Outbox) call(ctx context.Context, p *op) (ts string, err error) {
	start := time.Now()
	defer func() { o.metrics.SlackCall(p.kind.String(), time.Since(start), err) }()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
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
	case opRespond:
		_, _, err := o.api.PostMessageContext(ctx, p.channel, slack.MsgOptionReplaceOriginal(p.url),
			slack.MsgOptionText(p.msg.Text, false), slack.MsgOptionBlocks(p.msg.Blocks...))
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

func (p *op) finish(r Result) {
	for _, w := range p.waiters {
		w <- r // buffered, one result each
	}
	if r.Err != nil && len(p.waiters) == 0 && !errors.Is(r.Err, ErrClosed) {
		p.log.Error().Err(r.Err).Str("channel", p.channel).Msg("queued slack write failed")
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

// Permanent reports whether retrying err cannot help: Slack refused the
// request itself (invalid_blocks, msg_too_long, channel_not_found, …) or
// answered with a 4xx other than 429.
func Permanent(err error) bool {
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
