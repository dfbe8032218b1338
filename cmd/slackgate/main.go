package main

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/relay"
	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/boltstore"
	"github.com/slackgate/slackgate/store/redisstore"
)

const usage = `usage: slackgate <command>

commands:
  run      the Slack bot and the Claude Code worker in one process
           (embedded store in DATA_DIR, or Redis when REDIS_URL is set)
  bot      only the Slack side; several may run against one REDIS_URL
  worker   only the Claude Code side; several may run against one REDIS_URL
  keygen   print a new decision signing key pair as two lines,
           DECISION_SIGNING_KEY (for bots) and DECISION_VERIFY_KEY (for workers)
  audit    print the audit log (requests and who decided them) as JSON lines:
           slackgate audit [-after ID] [-limit N]; check its chain, signed
           checkpoints and anchors (AUDIT_CHANNEL, DATA_DIR): slackgate audit
           verify [-from ID] [-file F] [-expect SEQ:HASH] [-allow-unsealed];
           write a period of it: slackgate audit export [-since T] [-until T]
           [-channel C] [-user U] [-tool NAME] [-outcome O] [-format jsonl|csv];
           acknowledge a break so the bots seal again: slackgate audit reset
           -reason WHY [-by NAME]
  answers  the remembered answers ("Always answer this way") in the store:
           slackgate answers list [-json] | slackgate answers forget [-by NAME] ID
  rules    the rules approvers allowed from a card (grants) in the store:
           slackgate rules list [-json] | slackgate rules forget [-by NAME] ID
  doctor   check the configuration, tokens, scopes, Socket Mode, the store,
           the CLI and its credential and the working directories, one line
           each, saying what to fix: slackgate doctor [run|bot|worker]
  hook     a Claude Code hook command: asks Slack through a bot's approval API
           (SLACKGATE_URL; the token in ~/.config/slackgate/token);
           slackgate hook install [-write FILE] [-wait D] prints (or merges
           into a settings file) the block that registers it
  mcp      an MCP stdio server whose tool "approve" asks Slack through the same
           API, for claude -p --mcp-config FILE
           --permission-prompt-tool mcp__slackgate__approve
  policy   the team policy file (POLICY_FILE), without Slack or a store:
           slackgate policy check [FILE]   print its rules as understood, or
                                           every problem as file:line
           slackgate policy explain -tool T -input JSON [-channel C] [-cwd DIR]
                                    [-token NAME]   which rule decides, and how
  version  print the version and the commit it was built from
  help     this text; slackgate help COMMAND (or COMMAND -h) for one command

Configuration comes from the environment; README.md lists every variable.
`

func main() {
	if err := lockdown(); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// The first signal stops slackgate gracefully; from then on the
		// signals' default applies, so a second one ends it at once.
		<-ctx.Done()
		stop()
	}()
	p := program{environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := p.run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate:", err)
		os.Exit(1)
	}
}

// program is one slackgate invocation. Tests build one with their own
// configuration, environment and listener and run it in-process.
type program struct {
	// environ is the process's environment: where main reads the
	// configuration from, and what the CLI's environment is drawn from.
	environ []string
	// config, when set, is the configuration instead of what environ says
	// (tests); it is completed and checked as loadConfig does.
	config         *Config
	stdin          io.Reader
	stdout, stderr io.Writer
	// listener, when set, serves HTTP mode instead of listening on HTTP_ADDR.
	listener net.Listener
	// healthListener, when set, serves /healthz, /readyz and /metrics
	// instead of listening on HEALTH_ADDR.
	healthListener net.Listener
	// hup, when set, stands for SIGHUP (tests: a signal to this process
	// would reach every app the test binary runs); afterReload, when set,
	// is told how each reload of POLICY_FILE ended.
	hup         chan os.Signal
	afterReload func(error)
	// geteuid, when set, stands for os.Geteuid (tests of what root may do).
	geteuid func() int
}

