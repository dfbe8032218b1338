package bot

import (
	"context"
	"time"

	"github.com/slack-go/slack/slackevents"
)

// eventDedupTTL covers Slack's Events API retries (at once, after about a
// minute and after about five minutes).
const eventDedupTTL = 10 * time.Minute

// firstDelivery reports whether this is the first delivery of an Events API
// event. Slack redelivers events it thinks were not acknowledged (HTTP
// retries, Socket Mode envelopes acked too late), and a redelivery may reach
// another replica, so the event_id is remembered in the shared store rather
// than in this process. When the store cannot tell, the event is handled: a
// rare duplicate is better than a lost mention.
func (se *slackEvents) firstDelivery(ctx context.Context, ev slackevents.EventsAPIEvent) bool {
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok || cb.EventID == "" {
		return true
	}
	log := se.log.With().Str("event_id", cb.EventID).Logger()
	first, err := se.st.FirstSeen(ctx, "slack-event:"+cb.EventID, eventDedupTTL)
	if err != nil {
		log.Warn().Err(err).Msg("cannot tell whether the event was delivered before; handling it")
		return true
	}
	if !first {
		log.Debug().Msg("repeated event delivery ignored")
	}
	return first
}
