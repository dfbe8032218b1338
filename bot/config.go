package bot

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/slackgate/slackgate/bot/approvalapi"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

// DefaultHTTPAddr is where HTTP mode listens when Config.HTTPAddr is empty.
const DefaultHTTPAddr = ":3000"

// Config is everything the bot needs; cmd/slackgate fills it from the
// environment.
type Config struct {
	// BotToken (xoxb-…) is required: every Web API call uses it.
	BotToken string
	// AppToken (xapp-…) selects Socket Mode.
	AppToken string
	// SigningSecret selects HTTP mode when AppToken is empty.
	SigningSecret string
	// APIURL points the Web API client elsewhere (a fake in tests, GovSlack);
	// empty means Slack's. A trailing slash is added when missing.
	APIURL string
	// HTTPAddr is the HTTP mode listen address (DefaultHTTPAddr when empty).
	HTTPAddr string
	// Listener, when set, is used by HTTP mode (or by Socket Mode's
	// approval API) instead of listening on HTTPAddr (tests pass one on
	// 127.0.0.1:0). Run closes it.
	Listener net.Listener
	// APITokens turn on the approval API (package approvalapi) on
	// HTTPAddr, in either transport; nil: off. APILimits bound each token
	// (zero fields take the defaults).
	APITokens []approvalapi.Token
	APILimits approvalapi.Limits

	// Approvers may decide requests: listed users and user groups, or
	// anyone who can see the card when Anyone is set. Required: the zero
	// value is refused (see ApproversRequired).
	Approvers People
	// Starters may start sessions; the zero value means the approvers
	// (Anyone must be said). Thread replies are for a session's starter
	// and the approvers only.
	Starters People
	// AllowedTeams are the other workspaces (T…) and organizations (E…)
	// whose people may act through the bot; empty: only the workspace the
	// bot token belongs to (see teams.go).
	AllowedTeams []string
	// AllowedChannels are the channel ids where sessions may start (by
	// mention or /claude); empty: every channel the app is in.
	AllowedChannels []string
	// AllowDMs lets direct messages to the bot start and continue sessions,
	// which then run in DMWorkDir (required with it, never WorkDir).
	AllowDMs  bool
	DMWorkDir string
	// MaxSessionsPerUser bounds the sessions one person started that are
	// queued or running; MaxQueuedInputs bounds the messages waiting in one
	// session's inbox; MaxPromptBytes bounds one message. 0: no bound.
	MaxSessionsPerUser int
	MaxQueuedInputs    int
	MaxPromptBytes     int
	// WorkDir is the working directory of sessions (CLAUDE_WORKDIR).
	WorkDir string
	// ChannelWorkDirs overrides WorkDir per channel id.
	ChannelWorkDirs map[string]string
	// PermissionMode and Model are recorded on new sessions for the worker.
	PermissionMode string
	Model          string

	// Policy is the team policy (POLICY_FILE) the bot starts with; nil:
	// none, every request asks Approvers once. SetPolicy replaces it.
	Policy *policy.Policy

	// ConsumerName names this bot in the store's "bot" consumer group; it
	// must be stable across restarts of one replica and unique among
	// replicas (default: "bot-" + host name).
	ConsumerName string

	// Budgets are Slack's rate limits as the outbox spends them; zero
	// fields take Slack's documented figures (see outbox.Budgets).
	Budgets outbox.Budgets
	// GroupCacheTTL is how long user group members are trusted (0: 5 minutes).
	GroupCacheTTL time.Duration
	// Clock replaces the wall clock (tests). Nil: the real one.
	Clock store.Clock
	// Metrics receives the bot's measurements (Slack calls, outbox waits).
	// Nil: none are taken.
	Metrics Metrics

	// SigningKey signs every decision a person makes (required): workers
	// act only on decisions that verify with its public half, so a
	// decision written into the store by anyone else is refused.
	SigningKey ed25519.PrivateKey
	// SealAudit: sign checkpoints of the store's audit chain with
	// SigningKey (auditseal.go). Off when the key was made in memory:
	// nobody could check a checkpoint it signed. AuditSealEvery is how
	// often the chain's head is looked at (0: auditsink.DefaultSealEvery).
	SealAudit      bool
	AuditSealEvery time.Duration
	// AuditAnchorFile keeps what the sealer knows of the chain across
	// restarts (auditsink.Anchor; "": memory only).
	AuditAnchorFile string
	// AuditChannel is where each settled request and refused record gets
	// a line (auditsink.Channel); "": none. AuditEvery is how often the
	// audit log is looked at for new entries (0: auditsink.DefaultEvery).
	AuditChannel string
	AuditEvery   time.Duration

	// Reach is where a request that needs someone other than its starter
	// is announced, and when it is reminded and escalated, unless a
	// policy rule's ask says otherwise (reach.go).
	Reach ReachDefaults

	// ReconcileInterval is how often pending requests without a card are
	// looked for (0: DefaultReconcileInterval); CardClaimTTL how long a
	// claim to post a card stands (0: DefaultCardClaimTTL). See reconcile.go, cards.claim.
	ReconcileInterval time.Duration
	CardClaimTTL      time.Duration
}