func (p program) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(p.stderr, usage)
		return errors.New("no command given")
	}
	if topic, ok := helpTopic(args); ok {
		return help(p.stdout, topic)
	}
	cmd := args[0]
	switch cmd {
	case "version":
		_, err := io.WriteString(p.stdout, versionLine())
		return err
	case "keygen":
		return keygen(p.stdout)
	case "hook":
		return p.hook(ctx, args[1:])
	case "mcp":
		return p.mcp(ctx)
	case "doctor":
		return p.doctor(ctx, args[1:])
	}
	if cmd != "run" && cmd != "bot" && cmd != "worker" && cmd != "audit" && cmd != "answers" && cmd != "rules" && cmd != "policy" {
		fmt.Fprint(p.stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	cfg, err := p.configuration()
	if err != nil && (cmd != "run" && cmd != "bot" && cmd != "worker" || cfg == (Config{})) {
		return err // the commands' own check below says it among the rest
	}
	switch cmd {
	case "audit":
		return p.audit(ctx, args[1:], cfg)
	case "answers":
		return p.answers(ctx, args[1:], cfg)
	case "rules":
		return p.rules(ctx, args[1:], cfg)
	case "policy":
		return p.policyCmd(args[1:], cfg)
	}
	s := &preflight{cmd: cmd, cfg: cfg, cfgErr: err, environ: p.environ}
	if err := p.preflight(ctx, s, false); err != nil {
		return err
	}
	return p.start(ctx, s)
}

// start runs cmd once its preflight passed: it opens the store, checks
// the worker's side, and serves until ctx ends or a part fails.
func (p program) start(ctx context.Context, s *preflight) error {
	cfg, keys := s.cfg, s.keys
	log := newLogger(cfg, p.stderr).With().Str("cmd", s.cmd).Logger()
	redis.SetLogger(redisLogger{log.With().Str("component", "go-redis").Logger()})
	for _, w := range misspeltSettings(p.environ) {
		log.Warn().Msg(w)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := p.preflight(ctx, s, true); err != nil {
		return err
	}
	if keys.generated && cfg.RedisURL == "" {
		// DATA_DIR exists, private, and is this process's alone now.
		if keys, err = keepKeys(keys, cfg.DataDir); err != nil {
			return fmt.Errorf("config: %w", err)
		}
		s.botCfg.SigningKey = keys.sign
	}
	return p.serve(ctx, s.cmd, cfg, s.botCfg, keys, s.runAs, st, log)
}

// configuration is the program's Config: the one it was given, or the one
// its environment sets.
func (p program) configuration() (Config, error) {
	if p.config != nil {
		return p.config.complete()
	}
	return loadConfig(p.environ)
}

// serve runs what cmd runs over st, with the health and metrics endpoints,
// until ctx ends or a part fails.
func (p program) serve(ctx context.Context, cmd string, cfg Config, botCfg bot.Config, keys decisionKeys, runAs *relay.RunAs, st store.Store, log zerolog.Logger) error {
	m := newMetrics()
	m.watchPending(st)
	m.watchQueued(st)
	runs, checks, notes, err := p.parts(cmd, cfg, botCfg, keys, runAs, timedStore{Store: st, metrics: m}, m, log)
	if err != nil {
		return err
	}
	ln, err := p.opsListener(cfg)
	if err != nil {
		return err
	}
	if ln != nil {
		h := opsHandler(append([]healthCheck{{"store", storeReady(st)}}, checks...), m.handler(), log.With().Str("component", "health").Logger(), notes...)
		runs = append(runs, func(ctx context.Context) error { return serveOps(ctx, ln, h) })
	}
	g, gctx := errgroup.WithContext(ctx)
	for _, run := range runs {
		g.Go(func() error { return run(gctx) })
	}
	g.Go(func() error {
		<-gctx.Done()
		if ctx.Err() != nil {
			log.Info().Msg("stopping: taking no new work, finishing what is in flight")
		}
		return nil
	})
	if keys.generated && cfg.RedisURL != "" {
		log.Warn().Msg("decision keys made in memory: only this process can verify its decisions and sessions, and none it signed outlives it; " +
			"give every slackgate on this Redis one pair from `slackgate keygen`")
	}
	if keys.generated {
		log.Warn().Msg("the audit log is not sealed (no signed checkpoints, so nothing is trimmed from it): set DECISION_SIGNING_KEY from `slackgate keygen` to seal it")
	}
	log.Info().Str("store", storeName(cfg)).Str("workdir", cfg.WorkDir).Msg("slackgate started")
	if err = g.Wait(); err != nil {
		log.Error().Err(err).Msg("slackgate stopped: a part failed")
		return err
	}
	log.Info().Msg("slackgate stopped")
	return nil
}

// parts builds the halves cmd runs, measured by m, over st: what to run,
// and the readiness checks and notes they add to the store's.
func (p program) parts(cmd string, cfg Config, botCfg bot.Config, keys decisionKeys, runAs *relay.RunAs, st store.Store, m *metrics, log zerolog.Logger) (
	runs []func(context.Context) error, checks, notes []healthCheck, err error) {
	if cmd == "run" || cmd == "worker" {
		w, err := relay.NewWorker(p.relayConfig(cfg, runAs, keys.verify), st, log.With().Str("component", "worker").Logger())
		if err != nil {
			return nil, nil, nil, err
		}
		m.watchSessions(w.Sessions)
		runs = append(runs, w.Run)
	}
	if cmd == "run" || cmd == "bot" {
		botCfg.Metrics = m
		// A checkpoint signed with a key made in memory could never be
		// checked: `run` without DECISION_SIGNING_KEY leaves the audit
		// log unsealed, and so untrimmed.
		botCfg.SealAudit = !keys.generated
		botCfg.AuditAnchorFile = auditAnchorFile(cfg)
		b, err := bot.New(botCfg, st, log.With().Str("component", "bot").Logger())
		if err != nil {
			return nil, nil, nil, err
		}
		m.watchOutbox(b.OutboxDepth)
		checks = append(checks, healthCheck{"slack", func(context.Context) error { return b.SlackReady() }})
		runs = append(runs, b.Run)
		webhook, err := auditWebhook(cfg, st, keys.sign, log)
		if err != nil {
			return nil, nil, nil, err
		}
		if webhook != nil {
			runs = append(runs, webhook.Run)
		}
		notes = append(auditSinks(cfg, b, webhook, m), healthCheck{"audit_chain", func(context.Context) error {
			if why := b.AuditChainBroken(); why != "" {
				return errors.New(why)
			}
			return nil
		}})
		if cfg.PolicyFile != "" {
			r := &policyReloader{file: cfg.PolicyFile, cfg: cfg, set: b.SetPolicy, hup: p.hup, after: p.afterReload,
				log: log.With().Str("component", "policy").Logger()}
			runs = append(runs, r.Run)
			notes = append(notes, healthCheck{"policy_reload", r.ready})
		}
	}
	return runs, checks, notes, nil
}

// openStore picks the backend: Redis when REDIS_URL is set, else the
// embedded bbolt file in DATA_DIR.
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	if cfg.RedisURL != "" {
		st, err := redisstore.New(ctx, cfg.RedisURL, redisstore.WithPrefix(cfg.RedisKeyPrefix),
			redisstore.WithRetention(cfg.Retention), redisstore.WithAuditRetention(cfg.AuditRetention))
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err) // the error names the URL, password masked
		}
		return st, nil
	}
	path := filepath.Join(cfg.DataDir, "slackgate.db")
	st, err := boltstore.Open(path, boltstore.WithRetention(cfg.Retention), boltstore.WithAuditRetention(cfg.AuditRetention))
	if err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", cfg.DataDir, err)
	}
	return st, nil
}

