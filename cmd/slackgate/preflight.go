package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/relay"
)

// What run, bot and worker check before they start is one list,
// startChecks: a command refuses to start at the first of its checks that
// fails, and doctor prints every one as a line, with checks of its own
// between (Slack's answers, a store round trip), so doctor passes only
// what a start would. Adding a check is one entry and one function.

// preflight is what the checks look at and what they find for the
// command to start with.
type preflight struct {
	cmd     string // run, bot or worker
	cfg     Config
	cfgErr  error // what loading the configuration found wrong
	environ []string

	keys   decisionKeys
	botCfg bot.Config   // the Slack side's (run, bot)
	runAs  *relay.RunAs // CLAUDE_USER, checked (run, worker)

	// Doctor's own checks leave here what later ones need.
	slackAuthed bool
	slackScopes string
}

// A startCheck is one thing cmds need before they start. check says what
// it found, or why the command cannot start (withFix adds what to do, for
// doctor); errNotChecked skips it when an earlier failure decides it.
type startCheck struct {
	name   string
	cmds   []string
	check  func(ctx context.Context, p program, s *preflight) (string, error)
	doctor bool // doctor's alone: run, bot and worker do not wait for it
	// worker: checked once the store is open, so a store that cannot be
	// reached says so before the CLI is tried.
	worker bool
	// online: it needs the network or the CLI, which doctor -offline
	// leaves out (make run asks that before it installs the CLI).
	online bool
}

var (
	anyCmd    = []string{"run", "bot", "worker"}
	botCmds   = []string{"run", "bot"}
	workCmds  = []string{"run", "worker"}
	splitCmds = []string{"bot", "worker"}
)

var startChecks = []startCheck{
	{name: "configuration", cmds: anyCmd, check: configurationCheck},
	{name: "store settings", cmds: splitCmds, check: redisNeeded},
	{name: "decision keys", cmds: anyCmd, check: keysCheck},
	{name: "Slack settings", cmds: botCmds, check: slackSettingsCheck},
	{name: "team policy", cmds: botCmds, check: policyCheck},
	{name: "Slack bot token", cmds: botCmds, check: slackTokenCheck, doctor: true, online: true},
	{name: "Slack scopes", cmds: botCmds, check: scopeCheck, doctor: true, online: true},
	{name: "Slack transport", cmds: botCmds, check: transportCheck, doctor: true, online: true},
	{name: "store", cmds: anyCmd, check: storeCheck, doctor: true, online: true},
	{name: "working directories", cmds: workCmds, check: workDirCheck, worker: true},
	{name: "Claude Code CLI", cmds: workCmds, check: cliCheck, doctor: true, online: true},
	{name: "CLAUDE_USER", cmds: workCmds, check: claudeUserCheck, worker: true, online: true},
	{name: "Claude Code settings", cmds: workCmds, check: claudeReadsCheck, worker: true},
	{name: "Claude Code's managed settings", cmds: workCmds, check: managedSettingsDoctor, doctor: true},
	{name: "Claude Code credential", cmds: workCmds, check: credentialCheck, worker: true, online: true},
}

// errNotChecked: an earlier check's failure makes this one moot.
var errNotChecked = errors.New("not checked")

// fixError is a failure with what to do about it, for doctor's line.
type fixError struct {
	err error
	fix string
}

func (e *fixError) Error() string { return e.err.Error() }
func (e *fixError) Unwrap() error { return e.err }

func withFix(err error, fix string) error { return &fixError{err, fix} }

// preflight runs cmd's checks of one stage (the worker's, or those before
// the store opens) in order and returns the first failure; what they
// found is in s for the command to start with.
func (p program) preflight(ctx context.Context, s *preflight, worker bool) error {
	for _, c := range startChecks {
		if c.doctor || c.worker != worker || !slices.Contains(c.cmds, s.cmd) {
			continue
		}
		if _, err := c.check(ctx, p, s); err != nil && !errors.Is(err, errNotChecked) {
			return err
		}
	}
	return nil
}

func configurationCheck(_ context.Context, _ program, s *preflight) (string, error) {
	if s.cfgErr != nil {
		return "", s.cfgErr
	}
	return "every variable read and valid", nil
}

func redisNeeded(_ context.Context, _ program, s *preflight) (string, error) {
	if s.cfg.RedisURL == "" {
		return "", fmt.Errorf("slackgate %s runs beside other processes and needs REDIS_URL; use `slackgate run` for one machine", s.cmd)
	}
	return "REDIS_URL is set", nil
}

func keysCheck(_ context.Context, _ program, s *preflight) (string, error) {
	keys, err := resolveKeys(s.cmd, s.cfg)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	s.keys = keys
	switch {
	case keys.generated:
		return "none set: run makes a pair at start (kept in DATA_DIR on the embedded store)", nil
	case s.cmd == "worker":
		return "DECISION_VERIFY_KEY", nil
	case s.cmd == "bot":
		return "DECISION_SIGNING_KEY", nil
	}
	return "DECISION_SIGNING_KEY and its public half", nil
}

// slackSettingsCheck: the tokens are set, and who may act parses.
func slackSettingsCheck(_ context.Context, p program, s *preflight) (string, error) {
	if err := s.cfg.validateSlack(); err != nil {
		return "", err
	}
	botCfg, err := p.botConfig(s.cfg, s.keys.sign)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	s.botCfg = botCfg
	mode := "Socket Mode"
	if s.cfg.SlackAppToken == "" {
		mode = "HTTP mode on " + s.cfg.HTTPAddr
	}
	return mode + "; APPROVERS " + s.cfg.Approvers, nil
}

