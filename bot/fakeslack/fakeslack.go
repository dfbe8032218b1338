package fakeslack

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Identities of the fake workspace and its app. Tests configure the app
// under test with BotToken and AppToken.
const (
	BotToken          = "xoxb-fakeslack-bot-token"
	AppToken          = "xapp-fakeslack-app-token"
	VerificationToken = "fakeslack-verification-token"
	TeamID            = "T0FAKE"
	TeamDomain        = "fakeslack"
	AppID             = "A0FAKE"
	BotUserID         = "U0BOT"
	BotID             = "B0BOT"
	BotName           = "slackgate"
)

// Defaults that mirror Slack.
const (
	DefaultAckTimeout   = 3 * time.Second  // Slack retries an envelope not acked within 3 s
	DefaultTriggerTTL   = 3 * time.Second  // a trigger_id is good for 3 s
	DefaultPingInterval = 10 * time.Second // Slack pings a Socket Mode connection every few seconds
)

// Option tunes a Fake.
type Option func(*Fake)

// WithClock replaces the wall clock the fake uses for trigger_id expiry and
// for the times it records. Signatures on HTTP deliveries always use the
// real time, because the app checks them against its own clock.
func WithClock(c store.Clock) Option { return func(f *Fake) { f.now = c.Now } }

// WithAckTimeout changes how long the fake waits for an ack (Socket Mode) or
// an HTTP response (HTTP delivery) before it counts the delivery as failed.
func WithAckTimeout(d time.Duration) Option { return func(f *Fake) { f.ackTimeout = d } }

// WithPingInterval changes how often the fake pings Socket Mode connections.
func WithPingInterval(d time.Duration) Option { return func(f *Fake) { f.pingInterval = d } }

// AllowRejections stops the fake from failing the test when it rejects a
// Web API call; the rejections are still recorded. For tests that provoke
// them on purpose.
func AllowRejections() Option { return func(f *Fake) { f.allowRejections = true } }

// AllowDeliveryFailures stops the fake from failing the test when the app
// does not ack an envelope in time or answers an HTTP delivery with an error.
func AllowDeliveryFailures() Option { return func(f *Fake) { f.allowDeliveryFailures = true } }

// OnMessage calls fn after every chat.postMessage and chat.update the fake
// accepted, and every message a click's response_url replaced (method
// ResponseURLMethod), with the method and the message as it now stands, outside the
// fake's lock, on the goroutine serving the call, once the app has its
// answer. Load runs use it to act on every
// card the moment it appears, where a Wait per card would rescan the whole
// workspace on every change.
func OnMessage(fn func(method string, m Message)) Option { return func(f *Fake) { f.onMessage = fn } }

// Call is one Web API request as the fake saw it.
type Call struct {
	Method string     // "chat.postMessage"
	Params url.Values // form values, or the top-level fields of a JSON body (objects re-encoded as JSON strings)
	Body   []byte     // the raw request body
	Time   time.Time  // the fake's clock when it arrived
	Error  string     // the error code the fake answered with; "" when ok
	Status int        // HTTP status (429 for injected rate limits)
}

// Rejection is a Web API call the fake refused the way Slack would.
type Rejection struct {
	Method  string
	Error   string   // Slack's error code: invalid_blocks, msg_too_long, ...
	Details []string // the validator's problems, when there are any
	Params  url.Values
}

func (r Rejection) String() string {
	if len(r.Details) == 0 {
		return fmt.Sprintf("%s: %s", r.Method, r.Error)
	}
	return fmt.Sprintf("%s: %s: %s", r.Method, r.Error, strings.Join(r.Details, "; "))
}

// DeliveryFailure is an envelope the app did not acknowledge properly.
type DeliveryFailure struct {
	Type   string // events_api, interactive, slash_commands
	ID     string // envelope_id (Socket Mode) or event_id / trigger (HTTP)
	Reason string
}

// User is a person (or the bot) in the fake workspace.
type User struct {
	ID   string
	Name string
	// Team and Enterprise are the workspace (T…) and organization (E…)
	// the person belongs to: TeamID and none, unless AddExternalUser made
	// them someone of another team.
	Team, Enterprise string
}

// team is the workspace u belongs to.
func (u *User) team() string {
	if u.Team == "" {
		return TeamID
	}
	return u.Team
}

// external reports whether u belongs to another team than the app's.
func (u *User) external() bool { return u.team() != TeamID }

