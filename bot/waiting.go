package bot

import (
	"context"
	"slices"
	"sync"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/store"
)

// "Waiting for you" is the App Home's first section: the pending requests
// the viewer may decide, across every channel and session, newest first,
// with the same Approve and Deny as a card's copies. It is built when the
// tab is published, and published again, coalesced, for the people a
// change concerns: when a card is posted or settled, reminded or
// escalated, for its deciders (the users of APPROVERS or the rule's
// approvers, the members of their user groups, and escalate_to once it
// was escalated) and for whoever opened the tab on this bot. With
// APPROVERS=* nobody is listed in advance: the tab is current whenever it
// is opened. views.publish is Tier 4 (100 a minute): homeBudget paces it.

// homeBudget is the pace of views.publish: Tier 4, with a short burst.
const (
	homePublishesPerMinute = 100.0
	homePublishBurst       = 20
)

// homeQueue holds the App Homes to publish again: a person marked twice
// before the publisher gets to them is published once.
type homeQueue struct {
	mu      sync.Mutex
	dirty   map[string]bool
	viewers map[string]bool // opened the tab on this bot
	wake    chan struct{}
}

func newHomeQueue() homeQueue {
	return homeQueue{dirty: map[string]bool{}, viewers: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// viewed records that user opened the tab.
func (q *homeQueue) viewed(user string) {
	q.mu.Lock()
	q.viewers[user] = true
	q.mu.Unlock()
}

// mark queues users' tabs, and those of everyone who opened one here.
func (q *homeQueue) mark(users []string) {
	q.mu.Lock()
	for _, u := range users {
		q.dirty[u] = true
	}
	for u := range q.viewers {
		q.dirty[u] = true
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns the queued tabs, sorted, and empties the queue.
func (q *homeQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for u := range q.dirty {
		out = append(out, u)
	}
	clear(q.dirty)
	slices.Sort(out)
	return out
}

// touchHomesOf queues the tabs of the people who may decide r.
func (b *Bot) touchHomesOf(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session) {
	p := b.planFor(r, s)
	ids := p.deciders
	if !r.Reach.Escalated.IsZero() {
		ids = append(slices.Clone(ids), p.escalateTo...)
	}
	users, _, err := b.people(ctx, ids)
	if err != nil {
		log.Warn().Err(err).Msg("home: list who may decide; their tabs are current when opened")
	}
	b.homes.mark(users)
}

// runHomes publishes the queued tabs, within homeBudget, until ctx ends.
func (b *Bot) runHomes(ctx context.Context) error {
	budget := newBucket(homePublishesPerMinute/60, homePublishBurst)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.homes.wake:
		}
		for _, u := range b.homes.take() {
			for !budget.take(b.clock.Now(), laneCard) {
				if store.Sleep(ctx, b.clock, budget.readyAt(b.clock.Now(), laneCard).Sub(b.clock.Now())) != nil {
					return nil
				}
			}
			b.publishHome(ctx, u, "")
		}
	}
}

// waitingFor is the "Waiting for you" section of user's tab. Store:
// ListPending, GetSession per session.
func (b *Bot) waitingFor(ctx context.Context, log zerolog.Logger, user string) []slack.Block {
	pending, err := b.st.ListPending(ctx, "")
	if err != nil {
		log.Warn().Err(err).Msg("home: list pending requests")
		return nil
	}
	sessions := map[string]store.Session{}
	var items []blocks.Waiting
	for _, r := range slices.Backward(pending) { // newest first
		if r.Card.IsZero() {
			continue
		}
		s, ok := sessions[r.SessionID]
		if !ok {
			if s, err = b.st.GetSession(ctx, r.SessionID); err != nil {
				continue
			}
			sessions[r.SessionID] = s
		}
		if !b.mayDecideQuietly(ctx, r, s, user) {
			continue
		}
		items = append(items, blocks.Waiting{Request: b.shown(r), Session: s, CardLink: b.cardLink(r.Card, s)})
	}
	return blocks.HomeWaiting(items)
}

// mayDecideQuietly is mayDecide without its log lines: a tab lists many
// requests the viewer may not decide, and that is no refusal.
func (b *Bot) mayDecideQuietly(ctx context.Context, r store.Request, s store.Session, user string) bool {
	ok, _ := b.mayDecide(ctx, zerolog.Nop(), r, s, user)
	return ok
}
