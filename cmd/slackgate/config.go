package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/auditsink"
	"github.com/slackgate/slackgate/relay"
)

// maxTranscriptBytes is the most MAX_TRANSCRIPT_BYTES may be: a worker
// holds a transcript whole in memory while it saves it, and the store
// takes at most store.MaxTranscriptBytes of it compressed.
const maxTranscriptBytes = 128 << 20

// minCardClaim is the least CARD_CLAIM_TIMEOUT: longer than a Slack call
// may take (bot's call timeout, 15 s), with room for the store write
// that records the card.
const minCardClaim = 20 * time.Second

// Config is every setting slackgate reads, all from the environment. It is
// read here and nowhere else; packages get plain structs built from it.
type Config struct {
	// Claude Code.
	ClaudeBin      string        `env:"CLAUDE_BIN" envDefault:"claude"`
	WorkDir        string        `env:"CLAUDE_WORKDIR"`
	PermissionMode string        `env:"CLAUDE_PERMISSION_MODE" envDefault:"default"`
	Model          string        `env:"CLAUDE_MODEL"`
	Args           string        `env:"CLAUDE_ARGS"`
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" envDefault:"30m"`
	MaxSessions    int           `env:"MAX_SESSIONS" envDefault:"8"`
	IdleTimeout    time.Duration `env:"SESSION_IDLE_TIMEOUT" envDefault:"10m"`
	WorkerID       string        `env:"WORKER_ID"`
	ClaudeEnv      string        `env:"CLAUDE_ENV"`
	ClaudeUser     string        `env:"CLAUDE_USER"`
	// ClaudeAsRoot lets a worker running as root start Claude as root
	// without CLAUDE_USER (refused otherwise: see program.claudeUser).
	ClaudeAsRoot bool `env:"CLAUDE_AS_ROOT"`

	// What the Claude Code CLI reads (see claudeconfig.go): nothing by
	// default but the operator's settings file and MCP servers, when set;
	// CLAUDE_SETTING_SOURCES opts into user, project or local settings.
	ClaudeSettings       string `env:"CLAUDE_SETTINGS"`
	ClaudeMCPConfig      string `env:"CLAUDE_MCP_CONFIG"`
	ClaudeSettingSources string `env:"CLAUDE_SETTING_SOURCES"`

	// Liveness: a worker silent this long is lost, and the others take
	// its sessions over (see relay.Config.WorkerTimeout).
	WorkerTimeout time.Duration `env:"WORKER_TIMEOUT" envDefault:"30s"`
	// MaxTranscriptBytes bounds the session transcript a worker saves to
	// the store, uncompressed, so another worker can resume the session;
	// 0 saves none (see relay.Config.MaxTranscriptBytes).
	MaxTranscriptBytes int64 `env:"MAX_TRANSCRIPT_BYTES" envDefault:"33554432"`

	// Store.
	RedisURL       string `env:"REDIS_URL"`
	RedisKeyPrefix string `env:"REDIS_KEY_PREFIX" envDefault:"slackgate"`
	DataDir        string `env:"DATA_DIR" envDefault:"./data"`
	// Retention: how long settled requests, sessions at rest and the
	// audit trail stay (see store.Store); 0 keeps them forever.
	Retention      time.Duration `env:"RETENTION" envDefault:"720h"`
	AuditRetention time.Duration `env:"AUDIT_RETENTION" envDefault:"8760h"`

	// The audit trail beyond the store (package auditsink): a line per
	// settled request and refusal in a channel, every entry POSTed to a
	// webhook; /readyz notes a backlog past AuditMaxBacklog entries.
	AuditChannel       string `env:"AUDIT_CHANNEL"`
	AuditWebhookURL    string `env:"AUDIT_WEBHOOK_URL"`
	AuditWebhookSecret string `env:"AUDIT_WEBHOOK_SECRET"`
	AuditMaxBacklog    int    `env:"AUDIT_MAX_BACKLOG" envDefault:"1000"`

	// Slack.
	SlackBotToken      string `env:"SLACK_BOT_TOKEN"`
	SlackAppToken      string `env:"SLACK_APP_TOKEN"`
	SlackSigningSecret string `env:"SLACK_SIGNING_SECRET"`
	SlackAPIURL        string `env:"SLACK_API_URL"`
	HTTPAddr           string `env:"HTTP_ADDR" envDefault:":3000"`
	ChannelWorkDirs    string `env:"CHANNEL_WORKDIRS"`
	// APITokens turns on the approval API on HTTP_ADDR (in Socket Mode
	// too): name:channel:token entries, separated by commas.
	APITokens string `env:"API_TOKENS"`
	// Each API token's limits (see approvalapi.Limits): sessions open at
	// once (used within the last hour), requests waiting for a person, and
	// requests and tool results a minute (per bot replica).
	APIMaxSessions          int `env:"API_MAX_SESSIONS" envDefault:"100"`
	APIMaxPending           int `env:"API_MAX_PENDING" envDefault:"100"`
	APIRequestsPerMinute    int `env:"API_REQUESTS_PER_MINUTE" envDefault:"60"`
	APIToolResultsPerMinute int `env:"API_TOOL_RESULTS_PER_MINUTE" envDefault:"120"`

	// Slack's rate limits as the outbox spends them (see outbox.Budgets).
	SlackPostsPerSecond   float64       `env:"SLACK_POSTS_PER_SECOND" envDefault:"1"`
	SlackPostBurst        int           `env:"SLACK_POST_BURST" envDefault:"4"`
	SlackUpdatesPerMinute float64       `env:"SLACK_UPDATES_PER_MINUTE" envDefault:"50"`
	SlackUpdateBurst      int           `env:"SLACK_UPDATE_BURST" envDefault:"20"`
	SlackLiveEditInterval time.Duration `env:"SLACK_LIVE_EDIT_INTERVAL" envDefault:"3s"`

	// A card whose bot died while posting it: other bots leave it to the
	// claim's holder this long, then the reconciler (every
	// ReconcileInterval) posts it, or records it when Slack had it.
	CardClaimTimeout  time.Duration `env:"CARD_CLAIM_TIMEOUT" envDefault:"60s"`
	ReconcileInterval time.Duration `env:"RECONCILE_INTERVAL" envDefault:"30s"`

	// Decision signing (see keys.go): the bots hold the private half, the
	// workers the public one.
	DecisionSigningKey string `env:"DECISION_SIGNING_KEY"`
	DecisionVerifyKey  string `env:"DECISION_VERIFY_KEY"`

	// Who may act, and how much.
	Approvers          string `env:"APPROVERS"`
	Starters           string `env:"STARTERS"`
	AllowedTeams       string `env:"ALLOWED_TEAMS"`
	AllowedChannels    string `env:"ALLOWED_CHANNELS"`
	AllowDMs           bool   `env:"ALLOW_DMS"`
	DMWorkDir          string `env:"DM_WORKDIR"`
	MaxSessionsPerUser int    `env:"MAX_SESSIONS_PER_USER" envDefault:"3"`
	MaxQueuedInputs    int    `env:"MAX_QUEUED_INPUTS" envDefault:"20"`
	// MaxPromptBytes: 16 KiB holds any one message a person can send from
	// Slack's client (4,000 characters, at most 4 bytes each in UTF-8) and
	// stops a scripted client from filling the queue and Claude's context.
	MaxPromptBytes int `env:"MAX_PROMPT_BYTES" envDefault:"16384"`

	// Reaching approvers beyond the card (bot/reach.go): a copy in a
	// channel or by DM, one reminder, one escalation; a policy rule's
	// ask: overrides each. Off unless set.
	NotifyChannel string        `env:"NOTIFY_CHANNEL"`
	Notify        string        `env:"NOTIFY"`
	RemindAfter   time.Duration `env:"REMIND_AFTER"`
	EscalateAfter time.Duration `env:"ESCALATE_AFTER"`
	EscalateTo    string        `env:"ESCALATE_TO"`

	// PolicyFile is the team policy (package bot/policy); `run` and `bot`
	// refuse to start when it is broken.
	PolicyFile string `env:"POLICY_FILE"`

	// Operations: /healthz, /readyz and /metrics on every process
	// ("off": none). Loopback by default: a probe or scraper from another
	// host (Kubernetes) needs HEALTH_ADDR=:9090 set.
	HealthAddr string `env:"HEALTH_ADDR" envDefault:"127.0.0.1:9090"`

	// Logs.
	LogLevel  string `env:"LOG_LEVEL" envDefault:"info"`
	LogFormat string `env:"LOG_FORMAT" envDefault:"json"`
}

