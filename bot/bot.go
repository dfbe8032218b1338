package bot

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/bot/decide"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// consumerGroup is the store consumer group every bot replica joins, so
// each event is shown in Slack by exactly one of them.
const consumerGroup = "bot"

// Bot is the Slack side of slackgate: one handler set behind the Socket
// Mode or HTTP transport, the consumer of store events that keeps threads
// current, and the outbox every write goes through.
type Bot struct {
	cfg   Config
	st    Store
	log   zerolog.Logger
	api   *slack.Client
	clock store.Clock

	out       *outbox.Outbox
	approvers *approvers
	starters  *approvers
	teams     *teamGate
	work      tasks
	// approvalAPI serves /v1 and expires its requests (nil: no
	// APITokens); apihost.go lends it Slack.
	approvalAPI *approvalapi.Server
	// auditChannel delivers the audit log to auditLines, the sink that
	// posts its lines (both nil: no AUDIT_CHANNEL).
	auditChannel *auditsink.Follower
	auditLines   *auditsink.Channel
	// sealer seals the audit chain (nil: SealAudit is off).
	sealer *auditsink.Sealer
	status *statusLines
	cards  *cards
	clicks *clicks
	// decider signs and stores every decision this bot makes.
	decider *decide.Decider
	people  *people
	conn    connState
	// policy is the team policy applied now: set at New from
	// Config.Policy and replaced whole by SetPolicy (a SIGHUP reload), so
	// a request is evaluated under one policy or the other, never a mix.
	policy atomic.Pointer[policy.Policy]

	// afterReconcile, when set (tests), runs after each reconcile pass.
	afterReconcile func()

	// botUserID and teamURL come from auth.test at the start of Run;
	// handlers run only after they are set.
	botUserID string
	teamURL   string

	// The pieces the bot owns, each given only what it uses (wireParts):
	// the Socket Mode transport, what people say in Slack (events) and
	// the checks in front of it, the store's events shown in threads
	// (consumer, status), the requests carried to who may decide them
	// (reach.go) and the App Homes a change affects (waiting.go).
	graves     *graves
	admission  *admission
	ephemerals *ephemerals
	inputs     *inputs
	stops      *stopper
	consumer   *consumer
	events     *slackEvents
	socket     *socketMode
	reach      *reacher
	homes      *homes
}

// New checks cfg and builds a Bot; nothing talks to Slack until Run.
func New(cfg Config, st Store, log zerolog.Logger) (*Bot, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%w: no store", ErrConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = store.WallClock{}
	}
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = DefaultHTTPAddr
	}
	if cfg.ConsumerName == "" {
		host, _ := os.Hostname()
		cfg.ConsumerName = "bot-" + cmp.Or(host, "local")
	}
	ttl := cmp.Or(cfg.GroupCacheTTL, DefaultGroupCacheTTL)
	cfg.ReconcileInterval = cmp.Or(cfg.ReconcileInterval, DefaultReconcileInterval)
	cfg.CardClaimTTL = cmp.Or(cfg.CardClaimTTL, DefaultCardClaimTTL)

	opts := apiOptions(cfg.APIURL)
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	// No slack.OptionRetry: the outbox owns 429 handling, and two layers of
	// retries would multiply the waits.
	api := slack.New(cfg.BotToken, opts...)

	b := &Bot{
		cfg:   cfg,
		st:    st,
		log:   log,
		api:   api,
		clock: cfg.Clock,
		out:   outbox.New(api, cfg.Budgets, cfg.Clock, log, cfg.Metrics),
	}
	b.policy.Store(cfg.Policy)
	list := func(ctx context.Context, g string) ([]string, error) {
		return api.GetUserGroupMembersContext(ctx, g)
	}
	b.approvers = newApprovers(cfg.Approvers, list, cfg.Clock, ttl)
	starters := cfg.Starters
	if starters.IsZero() {
		starters = cfg.Approvers
	}
	b.starters = newApprovers(starters, list, cfg.Clock, ttl)
	b.people = &people{tokens: cfg.APITokens, approvers: b.approvers, may: b.may}
	b.decider = decide.New(decide.Config{Store: st, Key: cfg.SigningKey, Clock: cfg.Clock,
		Policy: b.policy.Load, Facts: policyRequest, People: b.people})
	b.approvalAPI = newAPIServer(cfg, st, b.decider, b.out, api, log)
	b.auditLines, b.auditChannel = b.newAuditChannel()
	if cfg.SealAudit {
		b.sealer = b.newAuditSealer()
	}
	b.teams = newTeamGate(cfg.AllowedTeams, func(ctx context.Context, user string) (*slack.User, error) {
		return api.GetUserInfoContext(ctx, user)
	}, cfg.Clock, ttl)
	wireParts(b)
	return b, nil
}

