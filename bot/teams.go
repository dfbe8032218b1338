package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// Slack Connect and shared channels bring people of other workspaces into
// a channel with the bot, and a Socket Mode connection gets the events of
// every workspace that installed the app. The team gate comes before every
// other check (an id in APPROVERS admits nobody of another team by itself):
// a person acts only if they belong to the workspace of the bot token
// (auth.test's team_id), or ALLOWED_TEAMS lists their workspace (T…) or
// organization (E…).
//
// The person's team is the payload's where Slack names it (a message's
// user_team, a click's or modal's user.team_id, a command's team_id);
// users.info says where it does not, or when only their organization or
// other workspaces could admit them. On Enterprise Grid someone of the
// installation's workspace acting from a sibling workspace is admitted
// (enterprise_user.teams lists it); the organization's other people need
// its E… in ALLOWED_TEAMS.

// actor is the person behind a payload, and their team as the payload
// names it ("" when it does not).
type actor struct {
	user, team string
}

// teamGate decides whether a person belongs to the bot's team.
type teamGate struct {
	allowed     map[string]bool // ALLOWED_TEAMS: team and enterprise ids
	enterprises bool            // ALLOWED_TEAMS names an organization
	lookup      func(ctx context.Context, user string) (*slack.User, error)
	clock       store.Clock
	ttl         time.Duration

	// log, tell and views say a refusal: in the log, as an ephemeral,
	// in the App Home (wireParts sets them).
	log   zerolog.Logger
	tell  *ephemerals
	views viewPublisher

	mu         sync.Mutex
	home       string // the installation's team (auth.test), set by Run
	enterprise string // its organization, "" outside Enterprise Grid
	cache      map[string]membership
}

// membership is what users.info says of a person's teams.
type membership struct {
	team, enterprise string
	teams            []string
	at               time.Time
}

// maxMemberships bounds the users.info cache: past it, it starts over.
const maxMemberships = 10000

func newTeamGate(allowed []string, lookup func(ctx context.Context, user string) (*slack.User, error), clock store.Clock, ttl time.Duration) *teamGate {
	g := &teamGate{allowed: map[string]bool{}, lookup: lookup, clock: clock, ttl: ttl, cache: map[string]membership{}}
	for _, id := range allowed {
		g.allowed[id] = true
		g.enterprises = g.enterprises || id[0] == 'E'
	}
	return g
}

// setHome records the installation's team and organization.
func (g *teamGate) setHome(team, enterprise string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.home, g.enterprise = team, enterprise
}

// admits reports whether a belongs to the installation's team or to a
// team or organization ALLOWED_TEAMS lists. An error means users.info
// could not say, and the person is not let through.
func (g *teamGate) admits(ctx context.Context, a actor) (bool, error) {
	g.mu.Lock()
	home, grid := g.home, g.enterprise != ""
	g.mu.Unlock()
	if home == "" {
		return false, nil // Run has not identified the installation
	}
	if a.team != "" && (a.team == home || g.allowed[a.team]) {
		return true, nil
	}
	if a.team != "" && !grid && !g.enterprises {
		return false, nil // nothing users.info says could admit them
	}
	m, err := g.membership(ctx, a.user)
	if err != nil {
		return false, err
	}
	team := a.team
	if team == "" {
		team = m.team
	}
	switch {
	case team != "" && (team == home || g.allowed[team]):
		return true, nil
	case grid && slices.Contains(m.teams, home):
		return true, nil
	}
	return m.enterprise != "" && g.allowed[m.enterprise], nil
}

// membership is users.info's word on user's teams, cached for ttl.
func (g *teamGate) membership(ctx context.Context, user string) (membership, error) {
	now := g.clock.Now()
	g.mu.Lock()
	m, ok := g.cache[user]
	g.mu.Unlock()
	if ok && now.Sub(m.at) < g.ttl {
		return m, nil
	}
	u, err := g.lookup(ctx, user)
	if err != nil {
		return membership{}, fmt.Errorf("bot: users.info %s: %w", user, err)
	}
	m = membership{team: u.TeamID, enterprise: u.Enterprise.EnterpriseID, teams: u.Enterprise.Teams, at: now}
	g.mu.Lock()
	if len(g.cache) >= maxMemberships {
		g.cache = map[string]membership{}
	}
	g.cache[user] = m
	g.mu.Unlock()
	return m, nil
}

// otherTeam is what someone of another team is told.
const otherTeam = "Claude here is only for people of this workspace, and your account belongs to another workspace or organization (ALLOWED_TEAMS). Nothing was changed."

// viewPublisher publishes a person's App Home (a *slack.Client).
type viewPublisher interface {
	PublishViewContext(ctx context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error)
}

// check is the check in front of everything a person does through
// Slack: a person of another team is told why (tell), logged, and nothing
// changes.
func (g *teamGate) check(ctx context.Context, log zerolog.Logger, a actor, tell func(string)) bool {
	ok, err := g.admits(ctx, a)
	switch {
	case ok:
		return true
	case err != nil:
		log.Error().Err(err).Str("user", a.user).Msg("check the person's team")
		tell("Sorry, I could not check which workspace your account belongs to (Slack did not say). Nothing was changed; please try again.")
	default:
		log.Warn().Str("user", a.user).Str("user_team", a.team).Msg("refused: the person belongs to another team")
		tell(otherTeam)
	}
	return false
}

// inThread is check for a message in thread: the refusal is an
// ephemeral there.
func (g *teamGate) inThread(ctx context.Context, thread store.MessageRef, a actor) bool {
	log := g.log.With().Str("channel", thread.Channel).Logger()
	return g.check(ctx, log, a, func(m string) { g.tell.tell(ctx, thread, a.user, m) })
}

// click is check for a click: the refusal is an ephemeral
// next to the message clicked, or the App Home's for its Forget button.
func (g *teamGate) click(ctx context.Context, cb *slack.InteractionCallback, a blocks.Action) bool {
	user, channel := cb.User.ID, cmp.Or(cb.Container.ChannelID, cb.Channel.ID)
	log := g.log.With().Str("channel", channel).Str("action", string(a.Kind)).Logger()
	tell := func(m string) { g.tell.post(ctx, channel, cb.Container.ThreadTs, user, m) }
	if a.Kind == blocks.ActionForget {
		tell = func(m string) { g.closedHome(ctx, user, m) }
	}
	return g.check(ctx, log, actor{user: user, team: cb.User.TeamID}, tell)
}

// closedHome shows user an App Home that says only why they may not see
// it.
func (g *teamGate) closedHome(ctx context.Context, user, why string) {
	req := slack.PublishViewContextRequest{UserID: user, View: blocks.HomeClosed(why)}
	if _, err := g.views.PublishViewContext(ctx, req); err != nil {
		g.log.Error().Err(err).Str("user", user).Msg("views.publish")
	}
}