// openExistingStore opens the store a service made, for a command that
// reads or edits what is in it: a DATA_DIR without one, or a Redis
// prefix nothing was ever written under, is an error naming where it
// looked, never a new empty store that answers nothing.
func openExistingStore(ctx context.Context, cfg Config) (store.Store, error) {
	if cfg.RedisURL == "" {
		path := filepath.Join(cfg.DataDir, "slackgate.db")
		if _, err := os.Stat(path); err != nil {
			abs, _ := filepath.Abs(path)
			return nil, fmt.Errorf("no store at %s (DATA_DIR=%s): slackgate run makes it there; "+
				"set DATA_DIR to the service's (the systemd unit's is /var/lib/slackgate), or REDIS_URL to its Redis: %w", abs, cfg.DataDir, err)
		}
	}
	st, err := openStore(ctx, cfg)
	rs, ok := st.(*redisstore.Store)
	if err != nil || !ok {
		return st, err
	}
	used, err := rs.Used(ctx)
	if err == nil && !used {
		err = fmt.Errorf("no store in %s under REDIS_KEY_PREFIX=%s: slackgate bot or run makes it there; "+
			"set REDIS_KEY_PREFIX to the service's (the default is slackgate)", redisstore.MaskURL(cfg.RedisURL), cfg.RedisKeyPrefix)
	}
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	return st, nil
}

func storeName(cfg Config) string {
	if cfg.RedisURL != "" {
		return "redis " + redisstore.MaskURL(cfg.RedisURL)
	}
	return "bolt " + filepath.Join(cfg.DataDir, "slackgate.db")
}