// ErrConfig marks configuration mistakes, so cmd can tell them from runtime
// failures.
var ErrConfig = errors.New("bot: invalid configuration")

// socketMode reports which transport the configuration selects.
func (c Config) socketMode() bool { return c.AppToken != "" }

func (c Config) validate() error {
	switch {
	case c.BotToken == "":
		return fmt.Errorf("%w: SLACK_BOT_TOKEN is required", ErrConfig)
	case !strings.HasPrefix(c.BotToken, "xoxb-"):
		return fmt.Errorf("%w: SLACK_BOT_TOKEN must be a bot token (xoxb-…)", ErrConfig)
	case c.AppToken == "" && c.SigningSecret == "":
		return fmt.Errorf("%w: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode)", ErrConfig)
	case c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-"):
		return fmt.Errorf("%w: SLACK_APP_TOKEN must be an app-level token (xapp-…)", ErrConfig)
	}
	return c.validateAccess()
}

// ApproversRequired is what a configuration without approvers is told.
const ApproversRequired = "APPROVERS is required: list the Slack user ids (U…) and user group ids (S…) who may approve, or set APPROVERS=* to let anyone who can see a card decide"

func (c Config) validateAccess() error {
	if c.Approvers.IsZero() {
		return fmt.Errorf("%w: %s", ErrConfig, ApproversRequired)
	}
	for _, p := range []People{c.Approvers, c.Starters} {
		for _, id := range p.IDs {
			if !isApproverID(id) {
				return fmt.Errorf("%w: %q is not a Slack user (U…, W…) or user group (S…) id", ErrConfig, id)
			}
		}
	}
	if len(c.SigningKey) != ed25519.PrivateKeySize {
		return fmt.Errorf("%w: a decision signing key is required (DECISION_SIGNING_KEY; `slackgate keygen` makes one)", ErrConfig)
	}
	for _, id := range c.AllowedTeams {
		if !isTeamID(id) {
			return fmt.Errorf("%w: ALLOWED_TEAMS entry %q is not a Slack team (T…) or enterprise (E…) id", ErrConfig, id)
		}
	}
	for _, ch := range c.AllowedChannels {
		if !isChannelID(ch) {
			return fmt.Errorf("%w: ALLOWED_CHANNELS entry %q is not a Slack channel id (C…, G…)", ErrConfig, ch)
		}
	}
	if c.AuditChannel != "" && !isChannelID(c.AuditChannel) {
		return fmt.Errorf("%w: AUDIT_CHANNEL %q is not a Slack channel id (C…, G…)", ErrConfig, c.AuditChannel)
	}
	if err := c.Reach.validate(); err != nil {
		return err
	}
	if c.AllowDMs && !filepath.IsAbs(c.DMWorkDir) {
		return fmt.Errorf("%w: DM_WORKDIR must be an absolute path when ALLOW_DMS=true: DM sessions never run in CLAUDE_WORKDIR", ErrConfig)
	}
	if c.MaxSessionsPerUser < 0 || c.MaxQueuedInputs < 0 || c.MaxPromptBytes < 0 {
		return fmt.Errorf("%w: a limit is negative", ErrConfig)
	}
	if name := ownerlessToken(c.Policy, c.APITokens); name != "" {
		return fmt.Errorf("%w: API_TOKENS entry %q names no owner, and a policy rule says not_self: write whom the token stands for after its channel (C0CI@U0LEE)", ErrConfig, name)
	}
	return nil
}