// wireParts builds the pieces b owns, once its approvers and team gate
// are known; each is given only what it uses of b, never b itself.
func wireParts(b *Bot) {
	b.ephemerals = &ephemerals{api: b.api, log: b.log}
	b.teams.log, b.teams.tell, b.teams.views = b.log, b.ephemerals, b.api
	b.inputs = &inputs{st: b.st, key: b.cfg.SigningKey, clock: b.clock}
	b.stops = &stopper{st: b.st, log: b.log, tell: b.ephemerals, inputs: b.inputs, may: b.may}
	b.graves = &graves{st: b.st, key: b.cfg.SigningKey, clock: b.clock}
	b.status = &statusLines{st: b.st, out: b.out, log: b.log, modes: b.modesOffered}
	b.cards = &cards{st: b.st, out: b.out, work: &b.work, status: b.status, decider: b.decider, api: b.api,
		clock: b.clock, claimTTL: b.cfg.CardClaimTTL, shown: b.shown, renderCard: b.renderCard,
		renderCardWith: b.renderCardWith, grantFor: b.grantFor, answerFor: b.answerFor}
	b.consumer = &consumer{st: b.st, group: consumerGroup, name: b.cfg.ConsumerName, log: b.log, out: b.out,
		work: &b.work, status: b.status, post: b.cards.post, outcome: b.cards.outcome}
	b.admission = newAdmission(b.cfg, b.st, b.may)
	b.events = newSlackEvents(b.cfg, b.st, b.log)
	b.events.out, b.events.work, b.events.teams, b.events.admission = b.out, &b.work, b.teams, b.admission
	b.events.ephemerals, b.events.inputs, b.events.stops, b.events.status = b.ephemerals, b.inputs, b.stops, b.status
	b.events.onHomeOpened, b.events.elsewhere = b.onHomeOpened, b.elsewhere
	b.socket = &socketMode{api: b.api, log: b.log, conn: &b.conn, work: &b.work,
		onEvent: b.events.onEvent, onInteraction: b.onInteraction, onCommand: b.events.onCommand}
	b.homes = newHomes(b.st, b.clock)
	b.homes.publish = b.publishHome
	b.homes.mayDecide = b.decider.May
	b.reach = &reacher{
		st: b.st, out: b.out, clock: b.clock, log: b.log, later: b.work.Go,
		groups: b.approvers, slack: b.api, homes: b.homes,
		pub:      b.cfg.SigningKey.Public().(ed25519.PublicKey),
		defaults: b.cfg.Reach, approvers: b.cfg.Approvers, interval: b.cfg.ReconcileInterval,
		policyAtStart: b.cfg.Policy != nil,
		verdict:       b.verdict, needs: b.needsOf, showCard: b.cards.reach,
		wake: make(chan struct{}, 1),
	}
	b.homes.view = b.reach.view
	b.people.reach = b.reach
	b.cards.reacher = b.reach
	b.clicks = &clicks{st: b.st, key: b.cfg.SigningKey, decider: b.decider, api: b.api, clock: b.clock, log: b.log,
		work: &b.work, cards: b.cards, ephemerals: b.ephemerals, homes: b.homes, reach: b.reach, teams: b.teams,
		policy: b.Policy, verdict: b.verdict, needs: b.needs, mayDecide: b.decider.May,
		respondable: b.respondable, shown: b.shown, pendingCard: b.pendingCard}
}

// authTestError says what a failed auth.test means: Slack refused the
// token, or Slack was never reached, which no token would change.
func authTestError(err error) error {
	var refused slack.SlackErrorResponse
	var status slack.StatusCodeError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("bot: Slack refused SLACK_BOT_TOKEN (auth.test: %w): copy the Bot User OAuth Token (xoxb-…) again, or reinstall the app for a new one", err)
	case errors.As(err, &status):
		return fmt.Errorf("bot: auth.test: Slack answered %w; try again later, or check SLACK_API_URL", err)
	}
	return fmt.Errorf("bot: cannot reach Slack for auth.test (%w): check DNS, the network and any proxy (HTTPS_PROXY); the token was not tried", err)
}

// apiOptions are a Slack client's options: the API at apiURL ("":
// Slack's) through slackgate's HTTP client.
func apiOptions(apiURL string) []slack.Option {
	opts := []slack.Option{slack.OptionHTTPClient(slackHTTPClient())}
	if apiURL != "" {
		if !strings.HasSuffix(apiURL, "/") {
			apiURL += "/"
		}
		opts = append(opts, slack.OptionAPIURL(apiURL))
	}
	return opts
}

// NewSlackClient is a client of Slack's API at apiURL ("": Slack's own)
// with token, built as the bot builds its own: for a command that reads
// Slack beside the bot, as `slackgate audit verify` reads the audit
// channel (auditsink.ReadChannel).
func NewSlackClient(token, apiURL string) *slack.Client {
	return slack.New(token, apiOptions(apiURL)...)
}