// redisLogger sends go-redis's own messages (dial failures while it
// reconnects) to our log instead of its default stderr logger.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn().Msgf(format, v...)
}

// relayConfig is the worker's share of the configuration.
func (p program) relayConfig(cfg Config, runAs *relay.RunAs, verify ed25519.PublicKey) relay.Config {
	args, _ := splitArgs(cfg.Args) // validated by loadConfig
	pass, _ := cfg.passEnv()       // validated by loadConfig

	sources, _ := cfg.settingSources() // validated by loadConfig
	return relay.Config{
		ClaudeBin:      cfg.ClaudeBin,
		PermissionMode: cfg.PermissionMode,
		Model:          cfg.Model,
		ExtraArgs:      args,
		SettingSources: sources,
		SettingsFile:   cfg.ClaudeSettings,
		MCPConfigFile:  cfg.ClaudeMCPConfig,
		RequestTimeout: cfg.RequestTimeout,
		MaxSessions:    cfg.MaxSessions,
		IdleTimeout:    cfg.IdleTimeout,
		WorkerID:       cfg.WorkerID,
		WorkerTimeout:  cfg.WorkerTimeout,
		Env:            p.environ, // the worker lets only ClaudeEnv's allowlist through
		PassEnv:        pass,
		DenyEnv:        slackgateSetting,
		User:           runAs,
		VerifyKey:      verify,
		AllowedDirs:    workDirs(cfg),
		Resolve:        resolvePaths,

		// MAX_TRANSCRIPT_BYTES=0 (save none) is relay's "never"; relay's 0
		// is its default.
		MaxTranscriptBytes: cmp.Or(cfg.MaxTranscriptBytes, -1),
	}
}

// claudeUser resolves CLAUDE_USER and proves, before any session, that the
// CLI starts as that user in every working directory slackgate knows of.
// Without CLAUDE_USER, Claude runs as slackgate's own user; when that is
// root it could write /etc/claude-code/managed-settings.json, which
// Claude Code reads whatever its setting sources say (a command approved
// once would then allow everything after it), so that is refused unless
// CLAUDE_AS_ROOT says the machine is Claude's alone.
func (p program) claudeUser(ctx context.Context, cfg Config) (*relay.RunAs, error) {
	if cfg.ClaudeUser == "" {
		geteuid := os.Geteuid
		if p.geteuid != nil {
			geteuid = p.geteuid
		}
		if geteuid() == 0 && !cfg.ClaudeAsRoot {
			return nil, errors.New("config: slackgate runs as root and CLAUDE_USER is not set, so Claude would run as root " +
				"and could write /etc/claude-code/managed-settings.json, which Claude Code reads whatever CLAUDE_SETTING_SOURCES says; " +
				"set CLAUDE_USER to a user of Claude's own (deploy/README.md), or CLAUDE_AS_ROOT=true where the machine is Claude's alone")
		}
		return nil, nil
	}
	u, err := relay.LookupRunAs(cfg.ClaudeUser)
	if err == nil {
		pass, _ := cfg.passEnv() // validated by loadConfig
		err = u.Check(ctx, cfg.ClaudeBin, relay.ClaudeEnv(p.environ, pass, slackgateSetting), workDirs(cfg))
	}
	if err != nil {
		return nil, fmt.Errorf("config: CLAUDE_USER=%s: %w", cfg.ClaudeUser, err)
	}
	return u, nil
}

// workDirs are the directories sessions may run in: CLAUDE_WORKDIR,
// CHANNEL_WORKDIRS and DM_WORKDIR. A worker runs a session in no other,
// whatever its signed record says (relay.Config.AllowedDirs): one started
// without the bot's CHANNEL_WORKDIRS or DM_WORKDIR knows only the first,
// and refuses the sessions of those channels, saying why in their thread.
func workDirs(cfg Config) []string {
	dirs := []string{cfg.WorkDir}
	byChannel, _ := bot.ParseChannelWorkDirs(cfg.ChannelWorkDirs) // validated by botConfig
	for _, d := range byChannel {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if cfg.AllowDMs && cfg.DMWorkDir != "" && !slices.Contains(dirs, cfg.DMWorkDir) {
		dirs = append(dirs, cfg.DMWorkDir)
	}
	slices.Sort(dirs[1:])
	return dirs
}

// keepOut refuses a working directory that holds slackgate's own files.
// Claude reads files in its working directory without asking anyone, so
// the directory slackgate runs in (where `make run` reads .env, the
// tokens) and DATA_DIR (the embedded store) must lie outside every one.
func keepOut(cfg Config) error {
	type own struct{ what, path string }
	var mine []own
	if wd, err := os.Getwd(); err == nil {
		mine = append(mine, own{"slackgate's own directory, where `make run` reads .env", wd})
	}
	if cfg.RedisURL == "" {
		if d, err := filepath.Abs(cfg.DataDir); err == nil {
			mine = append(mine, own{"DATA_DIR, where slackgate keeps its store", d})
		}
	}
	for _, dir := range workDirs(cfg) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		for _, m := range mine {
			if rel, err := filepath.Rel(abs, m.path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return fmt.Errorf("config: the working directory %s contains %s (%s), and Claude may read any file there without asking: "+
					"set CLAUDE_WORKDIR (and CHANNEL_WORKDIRS, DM_WORKDIR) to the repositories Claude should work in, outside it", dir, m.what, m.path)
			}
		}
	}
	return nil
}