// ownerlessToken is the first token without an owner when a rule of pol
// says not_self ("" when none): not_self must know whom a token stands for.
func ownerlessToken(pol *policy.Policy, tokens []approvalapi.Token) string {
	if pol == nil || !slices.ContainsFunc(pol.Rules(), func(r *policy.Rule) bool { return r.Ask.NotSelf }) {
		return ""
	}
	for _, t := range tokens {
		if t.Owner == "" {
			return t.Name
		}
	}
	return ""
}

// workDir is the working directory for a session started in channel; a
// DM's is DMWorkDir, so a DM never inherits the default.
func (c Config) workDir(channel string) string {
	if isDM(channel) {
		return c.DMWorkDir
	}
	if d, ok := c.ChannelWorkDirs[channel]; ok {
		return d
	}
	return c.WorkDir
}

// ParseChannelWorkDirs parses CHANNEL_WORKDIRS: "C123=/srv/a,C456=/srv/b".
// Paths must be absolute; empty input gives an empty map.
func ParseChannelWorkDirs(s string) (map[string]string, error) {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ch, dir, ok := strings.Cut(item, "=")
		ch, dir = strings.TrimSpace(ch), strings.TrimSpace(dir)
		if !ok || ch == "" || dir == "" {
			return nil, fmt.Errorf("%w: CHANNEL_WORKDIRS entry %q is not CHANNEL=/path", ErrConfig, item)
		}
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("%w: CHANNEL_WORKDIRS path %q for %s is not absolute", ErrConfig, dir, ch)
		}
		if _, dup := out[ch]; dup {
			return nil, fmt.Errorf("%w: CHANNEL_WORKDIRS names %s twice", ErrConfig, ch)
		}
		out[ch] = filepath.Clean(dir)
	}
	return out, nil
}

// People says who may do something: anyone, or the listed Slack users
// (U…, W…) and members of the listed user groups (S…). The zero value lets
// nobody through; Anyone must be said.
type People struct {
	Anyone bool
	IDs    []string
}

// IsZero reports whether p names nobody.
func (p People) IsZero() bool { return !p.Anyone && len(p.IDs) == 0 }

// ParsePeople parses APPROVERS or STARTERS: "*" for anyone, else Slack ids
// separated by commas or blanks. Blank input gives the zero People.
func ParsePeople(s string) (People, error) {
	var p People
	seen := map[string]bool{}
	for _, id := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if id == "*" {
			p.Anyone = true
			continue
		}
		if !isApproverID(id) {
			return People{}, fmt.Errorf("%w: %q is not a Slack user (U…, W…) or user group (S…) id, or *", ErrConfig, id)
		}
		if !seen[id] {
			seen[id] = true
			p.IDs = append(p.IDs, id)
		}
	}
	if p.Anyone && len(p.IDs) > 0 {
		return People{}, fmt.Errorf("%w: * (anyone) and a list of ids together: choose one", ErrConfig)
	}
	return p, nil
}

// ParseChannels parses ALLOWED_CHANNELS: channel ids separated by commas
// or blanks; blank input or "*" gives nil (every channel).
func ParseChannels(s string) ([]string, error) {
	var out []string
	for _, id := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if id == "*" {
			return nil, nil
		}
		if !isChannelID(id) {
			return nil, fmt.Errorf("%w: %q is not a Slack channel id (C…, G…)", ErrConfig, id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// ParseTeams parses ALLOWED_TEAMS: team (T…) and enterprise (E…) ids
// separated by commas or blanks; blank input gives nil (the bot's own
// workspace only).
func ParseTeams(s string) ([]string, error) {
	var out []string
	for _, id := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if !isTeamID(id) {
			return nil, fmt.Errorf("%w: %q is not a Slack team (T…) or enterprise (E…) id", ErrConfig, id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

func isTeamID(id string) bool {
	return len(id) > 1 && (id[0] == 'T' || id[0] == 'E') && upperAlnum(id[1:])
}

// isDM reports whether a channel id is a direct message with the bot.
func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }

func isChannelID(id string) bool {
	return len(id) > 1 && (id[0] == 'C' || id[0] == 'G') && upperAlnum(id[1:])
}

func upperAlnum(s string) bool {
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func isApproverID(id string) bool {
	return len(id) > 1 && (id[0] == 'U' || id[0] == 'W' || id[0] == 'S') && upperAlnum(id[1:])
}