// Fake is a Slack workspace with one app installed. Create it with New; it
// stops when the test ends (or on Close).
type Fake struct {
	tb                    testing.TB
	srv                   *httptest.Server
	now                   func() time.Time
	triggerTTL            time.Duration
	ackTimeout            time.Duration
	pingInterval          time.Duration
	allowRejections       bool
	allowDeliveryFailures bool
	noRateModel           bool
	onMessage             func(method string, m Message)
	httpClient            *http.Client
	// connections counts the TCP connections clients opened to the fake
	// (Web API, Socket Mode's dial and Socket Mode's websockets alike).
	connections atomic.Int64

	// wg owns every goroutine the fake starts (Socket Mode readers and pingers).
	wg        sync.WaitGroup
	closeOnce sync.Once
	closing   chan struct{}

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state change; waiters select on it
	seq     int           // source of unique ids and timestamps

	calls       []Call
	rejections  []Rejection
	failures    []DeliveryFailure
	rateLimits  map[string]*rateLimit
	failNext    map[string]*injectedFailure
	failStatus  map[string]*injectedStatus // FailStatus
	loseAnswer  []lostAnswer               // LoseAnswer
	holds       []*Held                    // Hold, waiting for their call
	buckets     map[string]*tokenBucket    // the rate model's, by "post:"+channel and "update"
	users       map[string]*User
	groups      map[string][]string
	channels    map[string]*channel
	ephemerals  map[string][]*Message // by recipient
	views       map[string]*View      // by view id
	open        map[string]string     // user → id of the modal open for them
	homes       map[string]*View      // user → the App Home view published for them
	triggers    map[string]*trigger
	uploads     map[string]*File        // by file id, until completed
	responses   map[string]*responseURL // by id, the clicks' response_urls
	files       []*File
	state       map[stateKey]json.RawMessage // a person's select/checkbox choices on a message
	conns       []*socketConn                // live Socket Mode connections
	connCount   int                          // every connection ever accepted
	rr          int                          // round-robin over live connections
	pending     map[string]*envelope         // Socket Mode envelopes waiting for an ack
	abandoned   map[string]bool              // envelopes delivery gave up on; their late acks are ignored
	httpBase    string                       // set by UseHTTP
	httpSecret  string
	lastTrigger map[string]string // user → trigger_id of their latest interaction
	lastEvent   *sentEvent
}

type channel struct {
	id, name string
	im       bool
	user     string // the person of a DM channel
	messages []*Message
}

type trigger struct {
	id      string
	user    string
	created time.Time
	used    bool
}

type rateLimit struct {
	left       int
	retryAfter time.Duration
}

type stateKey struct {
	user, container, blockID, actionID string
}

// New starts a fake Slack for t. Close runs automatically at the end of the
// test; every rejected call and failed delivery fails the test unless the
// matching Allow option is given.
func New(t testing.TB, opts ...Option) *Fake {
	f := &Fake{
		tb:           t,
		now:          time.Now,
		triggerTTL:   DefaultTriggerTTL,
		ackTimeout:   DefaultAckTimeout,
		pingInterval: DefaultPingInterval,
		closing:      make(chan struct{}),
		changed:      make(chan struct{}),
		rateLimits:   map[string]*rateLimit{},
		failNext:     map[string]*injectedFailure{},
		failStatus:   map[string]*injectedStatus{},
		buckets:      map[string]*tokenBucket{},
		users:        map[string]*User{BotUserID: {ID: BotUserID, Name: BotName}},
		groups:       map[string][]string{},
		channels:     map[string]*channel{},
		ephemerals:   map[string][]*Message{},
		views:        map[string]*View{},
		open:         map[string]string{},
		homes:        map[string]*View{},
		triggers:     map[string]*trigger{},
		uploads:      map[string]*File{},
		responses:    map[string]*responseURL{},
		state:        map[stateKey]json.RawMessage{},
		pending:      map[string]*envelope{},
		abandoned:    map[string]bool{},
		lastTrigger:  map[string]string{},
	}
	for _, o := range opts {
		o(f)
	}
	f.httpClient = &http.Client{Timeout: f.ackTimeout}
	f.srv = httptest.NewUnstartedServer(f.routes())
	f.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			f.connections.Add(1)
		}
	}
	f.srv.Start()
	t.Cleanup(f.Close)
	return f
}

// Close stops the server and every Socket Mode connection and waits for the
// fake's goroutines. It is safe to call more than once.
func (f *Fake) Close() {
	f.closeOnce.Do(func() {
		close(f.closing)
		f.mu.Lock()
		conns := slices.Clone(f.conns)
		f.mu.Unlock()
		for _, c := range conns {
			c.close()
		}
		f.srv.Close()
		f.wg.Wait()
		f.httpClient.CloseIdleConnections()
	})
}

// URL is the fake's base URL, without a trailing slash.
func (f *Fake) URL() string { return f.srv.URL }

// APIURL is the Web API base for slack.OptionAPIURL (with the trailing slash
// slack-go needs).
func (f *Fake) APIURL() string { return f.srv.URL + "/api/" }

// notifyLocked wakes every waiter; call with f.mu held.
func (f *Fake) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitFor blocks until cond (called with f.mu held) returns true, ctx ends or
// the fake closes. No polling: it sleeps on the change channel.
func (f *Fake) waitFor(ctx context.Context, what string, cond func() bool) error {
	for {
		f.mu.Lock()
		if cond() {
			f.mu.Unlock()
			return nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("fakeslack: waiting for %s: %w", what, ctx.Err())
		case <-f.closing:
			return fmt.Errorf("fakeslack: waiting for %s: fake closed", what)
		}
	}
}

