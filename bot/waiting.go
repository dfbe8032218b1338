package bot

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackgate/slackgate/blocks"
	"github.com/slackgate/slackgate/bot/outbox"
	"github.com/slackgate/slackgate/store"
)

// "Waiting for you" is the App Home's first section: the pending requests
// the viewer may decide, across every channel and session, escalated
// first and then by deadline, with the same Approve and Deny as a card's
// copies. It is built when the
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

// homes keeps the App Home tabs current: it queues the tabs a change
// concerns, publishes them within homeBudget, builds their "Waiting for
// you" section, and says at the top of a tab what a tap in it did. A
// person marked twice before the publisher gets to them is published
// once. Publishing the whole tab is the App Home's (publish).
type homes struct {
	st      homeStore
	clock   store.Clock
	publish func(ctx context.Context, user, notice string)
	// mayDecide is the one check of who may decide a request; view is a
	// request as its copies show it (reacher.view).
	mayDecide func(ctx context.Context, log zerolog.Logger, r store.Request, s store.Session, user string) (bool, string)
	view      func(store.Request, store.Session) (store.Request, blocks.ReachOptions)

	// showing keeps one tab published at a time, each from what is true
	// when it is built, so a tab the queue built earlier never lands over
	// the answer to a tap (their order is Slack's views.publish order).
	showing sync.Mutex

	mu      sync.Mutex
	dirty   map[string]bool
	viewers map[string]bool // opened the tab on this bot
	notes   map[string]homeNote
	wake    chan struct{}
}

// homeStore is what the tabs read in the store.
type homeStore interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	ListPending(ctx context.Context, sessionID string) ([]store.Request, error)
}

// homeNote is what a tap in a person's tab led to: shown at the top of
// their tab until it is due to go, however often the tab is published.
type homeNote struct {
	text  string
	until time.Time
}

// homeNoteFor is how long a tab keeps saying what a tap in it did.
const homeNoteFor = time.Minute

func newHomes(st homeStore, clock store.Clock) *homes {
	return &homes{st: st, clock: clock, dirty: map[string]bool{}, viewers: map[string]bool{}, notes: map[string]homeNote{}, wake: make(chan struct{}, 1)}
}

// note keeps text at the top of user's tab until until.
func (q *homes) note(user, text string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.notes[user] = homeNote{text: text, until: until}
}

// noteOf is what user's tab says at its top now ("" for nothing).
func (q *homes) noteOf(user string, now time.Time) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, ok := q.notes[user]
	if ok && now.After(n.until) {
		delete(q.notes, user)
		return ""
	}
	return n.text
}

// tell answers a tap in user's App Home in the tab itself: text at its
// top, kept there a while (homeNoteFor) as the tab is published again.
func (q *homes) tell(ctx context.Context, user, text string) {
	q.note(user, text, q.clock.Now().Add(homeNoteFor))
	q.show(ctx, user)
}

// show publishes user's tab now, one tab at a time.
func (q *homes) show(ctx context.Context, user string) {
	q.showing.Lock()
	defer q.showing.Unlock()
	q.publish(ctx, user, "")
}

// viewed records that user opened the tab.
func (q *homes) viewed(user string) {
	q.mu.Lock()
	q.viewers[user] = true
	q.mu.Unlock()
}

// mark queues users' tabs, and those of everyone who opened one here.
func (q *homes) mark(users []string) {
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
func (q *homes) take() []string {
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

// run publishes the queued tabs, within homeBudget, until ctx ends.
func (q *homes) run(ctx context.Context) error {
	budget := outbox.NewBucket(homePublishesPerMinute/60, homePublishBurst)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-q.wake:
		}
		for _, u := range q.take() {
			for !budget.Take(q.clock.Now()) {
				if store.Sleep(ctx, q.clock, budget.ReadyAt(q.clock.Now()).Sub(q.clock.Now())) != nil {
					return nil
				}
			}
			q.show(ctx, u)
		}
	}
}

// waitingFor is the "Waiting for you" section of user's tab, in the
// order blocks.HomeWaiting triages it. Store: ListPending, GetSession per
// session.
func (q *homes) waitingFor(ctx context.Context, log zerolog.Logger, user string) []slack.Block {
	pending, err := q.st.ListPending(ctx, "")
	if err != nil {
		log.Warn().Err(err).Msg("home: list pending requests")
		return nil
	}
	sessions := map[string]store.Session{}
	var items []blocks.Waiting
	for _, r := range pending {
		if r.Card.IsZero() {
			continue
		}
		s, ok := sessions[r.SessionID]
		if !ok {
			if s, err = q.st.GetSession(ctx, r.SessionID); err != nil {
				continue
			}
			sessions[r.SessionID] = s
		}
		// Quietly: a tab lists many requests the viewer may not decide,
		// and that is no refusal to log.
		if ok, _ := q.mayDecide(ctx, zerolog.Nop(), r, s, user); !ok {
			continue
		}
		shown, o := q.view(r, s)
		items = append(items, blocks.Waiting{Request: shown, Session: s, CardLink: o.CardLink, Needs: o.Needs})
	}
	return blocks.HomeWaiting(user, items)
}
