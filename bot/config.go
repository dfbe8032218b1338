package bot

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"
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
	// Listener, when set, is used by HTTP mode instead of listening on
	// HTTPAddr (tests pass one on 127.0.0.1:0). Run closes it.
	Listener net.Listener

	// Approvers are the Slack user ids (U…, W…) and user group ids (S…)
	// allowed to decide requests. Empty: anyone who can see the card.
	// Anyone in a channel may start a session; approvers gate decisions only.
	Approvers []string
	// WorkDir is the working directory of sessions (CLAUDE_WORKDIR).
	WorkDir string
	// ChannelWorkDirs overrides WorkDir per channel id.
	ChannelWorkDirs map[string]string
	// PermissionMode and Model are recorded on new sessions for the worker.
	PermissionMode string
	Model          string

	// ConsumerName names this bot in the store's "bot" consumer group; it
	// must be stable across restarts of one replica and unique among
	// replicas (default: "bot-" + host name).
	ConsumerName string

	// Budgets are Slack's rate limits as the outbox spends them; zero
	// fields take Slack's documented figures (see Budgets).
	Budgets Budgets
	// GroupCacheTTL is how long user group members are trusted (0: 5 minutes).
	GroupCacheTTL time.Duration
	// Clock replaces the wall clock (tests). Nil: the real one.
	Clock Clock
	// ReconcileInterval is how often pending requests without a card are
	// looked for (0: DefaultReconcileInterval); CardClaimTTL how long a
	// claim to post a card stands (0: DefaultCardClaimTTL). See reconcile.go.
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
	for _, a := range c.Approvers {
		if !isApproverID(a) {
			return fmt.Errorf("%w: approver %q is not a Slack user (U…, W…) or user group (S…) id", ErrConfig, a)
		}
	}
	return nil
}

// workDir is the working directory for a session started in channel.
func (c Config) workDir(channel string) string {
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

// ParseApprovers parses APPROVERS: Slack ids separated by commas or spaces.
func ParseApprovers(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, id := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if !isApproverID(id) {
			return nil, fmt.Errorf("%w: approver %q is not a Slack user (U…, W…) or user group (S…) id", ErrConfig, id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

func isApproverID(id string) bool {
	if len(id) < 2 {
		return false
	}
	switch id[0] {
	case 'U', 'W', 'S':
	default:
		return false
	}
	for _, r := range id[1:] {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
