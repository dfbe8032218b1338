// Command slackgate runs Claude Code headless and puts every permission
// prompt and question it asks into Slack, where people answer with a tap.
//
//	slackgate run      Slack bot and Claude Code worker in one process (embedded store, or Redis)
//	slackgate bot      only the Slack side (needs REDIS_URL)
//	slackgate worker   only the Claude Code side (needs REDIS_URL)
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/slackgate/slackgate/bot"
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
  audit    print the audit log (requests and who decided them) as JSON lines:
           slackgate audit [-after ID] [-limit N]
  help     this text

Configuration comes from the environment; README.md lists every variable.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := program{environ: os.Environ(), stdout: os.Stdout, stderr: os.Stderr}
	if err := p.run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "slackgate:", err)
		os.Exit(1)
	}
}

// program is one slackgate invocation. Tests build one with their own
// environment and listener and run it in-process.
type program struct {
	environ        []string
	stdout, stderr io.Writer
	// listener, when set, serves HTTP mode instead of listening on HTTP_ADDR.
	listener net.Listener
	// postInterval overrides Slack's one-post-per-second pacing (tests).
	postInterval time.Duration
}

func (p program) run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		_, err := io.WriteString(p.stdout, usage)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return err
	}
	cmd := args[0]
	if cmd != "run" && cmd != "bot" && cmd != "worker" && cmd != "audit" {
		fmt.Fprint(p.stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
	cfg, err := loadConfig(p.environ)
	if err != nil {
		return err
	}
	if cmd == "audit" {
		return p.audit(ctx, args[1:], cfg)
	}
	var botCfg bot.Config
	if cmd != "worker" {
		if err := cfg.validateSlack(); err != nil {
			return err
		}
		if botCfg, err = p.botConfig(cfg); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	if cmd != "run" && cfg.RedisURL == "" {
		return fmt.Errorf("slackgate %s runs beside other processes and needs REDIS_URL; use `slackgate run` for one machine", cmd)
	}
	log := newLogger(cfg, p.stderr).With().Str("cmd", cmd).Logger()
	redis.SetLogger(redisLogger{log.With().Str("component", "go-redis").Logger()})

	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	g, gctx := errgroup.WithContext(ctx)
	if cmd == "run" || cmd == "worker" {
		w, err := relay.NewWorker(p.relayConfig(cfg), st, log.With().Str("component", "worker").Logger())
		if err != nil {
			return err
		}
		g.Go(func() error { return w.Run(gctx) })
	}
	if cmd == "run" || cmd == "bot" {
		b, err := bot.New(botCfg, st, log.With().Str("component", "bot").Logger())
		if err != nil {
			return err
		}
		g.Go(func() error { return b.Run(gctx) })
	}
	log.Info().Str("store", storeName(cfg)).Str("workdir", cfg.WorkDir).Msg("slackgate started")
	err = g.Wait()
	log.Info().Err(err).Msg("slackgate stopped")
	return err
}

// openStore picks the backend: Redis when REDIS_URL is set, else the
// embedded bbolt file in DATA_DIR.
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	if cfg.RedisURL != "" {
		st, err := redisstore.New(ctx, cfg.RedisURL, redisstore.WithPrefix(cfg.RedisKeyPrefix))
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err) // the error names the URL, password masked
		}
		return st, nil
	}
	path := filepath.Join(cfg.DataDir, "slackgate.db")
	st, err := boltstore.Open(path)
	if err != nil {
		return nil, fmt.Errorf("DATA_DIR=%s: %w", cfg.DataDir, err)
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
func (p program) relayConfig(cfg Config) relay.Config {
	args, _ := splitArgs(cfg.Args) // validated by loadConfig
	return relay.Config{
		ClaudeBin:      cfg.ClaudeBin,
		PermissionMode: cfg.PermissionMode,
		Model:          cfg.Model,
		ExtraArgs:      args,
		RequestTimeout: cfg.RequestTimeout,
		MaxSessions:    cfg.MaxSessions,
		IdleTimeout:    cfg.IdleTimeout,
		WorkerID:       cfg.WorkerID,
		Env:            p.environ, // claude inherits slackgate's environment
	}
}

// botConfig is the Slack side's share of the configuration.
func (p program) botConfig(cfg Config) (bot.Config, error) {
	approvers, err := bot.ParsePeople(cfg.Approvers)
	if err != nil {
		return bot.Config{}, fmt.Errorf("APPROVERS: %w", err)
	}
	starters, err := bot.ParsePeople(cfg.Starters)
	if err != nil {
		return bot.Config{}, fmt.Errorf("STARTERS: %w", err)
	}
	channels, err := bot.ParseChannels(cfg.AllowedChannels)
	if err != nil {
		return bot.Config{}, fmt.Errorf("ALLOWED_CHANNELS: %w", err)
	}
	dirs, err := bot.ParseChannelWorkDirs(cfg.ChannelWorkDirs)
	if err != nil {
		return bot.Config{}, fmt.Errorf("CHANNEL_WORKDIRS: %w", err)
	}
	return bot.Config{
		BotToken:           cfg.SlackBotToken,
		AppToken:           cfg.SlackAppToken,
		SigningSecret:      cfg.SlackSigningSecret,
		APIURL:             cfg.SlackAPIURL,
		HTTPAddr:           cfg.HTTPAddr,
		Listener:           p.listener,
		Approvers:          approvers,
		Starters:           starters,
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
		PostInterval:       p.postInterval,
	}, nil
}