// Run identifies the bot (auth.test), then runs the transport, the event
// consumer and the outbox until ctx ends (nil) or one of them fails. It
// stops them in order: what takes work in and does it, then the outbox
// its writes go through.
func (b *Bot) Run(ctx context.Context) error {
	auth, err := b.api.AuthTestContext(ctx)
	if err != nil {
		if b.cfg.Listener != nil {
			_ = b.cfg.Listener.Close() // Run owns it, served or not
		}
		if ctx.Err() != nil {
			return nil
		}
		b.conn.to(fmt.Errorf("auth.test failed: %w", err))
		return authTestError(err)
	}
	b.botUserID, b.teamURL = auth.UserID, auth.URL
	b.events.botUser, b.cards.botUserID = auth.UserID, auth.UserID
	b.reach.teamURL = auth.URL
	b.teams.setHome(auth.TeamID, auth.EnterpriseID)
	if b.cfg.socketMode() {
		b.conn.to(errors.New("socket mode not connected yet"))
	} else {
		b.conn.to(nil)
	}
	b.log.Info().Str("bot_user", auth.UserID).Str("team", auth.Team).Str("team_id", auth.TeamID).Str("enterprise_id", auth.EnterpriseID).Bool("socket_mode", b.cfg.socketMode()).Msg("slack bot starting")

	// The outbox outlives everything that writes through it: at a stop
	// the transports, the consumer and the tasks after an ack finish
	// what they hold first, then the outbox sends what they queued and
	// stops. Closed first, it would fail the write of the event in hand
	// (a card's post) and leave it to the next bot. Once ctx ends it
	// retries nothing: a call that failed may yet show in Slack.
	outCtx, stopOut := context.WithCancel(context.WithoutCancel(ctx))
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		_ = b.out.RunUntil(outCtx, ctx) // returns nil, once outCtx ends
	}()
	defer func() {
		stopOut()
		<-outDone
	}()
	g, gctx := errgroup.WithContext(ctx)
	b.work.start(gctx)
	g.Go(func() error { return b.consumer.run(gctx) })
	g.Go(func() error { return b.reconcile(gctx) })
	if b.sealer != nil {
		g.Go(func() error { return b.sealer.Run(gctx) })
	}
	if b.auditChannel != nil {
		g.Go(func() error { return b.runAuditChannel(gctx, auth.URL) })
	}
	if b.cfg.socketMode() {
		g.Go(func() error { return b.socket.run(gctx) })
		if b.approvalAPI != nil {
			g.Go(func() error {
				return serveHTTP(gctx, b.log, b.cfg.Listener, b.cfg.HTTPAddr, apiHandler(b.approvalAPI), "approval api")
			})
		}
	} else {
		g.Go(func() error {
			return serveHTTP(gctx, b.log, b.cfg.Listener, b.cfg.HTTPAddr, b.Handler(), "slack http mode")
		})
	}
	if b.approvalAPI != nil {
		g.Go(func() error { return b.approvalAPI.Run(gctx) })
	}
	if b.reach.steps() {
		g.Go(func() error { return b.reach.run(gctx) })
	}
	g.Go(func() error { return b.homes.run(gctx) })
	err = g.Wait()
	b.work.stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// tasks owns the work done after an ack: every goroutine it starts runs
// with Run's context and is waited for before Run returns.
type tasks struct {
	mu     sync.Mutex
	ctx    context.Context
	wg     sync.WaitGroup
	closed bool
}

func (t *tasks) start(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	t.mu.Unlock()
}

// context is Run's context, for work done inside a transport's request
// (a view_submission decided before its ack).
func (t *tasks) context() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		return context.Background()
	}
	return t.ctx
}

// Go runs f unless the bot is stopping; it reports whether f was started.
func (t *tasks) Go(f func(ctx context.Context)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.ctx == nil {
		return false
	}
	ctx := t.ctx
	t.wg.Go(func() { f(ctx) })
	return true
}

func (t *tasks) stop() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// slackIdleConns is how many idle connections to Slack the bot keeps: the
// outbox sends many calls at once (cards, outcomes, results and live
// messages in many channels), and a call that finds no idle connection
// pays for a new TCP and TLS handshake with slack.com. Go's default
// transport keeps two per host.
const slackIdleConns = 64

// slackHTTPClient is the Web API's client: Go's default transport (proxy
// from the environment, its dial and TLS timeouts) keeping enough idle
// connections for the calls the bot makes at once. Deadlines come from
// each call's context.
func slackHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = slackIdleConns
	t.MaxIdleConnsPerHost = slackIdleConns
	return &http.Client{Transport: t}
}