// botConfig is the Slack side's share of the configuration.
func (p program) botConfig(cfg Config, sign ed25519.PrivateKey) (bot.Config, error) {
	approvers, err := bot.ParsePeople(cfg.Approvers)
	if err != nil {
		return bot.Config{}, fmt.Errorf("APPROVERS: %w", err)
	}
	starters, err := bot.ParsePeople(cfg.Starters)
	if err != nil {
		return bot.Config{}, fmt.Errorf("STARTERS: %w", err)
	}
	teams, err := bot.ParseTeams(cfg.AllowedTeams)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ALLOWED_TEAMS: %w", err)
	}
	channels, err := bot.ParseChannels(cfg.AllowedChannels)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ALLOWED_CHANNELS: %w", err)
	}
	dirs, err := bot.ParseChannelWorkDirs(cfg.ChannelWorkDirs)
	if err != nil {
		return bot.Config{}, fmt.Errorf("CHANNEL_WORKDIRS: %w", err)
	}
	escalateTo, err := bot.ParsePeople(cfg.EscalateTo)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ESCALATE_TO: %w", err)
	}
	tokens, err := bot.ParseAPITokens(cfg.APITokens)
	if err != nil {
		return bot.Config{}, fmt.Errorf("API_TOKENS: %w", err)
	}
	return bot.Config{
		BotToken:      cfg.SlackBotToken,
		AppToken:      cfg.SlackAppToken,
		SigningSecret: cfg.SlackSigningSecret,
		APIURL:        cfg.SlackAPIURL,
		HTTPAddr:      cfg.HTTPAddr,
		Listener:      p.listener,
		APITokens:     tokens,
		APILimits: approvalapi.Limits{
			MaxSessions:          cfg.APIMaxSessions,
			MaxPending:           cfg.APIMaxPending,
			RequestsPerMinute:    cfg.APIRequestsPerMinute,
			ToolResultsPerMinute: cfg.APIToolResultsPerMinute,
		},
		Approvers:          approvers,
		Starters:           starters,
		AllowedTeams:       teams,
		AllowedChannels:    channels,
		AllowDMs:           cfg.AllowDMs,
		DMWorkDir:          cfg.DMWorkDir,
		MaxSessionsPerUser: cfg.MaxSessionsPerUser,
		MaxQueuedInputs:    cfg.MaxQueuedInputs,
		MaxPromptBytes:     cfg.MaxPromptBytes,
		WorkDir:            cfg.WorkDir,
		ChannelWorkDirs:    dirs,
		PermissionMode:     cfg.PermissionMode,
		Model:              cfg.Model,
		CardClaimTTL:       cfg.CardClaimTimeout,
		ReconcileInterval:  cfg.ReconcileInterval,
		Budgets: outbox.Budgets{
			PostsPerSecond:   cfg.SlackPostsPerSecond,
			PostBurst:        cfg.SlackPostBurst,
			UpdatesPerMinute: cfg.SlackUpdatesPerMinute,
			UpdateBurst:      cfg.SlackUpdateBurst,
			LiveEditInterval: cfg.SlackLiveEditInterval,
		},
		SigningKey:   sign,
		AuditChannel: cfg.AuditChannel,
		Reach: bot.ReachDefaults{
			NotifyChannel: cfg.NotifyChannel,
			NotifyDM:      cfg.Notify == "dm",
			RemindAfter:   cfg.RemindAfter,
			EscalateAfter: cfg.EscalateAfter,
			EscalateTo:    escalateTo.IDs,
		},
	}, nil
}