func policyCheck(_ context.Context, _ program, s *preflight) (string, error) {
	pol, err := startPolicy(s.cfg)
	if err != nil {
		return "", err
	}
	s.botCfg.Policy = pol
	if pol == nil {
		return "none (POLICY_FILE unset): every request a card", nil
	}
	if past := pol.ModeWidensAnywhere(s.cfg.PermissionMode); len(past) > 0 {
		names := make([]string, len(past))
		for i, r := range past {
			names[i] = fmt.Sprintf("%q (line %d)", r.Name, r.Line)
		}
		return "", withFix(fmt.Errorf("config: CLAUDE_PERMISSION_MODE=%s lets Claude Code run what it covers without asking, past the policy's rules %s",
			s.cfg.PermissionMode, strings.Join(names, ", ")),
			"start sessions in default mode (approvers may switch a session from the status line, where the policy allows it), or remove those rules")
	}
	return fmt.Sprintf("%s: %d rules", s.cfg.PolicyFile, len(pol.Rules())), nil
}

// workDirCheck: every working directory exists and holds none of
// slackgate's own files (keepOut); without CLAUDE_USER this user may
// read, write and enter it (with it, claudeUserCheck tries that user).
func workDirCheck(_ context.Context, _ program, s *preflight) (string, error) {
	dirs := workDirs(s.cfg)
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("config: the working directory %s does not exist or is no directory (%w): "+
				"create it, or point CLAUDE_WORKDIR (CHANNEL_WORKDIRS, DM_WORKDIR) at the repositories Claude works in", d, errOr(err, "a file"))
		}
		if s.cfg.ClaudeUser != "" {
			continue
		}
		if err := unix.Access(d, unix.R_OK|unix.W_OK|unix.X_OK); err != nil {
			return "", fmt.Errorf("config: the working directory %s: %w: give the user slackgate runs as read, write and search permission on it", d, err)
		}
	}
	if err := keepOut(s.cfg); err != nil {
		return "", err
	}
	return strings.Join(dirs, ", "), nil
}

func errOr(err error, what string) error {
	if err != nil {
		return err
	}
	return errors.New(what)
}

func claudeUserCheck(ctx context.Context, p program, s *preflight) (string, error) {
	if s.cfg.ClaudeUser == "" {
		return "unset: Claude runs as slackgate's own user, and can read what it can (README: Give Claude a user of its own)", nil
	}
	runAs, err := p.claudeUser(ctx, s.cfg)
	if err != nil {
		return "", err
	}
	s.runAs = runAs
	return fmt.Sprintf("%s (uid %d) runs the CLI in every working directory", runAs.Name, runAs.UID), nil
}

func claudeReadsCheck(_ context.Context, p program, s *preflight) (string, error) {
	if s.cfg.ClaudeUser != "" && s.runAs == nil {
		return "", errNotChecked
	}
	if err := checkClaudeFiles(s.cfg, s.runAs, p.environ); err != nil {
		return "", err
	}
	sources, _ := s.cfg.settingSources() // validated by loadConfig
	detail := "setting sources: " + orNone(strings.Join(sources, ","))
	for _, f := range claudeFiles(s.cfg) {
		detail += "; " + f.name + " " + f.path
	}
	return detail, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// credentialCheck asks the CLI, as a session runs it, which credential
// it would use: without one every session ends at its first message with
// "Not logged in", and nobody in Slack can log it in.
func credentialCheck(ctx context.Context, p program, s *preflight) (string, error) {
	if s.cfg.ClaudeUser != "" && s.runAs == nil {
		return "", errNotChecked
	}
	login, err := relay.CheckLogin(ctx, p.relayConfig(s.cfg, s.runAs, nil))
	if err != nil {
		return "", fmt.Errorf("config: CLAUDE_BIN=%s: %w; set CLAUDE_BIN to the claude executable (`make claude-code` installs the pinned version)", s.cfg.ClaudeBin, err)
	}
	if !login.LoggedIn {
		return "", fmt.Errorf("config: %s has no credential: %s", cliUserName(s), credentialHelp)
	}
	return login.String(), nil
}

// cliUserName names where the CLI runs, for a credential error.
func cliUserName(s *preflight) string {
	if s.runAs != nil {
		return "Claude Code, as CLAUDE_USER " + s.runAs.Name + " (HOME " + s.runAs.Home + "),"
	}
	return "Claude Code, as slackgate's own user,"
}

// credentialHelp is what Claude Code accepts, as it reaches the CLI
// through slackgate (relay.ClaudeEnv passes ANTHROPIC_* and CLAUDE_CODE_*,
// a cloud provider's variables once it is selected).
const credentialHelp = "set ANTHROPIC_API_KEY in slackgate's environment (or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`, " +
	"ANTHROPIC_AUTH_TOKEN for a gateway, or CLAUDE_CODE_USE_BEDROCK, _VERTEX or _FOUNDRY with that cloud's credentials), " +
	"an apiKeyHelper in CLAUDE_SETTINGS, or log in as that user (`claude auth login`, kept in ~/.claude/.credentials.json); " +
	"nobody can log it in from Slack"