// nextLocked returns a fresh sequence number; call with f.mu held.
func (f *Fake) nextLocked() int {
	f.seq++
	return f.seq
}

// tsLocked returns a unique, increasing message timestamp.
func (f *Fake) tsLocked() string {
	n := f.nextLocked()
	return fmt.Sprintf("%d.%06d", 1700000000+n/1000000, n%1000000)
}

func (f *Fake) idLocked(prefix string) string {
	return fmt.Sprintf("%s%07d", prefix, f.nextLocked())
}

// AddUser adds a person to the workspace.
func (f *Fake) AddUser(id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[id] = &User{ID: id, Name: name}
	f.notifyLocked()
}

// AddExternalUser adds a person of another workspace (team, T…) and,
// unless enterprise is "", organization (E…) who shares the fake's
// channels through Slack Connect: their messages carry user_team and
// source_team, their clicks, modals and commands name their team, and
// users.info answers with it.
func (f *Fake) AddExternalUser(id, name, team, enterprise string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users[id] = &User{ID: id, Name: name, Team: team, Enterprise: enterprise}
	f.notifyLocked()
}

// AddUserGroup creates (or replaces) a user group with the given members.
func (f *Fake) AddUserGroup(id string, members ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groups[id] = slices.Clone(members)
	f.notifyLocked()
}

// AddChannel creates a public channel the bot is a member of.
func (f *Fake) AddChannel(id, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.channels[id]; ok {
		c.name = name
		return
	}
	f.channels[id] = &channel{id: id, name: name}
	f.notifyLocked()
}

// DMChannel is the id of the direct-message channel between user and the bot.
func DMChannel(user string) string { return "D" + strings.TrimPrefix(user, "U") }

func (f *Fake) dmLocked(user string) *channel {
	id := DMChannel(user)
	c, ok := f.channels[id]
	if !ok {
		c = &channel{id: id, name: id, im: true, user: user}
		f.channels[id] = c
	}
	return c
}

// Calls returns every Web API call so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// TCPConnections returns how many TCP connections clients have opened to
// the fake so far: a client that keeps its connections alive opens one per
// call it makes at once, not one per call.
func (f *Fake) TCPConnections() int { return int(f.connections.Load()) }

// CallsTo returns the calls to one method, in order.
func (f *Fake) CallsTo(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCall blocks until a Web API call matching match has arrived and
// returns the first such call.
func (f *Fake) WaitCall(ctx context.Context, match func(Call) bool) (Call, error) {
	var got Call
	err := f.waitFor(ctx, "a matching Web API call", func() bool {
		for _, c := range f.calls {
			if match(c) {
				got = c
				return true
			}
		}
		return false
	})
	return got, err
}

// Rejections returns the Web API calls the fake refused.
func (f *Fake) Rejections() []Rejection {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rejections)
}

// DeliveryFailures returns the envelopes the app did not ack in time or
// answered with an HTTP error.
func (f *Fake) DeliveryFailures() []DeliveryFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.failures)
}

func (f *Fake) recordFailure(d DeliveryFailure) {
	f.mu.Lock()
	f.failures = append(f.failures, d)
	f.notifyLocked()
	f.mu.Unlock()
	if !f.allowDeliveryFailures {
		f.tb.Errorf("fakeslack: delivery of %s %s failed: %s", d.Type, d.ID, d.Reason)
	}
}

// RateLimit makes the next n calls to method fail with HTTP 429 and a
// Retry-After header of retryAfter (rounded up to whole seconds), the way
// Slack answers a burst.
func (f *Fake) RateLimit(method string, n int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimits[method] = &rateLimit{left: n, retryAfter: retryAfter}
}

// FailNext makes the next n calls to method fail with Slack error code
// (ok: false), the way Slack refuses a call the workspace does not allow
// (files.getUploadURLExternal with "restricted_action", say). The failures
// are the test's own doing, so they are not counted as rejections.
func (f *Fake) FailNext(method string, n int, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[method] = &injectedFailure{left: n, code: code}
}

type injectedFailure struct {
	left int
	code string
}

func (f *Fake) userLocked(id string) (*User, error) {
	u, ok := f.users[id]
	if !ok {
		return nil, fmt.Errorf("fakeslack: unknown user %q (AddUser first)", id)
	}
	return u, nil
}

// channelForPersonLocked returns the channel a person writes in, creating
// channels the test did not add so that helpers stay short.
func (f *Fake) channelForPersonLocked(id string) *channel {
	c, ok := f.channels[id]
	if !ok {
		c = &channel{id: id, name: id}
		f.channels[id] = c
	}
	return c
}
