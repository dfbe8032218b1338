package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/store"
)

// DefaultGroupCacheTTL is how long user group members are trusted before
// usergroups.users.list is asked again.
const DefaultGroupCacheTTL = 5 * time.Minute

// approvers decides who may do something guarded: settle a request (the
// users and the members of the user groups in APPROVERS, or anyone with
// APPROVERS=*), or start a session (STARTERS).
type approvers struct {
	anyone bool
	users  map[string]bool
	groups []string
	list   func(ctx context.Context, group string) ([]string, error)
	clock  store.Clock
	ttl    time.Duration

	mu    sync.Mutex
	cache map[string]groupMembers
}

type groupMembers struct {
	members map[string]bool
	at      time.Time
}

func newApprovers(p People, list func(ctx context.Context, group string) ([]string, error), clock store.Clock, ttl time.Duration) *approvers {
	a := &approvers{anyone: p.Anyone, users: map[string]bool{}, list: list, clock: clock, ttl: ttl, cache: map[string]groupMembers{}}
	for _, id := range p.IDs {
		if strings.HasPrefix(id, "S") {
			a.groups = append(a.groups, id)
		} else {
			a.users[id] = true
		}
	}
	return a
}

// allowed reports whether user may decide. An error means a group could not
// be resolved and nobody outside the explicit users is let through.
func (a *approvers) allowed(ctx context.Context, user string) (bool, error) {
	if a.anyone || a.users[user] {
		return true, nil
	}
	return a.inGroups(ctx, a.groups, user)
}

// inGroups reports whether user is a member of one of groups; an error
// means one could not be listed and user was not found in the others.
func (a *approvers) inGroups(ctx context.Context, groups []string, user string) (bool, error) {
	var firstErr error
	for _, g := range groups {
		m, err := a.members(ctx, g)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		if m[user] {
			return true, nil
		}
	}
	return false, firstErr
}

func (a *approvers) members(ctx context.Context, group string) (map[string]bool, error) {
	now := a.clock.Now()
	a.mu.Lock()
	c, ok := a.cache[group]
	a.mu.Unlock()
	if ok && now.Sub(c.at) < a.ttl {
		return c.members, nil
	}
	ids, err := a.list(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("bot: usergroups.users.list %s: %w", group, err)
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	a.mu.Lock()
	a.cache[group] = groupMembers{members: m, at: now}
	a.mu.Unlock()
	return m, nil
}

// permits reports whether user may act: an approver, or starter when one
// is given (whoever started a session may stop it). An error means a group
// could not be resolved; see allowed.
func (a *approvers) permits(ctx context.Context, user, starter string) (bool, error) {
	if starter != "" && user == starter {
		return true, nil
	}
	return a.allowed(ctx, user)
}

// who names the people permits lets through with the same starter.
func (a *approvers) who(starter string) string {
	if starter == "" {
		return a.describe()
	}
	return "<@" + starter + "> (who started this session) or " + a.describe()
}

// describe names the approvers for the ephemeral a non-approver gets.
func (a *approvers) describe() string {
	if a.anyone {
		return "anyone"
	}
	var parts []string
	for u := range a.users {
		parts = append(parts, "<@"+u+">")
	}
	slices.Sort(parts)
	for _, g := range a.groups {
		parts = append(parts, "<!subteam^"+g+">")
	}
	return strings.Join(parts, ", ")
}

// guarded is something only some people may do, with the words a person
// who may not do it hears.
type guarded struct {
	starter string // the session's starter, who may act as well as the approvers; "" for approvers only
	starts  bool   // checked against STARTERS instead of APPROVERS
	verb    string // "stop Claude": "could not check whether you may <verb>"
	can     string // "stop Claude": "Only … can <can> here"
	refused string // the log line when someone who may not act tries
}

// decideRequest guards deciding a request card: approvers only.
var decideRequest = guarded{verb: "decide this", can: "decide Claude's requests", refused: "click by a non-approver ignored"}

// stopSession guards stopping s: its starter and the approvers.
func stopSession(s store.Session) guarded {
	return guarded{starter: s.StartedBy, verb: "stop Claude", can: "stop Claude", refused: "stop by someone who may not stop it ignored"}
}

// replyTo guards sending s a message from its thread: its starter and the
// approvers, so nobody else uses the session (and its "Always allow"
// grants) as their own.
func replyTo(s store.Session) guarded {
	return guarded{starter: s.StartedBy, verb: "talk to Claude here", can: "send Claude messages in this thread", refused: "reply by someone who is neither the starter nor an approver ignored"}
}

// startSession guards starting a session: STARTERS.
var startSession = guarded{starts: true, verb: "start a Claude session", can: "start Claude sessions", refused: "start by someone not in STARTERS refused"}

// may is the one check in front of every decision, stop, reply and start.
// A person who may not act is told who may, and nothing changes.
func (b *Bot) may(ctx context.Context, log zerolog.Logger, user string, g guarded, tell func(string)) bool {
	set := b.approvers
	if g.starts {
		set = b.starters
	}
	ok, err := set.permits(ctx, user, g.starter)
	if ok {
		return true
	}
	if err != nil {
		log.Error().Err(err).Msg("check approvers")
		tell("Sorry, I could not check whether you may " + g.verb + " (Slack did not list the user groups). Please try again.")
		return false
	}
	log.Info().Msg(g.refused)
	tell("Only " + set.who(g.starter) + " can " + g.can + " here. Nothing was changed.")
	return false
}
