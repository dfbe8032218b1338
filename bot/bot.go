package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot/auditsink"
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

	out       *outbox
	approvers *approvers
	starters  *approvers
	teams     *teamGate
	work      tasks
	// apiLocks serialise, per key, what the approval API must not do
	// twice at once: open one Claude session's thread (one thread per
	// session), count a token's sessions or pending requests with the
	// write they admit. apiRates and apiOpening are the rest of the
	// API's limits (apilimits.go); apiExpiry wakes its sweeper.
	apiLocks   keyedLocks
	apiRates   apiRates
	apiOpening apiOpening
	apiExpiry  apiExpiry
	// auditChannel posts the audit log's lines (nil: no AUDIT_CHANNEL).
	auditChannel *auditsink.Follower
	status       statusBook
	cards        *cards
	// starting and queueing serialise the session-count and backlog
	// checks with the writes they admit (see stripes); two sets, so a
	// start that turns into a follow-up never waits on itself.
	starting, queueing stripes
	conn               connState
	// policy is the team policy applied now: set at New from
	// Config.Policy and replaced whole by SetPolicy (a SIGHUP reload), so
	// a request is evaluated under one policy or the other, never a mix.
	policy atomic.Pointer[policy.Policy]

	// afterReconcile, when set (tests), runs after each reconcile pass;
	// expiryArmed after the API sweeper set its timer, due at due.
	afterReconcile func()
	expiryArmed    func(due time.Time)

	// botUserID comes from auth.test at the start of Run; handlers run only
	// after it is set.
	botUserID string
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
	cfg.APILimits = cfg.APILimits.withDefaults()

	opts := []slack.Option{}
	if cfg.APIURL != "" {
		u := cfg.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	if cfg.AppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(cfg.AppToken))
	}
	opts = append(opts, slack.OptionHTTPClient(slackHTTPClient()))
	// No slack.OptionRetry: the outbox owns 429 handling, and two layers of
	// retries would multiply the waits.
	api := slack.New(cfg.BotToken, opts...)

	b := &Bot{
		cfg:   cfg,
		st:    st,
		log:   log,
		api:   api,
		clock: cfg.Clock,
		out:   newOutbox(api, cfg.Budgets, cfg.Clock, log),

		apiExpiry: newAPIExpiry(),
	}
	b.cards = &cards{b: b}
	b.policy.Store(cfg.Policy)
	if cfg.Metrics != nil {
		b.out.metrics = cfg.Metrics
	}
	b.auditChannel = b.newAuditChannel()
	list := func(ctx context.Context, g string) ([]string, error) {
		return api.GetUserGroupMembersContext(ctx, g)
	}
	b.approvers = newApprovers(cfg.Approvers, list, cfg.Clock, ttl)
	starters := cfg.Starters
	if starters.IsZero() {
		starters = cfg.Approvers
	}
	b.starters = newApprovers(starters, list, cfg.Clock, ttl)
	b.teams = newTeamGate(cfg.AllowedTeams, func(ctx context.Context, user string) (*slack.User, error) {
		return api.GetUserInfoContext(ctx, user)
	}, cfg.Clock, ttl)
	return b, nil
}

// Run identifies the bot (auth.test), then runs the transport, the event
// consumer and the outbox until ctx ends (nil) or one of them fails.
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
		return fmt.Errorf("bot: auth.test (is SLACK_BOT_TOKEN right?): %w", err)
	}
	b.botUserID = auth.UserID
	b.teams.setHome(auth.TeamID, auth.EnterpriseID)
	if b.cfg.socketMode() {
		b.conn.to(errors.New("socket mode not connected yet"))
	} else {
		b.conn.to(nil)
	}
	b.log.Info().Str("bot_user", auth.UserID).Str("team", auth.Team).Str("team_id", auth.TeamID).Str("enterprise_id", auth.EnterpriseID).Bool("socket_mode", b.cfg.socketMode()).Msg("slack bot starting")

	g, gctx := errgroup.WithContext(ctx)
	b.work.start(gctx)
	g.Go(func() error { return b.out.Run(gctx) })
	g.Go(func() error { return b.consume(gctx) })
	g.Go(func() error { return b.reconcile(gctx) })
	if b.cfg.SealAudit {
		g.Go(func() error { return b.auditSealer().Run(gctx) })
	}
	if b.auditChannel != nil {
		g.Go(func() error { return b.runAuditChannel(gctx, auth.URL) })
	}
	if b.cfg.socketMode() {
		g.Go(func() error { return b.runSocketMode(gctx) })
		if len(b.cfg.APITokens) > 0 {
			g.Go(func() error { return b.serveHTTP(gctx, b.apiHandler(), "approval api") })
		}
	} else {
		g.Go(func() error { return b.serveHTTP(gctx, b.Handler(), "slack http mode") })
	}
	if len(b.cfg.APITokens) > 0 {
		g.Go(func() error { return b.expireAPIRequests(gctx) })
	}
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