// permissionModes are the modes Claude Code 2.1.x accepts for
// --permission-mode. The CLI itself accepted nonsense in 2.1.197, so we check.
var permissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"}

// loadConfig reads the configuration from the environment given as
// KEY=VALUE pairs and checks it.
func loadConfig(environ []string) (Config, error) {
	cfg, err := parseConfig(environ)
	if err != nil {
		return Config{}, err
	}
	return cfg.complete()
}

// parseConfig reads the variables Config names from environ, taking the
// defaults for those unset or empty.
func parseConfig(environ []string) (Config, error) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	cfg, err := env.ParseAsWithOptions[Config](env.Options{Environment: vars})
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", nameVariables(err, vars))
	}
	return cfg, nil
}

// complete fills in what an unset setting means beyond its default (the
// current directory for CLAUDE_WORKDIR) and checks the result.
func (c Config) complete() (Config, error) {
	if c.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return Config{}, fmt.Errorf("config: CLAUDE_WORKDIR unset and the current directory is unknown: %w", err)
		}
		c.WorkDir = wd
	}
	return c, c.validate()
}

func (c Config) validate() error {
	var errs []error
	if !slices.Contains(permissionModes, c.PermissionMode) {
		errs = append(errs, fmt.Errorf("CLAUDE_PERMISSION_MODE=%q: want one of %s", c.PermissionMode, strings.Join(permissionModes, ", ")))
	}
	if c.RequestTimeout < 0 {
		errs = append(errs, fmt.Errorf("REQUEST_TIMEOUT=%s: must be positive, or 0 for never", c.RequestTimeout))
	}
	if c.MaxSessions < 1 {
		errs = append(errs, fmt.Errorf("MAX_SESSIONS=%d: must be at least 1", c.MaxSessions))
	}
	if c.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("SESSION_IDLE_TIMEOUT=%s: must be positive", c.IdleTimeout))
	}
	if c.WorkerTimeout < 3*time.Millisecond {
		// A third of it is the heartbeat period, which must not be zero.
		errs = append(errs, fmt.Errorf("WORKER_TIMEOUT=%s: must be positive (30s is the default)", c.WorkerTimeout))
	}
	if c.MaxTranscriptBytes < 0 || c.MaxTranscriptBytes > maxTranscriptBytes {
		errs = append(errs, fmt.Errorf("MAX_TRANSCRIPT_BYTES=%d: must be between 0 (save no transcripts) and %d (33554432, 32 MiB, is the default)", c.MaxTranscriptBytes, int64(maxTranscriptBytes)))
	}
	if c.CardClaimTimeout < minCardClaim {
		errs = append(errs, fmt.Errorf("CARD_CLAIM_TIMEOUT=%s: at least %s, so a live bot still posting the card is not doubled", c.CardClaimTimeout, minCardClaim))
	}
	if c.ReconcileInterval < time.Second {
		errs = append(errs, fmt.Errorf("RECONCILE_INTERVAL=%s: at least 1s", c.ReconcileInterval))
	}
	if c.SlackPostsPerSecond <= 0 || c.SlackPostBurst < 1 || c.SlackUpdatesPerMinute <= 0 || c.SlackUpdateBurst < 1 || c.SlackLiveEditInterval <= 0 {
		errs = append(errs, errors.New("SLACK_POSTS_PER_SECOND, SLACK_POST_BURST, SLACK_UPDATES_PER_MINUTE, SLACK_UPDATE_BURST and SLACK_LIVE_EDIT_INTERVAL must be positive"))
	}
	if c.Retention < 0 {
		errs = append(errs, fmt.Errorf("RETENTION=%s: must be positive, or 0 to keep ended sessions and settled requests forever", c.Retention))
	}
	if c.AuditRetention < 0 {
		errs = append(errs, fmt.Errorf("AUDIT_RETENTION=%s: must be positive, or 0 to keep the audit log forever", c.AuditRetention))
	}
	for name, v := range map[string]int{"MAX_SESSIONS_PER_USER": c.MaxSessionsPerUser, "MAX_QUEUED_INPUTS": c.MaxQueuedInputs, "MAX_PROMPT_BYTES": c.MaxPromptBytes,
		"API_MAX_SESSIONS": c.APIMaxSessions, "API_MAX_PENDING": c.APIMaxPending, "API_REQUESTS_PER_MINUTE": c.APIRequestsPerMinute, "API_TOOL_RESULTS_PER_MINUTE": c.APIToolResultsPerMinute} {
		if v < 1 {
			errs = append(errs, fmt.Errorf("%s=%d: must be at least 1", name, v))
		}
	}
	errs = append(errs, c.validateAuditOut()...)
	errs = append(errs, c.validateReach()...)
	if _, err := zerolog.ParseLevel(strings.ToLower(c.LogLevel)); err != nil || c.LogLevel == "" {
		errs = append(errs, fmt.Errorf("LOG_LEVEL=%q: want trace, debug, info, warn or error", c.LogLevel))
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("LOG_FORMAT=%q: want json or console", c.LogFormat))
	}
	if _, err := splitArgs(c.Args); err != nil {
		errs = append(errs, fmt.Errorf("CLAUDE_ARGS: %w", err))
	}
	if _, err := c.passEnv(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateClaude()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// validateReach checks NOTIFY_CHANNEL, NOTIFY, REMIND_AFTER and the
// escalation.
func (c Config) validateReach() []error {
	var errs []error
	if c.NotifyChannel != "" {
		if _, err := bot.ParseChannels(c.NotifyChannel); err != nil || strings.ContainsAny(c.NotifyChannel, ", *") {
			errs = append(errs, fmt.Errorf("NOTIFY_CHANNEL=%q: want one Slack channel id (C…, G…)", c.NotifyChannel))
		}
	}
	if c.Notify != "" && c.Notify != "dm" {
		errs = append(errs, fmt.Errorf("NOTIFY=%q: want dm (each approver gets a DM), or leave it empty", c.Notify))
	}
	if c.RemindAfter < 0 || c.EscalateAfter < 0 {
		errs = append(errs, errors.New("REMIND_AFTER and ESCALATE_AFTER must be positive, or 0 for never"))
	}
	to, err := bot.ParsePeople(c.EscalateTo)
	switch {
	case err != nil || to.Anyone:
		errs = append(errs, fmt.Errorf("ESCALATE_TO=%q: want Slack user (U…) and user group (S…) ids", c.EscalateTo))
	case (c.EscalateAfter > 0) != (len(to.IDs) > 0):
		errs = append(errs, errors.New("ESCALATE_AFTER and ESCALATE_TO go together: set both, or neither"))
	}
	return errs
}

// validateAuditOut checks the audit channel's and webhook's settings. The
// URL is not repeated in an error: its query may hold a token.
func (c Config) validateAuditOut() []error {
	var errs []error
	if c.AuditChannel != "" {
		if _, err := bot.ParseChannels(c.AuditChannel); err != nil || strings.ContainsAny(c.AuditChannel, ", *") {
			errs = append(errs, fmt.Errorf("AUDIT_CHANNEL=%q: want one Slack channel id (C…, G…)", c.AuditChannel))
		}
	}
	switch {
	case c.AuditWebhookURL == "" && c.AuditWebhookSecret != "":
		errs = append(errs, errors.New("AUDIT_WEBHOOK_SECRET is set without AUDIT_WEBHOOK_URL: set the URL too, or unset the secret"))
	case c.AuditWebhookURL == "":
	case c.AuditWebhookSecret == "":
		errs = append(errs, errors.New("AUDIT_WEBHOOK_URL needs AUDIT_WEBHOOK_SECRET, the key of its signatures (openssl rand -hex 32)"))
	default:
		if err := auditsink.CheckWebhookURL(c.AuditWebhookURL); err != nil {
			errs = append(errs, fmt.Errorf("AUDIT_WEBHOOK_URL: %w", err))
		}
		if err := auditsink.CheckWebhookSecret(c.AuditWebhookSecret); err != nil {
			errs = append(errs, fmt.Errorf("AUDIT_WEBHOOK_SECRET: %w", err))
		}
	}
	if c.AuditMaxBacklog < 1 {
		errs = append(errs, fmt.Errorf("AUDIT_MAX_BACKLOG=%d: must be at least 1", c.AuditMaxBacklog))
	}
	return errs
}

// passEnv is CLAUDE_ENV: the names the operator lets through to the CLI
// beyond the allowlist. Naming one of slackgate's own settings is refused
// rather than silently dropped, so nobody believes it reaches Claude.
func (c Config) passEnv() ([]string, error) {
	var names []string
	for name := range strings.SplitSeq(c.ClaudeEnv, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			continue
		case !relay.ValidEnvName(name):
			return nil, fmt.Errorf("CLAUDE_ENV: %q is not a variable name; want comma-separated names like GITHUB_TOKEN,NPM_CONFIG_REGISTRY", name)
		case slackgateSetting(name):
			return nil, fmt.Errorf("CLAUDE_ENV: %s is one of slackgate's own settings, which never reach Claude; remove it from CLAUDE_ENV", name)
		case name == "CLAUDECODE":
			return nil, errors.New("CLAUDE_ENV: CLAUDECODE would make the CLI think it runs inside another Claude Code session; remove it")
		}
		names = append(names, name)
	}
	return names, nil
}

