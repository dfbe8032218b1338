package relay

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slackgate/slackgate/store"
)

// Defaults for Config.
const (
	DefaultMaxSessions = 4
	DefaultIdleTimeout = 10 * time.Minute
	// DefaultWorkerTimeout is how long a worker may go without a heartbeat
	// before another takes its sessions over.
	DefaultWorkerTimeout = 30 * time.Second
	// MaxResultText caps the tool result text published in EventToolResult.
	MaxResultText = 500
	// cleanupTimeout bounds store calls made while shutting down or ending
	// requests, when the caller's context may already be cancelled.
	cleanupTimeout = 10 * time.Second
	// shutdownInterrupt bounds the wait for the CLI to abort a turn when
	// the worker stops.
	shutdownInterrupt = 3 * time.Second
)

// SettingSources are the settings sources Claude Code can load, for
// Config.SettingSources: the config directory's settings.json (user), the
// repository's .claude/settings.json (project) and its
// .claude/settings.local.json (local). Each carries permission rules, hooks
// and more, and comes with that place's CLAUDE.md, skills, commands and
// agents.
var SettingSources = []string{"user", "project", "local"}

// Config is the worker's configuration. cmd/slackgate fills it.
type Config struct {
	ClaudeBin      string        // "" = "claude" on PATH
	PermissionMode string        // default for sessions that do not set one ("" = "default")
	Model          string        // default for sessions that do not set one ("" = the CLI's)
	ExtraArgs      []string      // appended to every claude command line
	RequestTimeout time.Duration // a request undecided this long expires (0 = never)
	MaxSessions    int           // processes at once; idle ones give way to new sessions (0 = DefaultMaxSessions)
	IdleTimeout    time.Duration // a process idle this long after a result stops, if it did not give way first (0 = DefaultIdleTimeout)
	WorkerID       string        // owner name in the store; a restart under the same name recovers ("" = hostname)
	WorkerTimeout  time.Duration // a worker silent this long is lost: others end its requests and release its sessions (0 = DefaultWorkerTimeout)
	Env            []string      // claude's environment is drawn from it by ClaudeEnv (nil = os.Environ())
	Clock          store.Clock   // nil = store.WallClock
	StopGrace      time.Duration // see ProcessOptions
	KillGrace      time.Duration
	// VerifyKey is the public half of the bots' decision signing key
	// (required): the worker acts on a person's decision only when its
	// signature verifies with it, so write access to the store is not
	// approval power.
	VerifyKey ed25519.PublicKey
	// AllowedDirs are the working directories sessions may run in
	// (required): a session asking for any other is refused, even when
	// signed. Compared after filepath.Clean.
	AllowedDirs []string

	PassEnv []string               // more names ClaudeEnv lets through (CLAUDE_ENV)
	DenyEnv func(name string) bool // names that never pass, whatever list they are on; nil = none
	User    *RunAs                 // run claude as this OS user (nil = the worker's own)

	// MaxTranscriptBytes bounds the session transcript (the CLI's file,
	// uncompressed) saved to the store so another worker can resume the
	// session (0 = DefaultMaxTranscriptBytes, negative = never saved).
	MaxTranscriptBytes int64

	// What the CLI reads (see ProcessOptions.Args): the setting sources
	// the operator opted into (of SettingSources; nil = none), and the
	// operator's settings and MCP config files ("" = none).
	SettingSources []string
	SettingsFile   string
	MCPConfigFile  string

	// Resolve returns the real path (symlinks resolved on this machine)
	// of each path a tool's input names and of cwd and home, keyed as
	// written: the team policy matches both names and never allows a
	// path it was not given the real one of. cmd/slackgate passes the
	// policy's resolver; nil: nothing is resolved.
	Resolve func(tool string, input json.RawMessage, cwd, home string) map[string]string

	claudeEnv   []string // Env through the allowlist, computed once by normalize
	allowedDirs []string // AllowedDirs, cleaned by normalize
}

func (c *Config) normalize() error {
	if len(c.VerifyKey) != ed25519.PublicKeySize {
		return fmt.Errorf("relay: VerifyKey must be an Ed25519 public key (%d bytes), got %d bytes: %w",
			ed25519.PublicKeySize, len(c.VerifyKey), store.ErrInvalid)
	}
	if len(c.AllowedDirs) == 0 || slices.Contains(c.AllowedDirs, "") {
		return fmt.Errorf("relay: AllowedDirs must list the working directories sessions may run in, none empty: %w", store.ErrInvalid)
	}
	c.allowedDirs = make([]string, len(c.AllowedDirs))
	for i, d := range c.AllowedDirs {
		c.allowedDirs[i] = filepath.Clean(d)
	}
	if c.ClaudeBin == "" {
		c.ClaudeBin = "claude"
	}
	if c.PermissionMode == "" {
		c.PermissionMode = "default"
	}
	if err := ValidMode(c.PermissionMode); err != nil {
		return err
	}
	for _, src := range c.SettingSources {
		if !slices.Contains(SettingSources, src) {
			return fmt.Errorf("relay: setting source %q: want one of %s: %w", src, strings.Join(SettingSources, ", "), store.ErrInvalid)
		}
	}
	if c.MaxSessions < 0 || c.RequestTimeout < 0 || c.IdleTimeout < 0 || c.WorkerTimeout < 0 {
		return fmt.Errorf("relay: negative MaxSessions, RequestTimeout, IdleTimeout or WorkerTimeout: %w", store.ErrInvalid)
	}
	if c.WorkerTimeout == 0 {
		c.WorkerTimeout = DefaultWorkerTimeout
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("relay: worker id: %w", err)
		}
		c.WorkerID = host
	}
	if c.Clock == nil {
		c.Clock = store.WallClock{}
	}
	environ := c.Env
	if environ == nil {
		environ = os.Environ()
	}
	c.claudeEnv = ClaudeEnv(environ, c.PassEnv, c.DenyEnv)
	if c.MaxTranscriptBytes == 0 {
		c.MaxTranscriptBytes = DefaultMaxTranscriptBytes
	}
	return nil
}

// processOptions says how to run claude for sess under this configuration.
func (c *Config) processOptions(sess store.Session) ProcessOptions {
	return ProcessOptions{
		Bin: c.ClaudeBin, SessionID: sess.ID, Resume: sess.Started, WorkDir: sess.WorkDir,
		PermissionMode: orDefault(sess.PermissionMode, c.PermissionMode),
		Model:          orDefault(sess.Model, c.Model),
		SettingSources: c.SettingSources, SettingsFile: c.SettingsFile, MCPConfigFile: c.MCPConfigFile,
		ExtraArgs: c.ExtraArgs, Env: c.claudeEnv, User: c.User, StopGrace: c.StopGrace, KillGrace: c.KillGrace, Clock: c.Clock,
	}
}