// settingNames are the variables Config reads, from its tags, so a new
// setting is kept from Claude without anyone remembering to.
var settingNames = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		if name := t.Field(i).Tag.Get("env"); name != "" {
			m[name] = true
		}
	}
	return m
}()

// slackgateSetting reports whether name is slackgate's own: a setting it
// reads, or anything of Slack's or Redis's that may sit beside them.
func slackgateSetting(name string) bool {
	return settingNames[name] || strings.HasPrefix(name, "SLACK_") || strings.HasPrefix(name, "REDIS_")
}

// nameVariables rewrites env's parse errors, which name Go struct fields, to
// name the environment variable a person has to fix.
func nameVariables(err error, vars map[string]string) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err
	}
	t := reflect.TypeFor[Config]()
	out := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			if f, ok := t.FieldByName(pe.Name); ok {
				out = append(out, fmt.Errorf("%s=%q: %w", f.Tag.Get("env"), vars[f.Tag.Get("env")], pe.Err))
				continue
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// validateSlack checks what the Slack side needs; only bot-running commands call it.
func (c Config) validateSlack() error {
	if c.SlackBotToken == "" {
		return errors.New("config: SLACK_BOT_TOKEN is required: create the Slack app from deploy/slack/manifest.yaml, install it, and export its Bot User OAuth Token (xoxb-…)")
	}
	if c.SlackAppToken == "" && c.SlackSigningSecret == "" {
		return errors.New("config: set SLACK_APP_TOKEN (xapp-…, Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode, with deploy/slack/manifest-http.yaml)")
	}
	if strings.TrimSpace(c.Approvers) == "" {
		return errors.New("config: " + bot.ApproversRequired)
	}
	if c.AllowDMs && !filepath.IsAbs(c.DMWorkDir) {
		return fmt.Errorf("config: ALLOW_DMS=true needs DM_WORKDIR, an absolute path for DM sessions to run in (got %q); they never run in CLAUDE_WORKDIR", c.DMWorkDir)
	}
	return nil
}

// newLogger builds the process logger from LOG_LEVEL and LOG_FORMAT.
func newLogger(c Config, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(strings.ToLower(c.LogLevel))
	if err != nil {
		level = zerolog.InfoLevel
	}
	if c.LogFormat == "console" {
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// splitArgs splits CLAUDE_ARGS like a shell would for simple cases: words
// separated by blanks, with single or double quotes grouping words and a
// backslash escaping the next character outside single quotes.
func splitArgs(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			if i+1 == len(rs) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteRune(rs[i])
			inArg = true
		case quote == '"':
			if r == '"' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inArg = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// HookConfig is what `slackgate hook` and `slackgate mcp` read: where the
// approval API is, the token they present, and how long they wait for a
// person before the hook passes the prompt back to the terminal (the MCP
// tool: denies).
type HookConfig struct {
	URL string `env:"SLACKGATE_URL"`
	// Token is read from TokenFile (default tokenFileDefault under
	// XDG_CONFIG_HOME or HOME): Claude Code passes its environment on to
	// every command Claude runs, so a token there is every command's.
	// SLACKGATE_TOKEN is still taken, with a warning (Warnings).
	Token      string        `env:"SLACKGATE_TOKEN"`
	TokenFile  string        `env:"SLACKGATE_TOKEN_FILE"`
	Home       string        `env:"HOME"`
	ConfigHome string        `env:"XDG_CONFIG_HOME"`
	Wait       time.Duration `env:"SLACKGATE_WAIT" envDefault:"10m"`
	// User names who runs the session on its card's thread.
	User string `env:"USER"`
	// ClaudeSession is the session id Claude Code gives the processes it
	// starts, when it does; `slackgate mcp` is not told it otherwise.
	ClaudeSession string `env:"CLAUDE_CODE_SESSION_ID"`
	// Warnings say what works but should change; the caller prints them.
	Warnings []string `env:"-"`
	// waitSet: SLACKGATE_WAIT was set, not defaulted.
	waitSet bool
}

// loadHookConfig parses the hook's environment given as KEY=VALUE pairs
// and reads its token.
func loadHookConfig(environ []string) (HookConfig, error) {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	cfg, err := env.ParseAsWithOptions[HookConfig](env.Options{Environment: vars})
	if err != nil {
		return HookConfig{}, fmt.Errorf("config: %w", nameVariables(err, vars))
	}
	cfg.waitSet = vars["SLACKGATE_WAIT"] != ""
	switch {
	case cfg.URL == "":
		return cfg, errors.New("config: SLACKGATE_URL is required (the bot's approval API, e.g. https://slackgate.example.com)")
	case checkAPIURL(cfg.URL) != nil:
		return cfg, fmt.Errorf("config: SLACKGATE_URL=%s: %w", cfg.URL, checkAPIURL(cfg.URL))
	case cfg.Wait <= 0 || cfg.Wait > maxHookWait:
		return cfg, fmt.Errorf("config: SLACKGATE_WAIT=%s: must be positive and at most %s", cfg.Wait, maxHookWait)
	case cfg.Token != "" && cfg.TokenFile != "":
		return cfg, errors.New("config: both SLACKGATE_TOKEN and SLACKGATE_TOKEN_FILE are set; keep the file and unset SLACKGATE_TOKEN")
	case cfg.Token != "":
		cfg.Warnings = append(cfg.Warnings, "SLACKGATE_TOKEN is in Claude Code's environment, so every command Claude runs can read it: "+
			"put the token in "+tokenFileDefault+" (chmod 600), or a file named by SLACKGATE_TOKEN_FILE, and unset SLACKGATE_TOKEN")
		return cfg, nil
	}
	path := cfg.TokenFile
	if path == "" {
		if path, err = defaultTokenFile(cfg); err != nil {
			return cfg, err
		}
	}
	cfg.Token, err = readTokenFile(path)
	return cfg, err
}
