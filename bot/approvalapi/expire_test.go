package approvalapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// A request whose client never polls again (it died, or gave up without
// withdrawing) is settled as expired at its deadline, through the host
// (whose settled event the bot's card shows: TestAPIRequestPastItsTimeoutExpires).
func TestAnUnpolledAPIRequestExpiresAtItsDeadline(t *testing.T) {
	armed := make(chan time.Time, 64)
	h := newServerHarness(t, serverOpts{useClock: true,
		// The sweeper's fallback pass must not fall inside the minute:
		// its only timer is then the request's deadline.
		sweep: time.Hour,
		armed: func(due time.Time) {
			select {
			case armed <- due:
			default:
			}
		}})
	ctx := t.Context()
	body := []byte(`{"tool_name":"Bash","input":{"command":"make deploy"},"timeout":"1m","session":{"id":"sess-gone"}}`)
	created := apiCall(t, http.MethodPost, h.base+"/v1/requests", tokenA, body)
	if created.code != http.StatusCreated {
		t.Fatalf("create = %d %v", created.code, created.body)
	}
	// The sweeper has set its timer for this deadline.
	for due := (time.Time{}); !due.Equal(created.st.Deadline); {
		select {
		case due = <-armed:
		case <-ctx.Done():
			t.Fatal("the sweeper never set a timer for the request's deadline")
		}
	}
	h.clock.Advance(time.Minute - time.Second)
	if r, _ := h.st.GetRequest(ctx, created.st.ID); !r.Pending() {
		t.Fatalf("settled %+v before its deadline", r.Decision)
	}
	h.clock.Advance(time.Second)
	d, err := h.st.WaitDecision(ctx, created.st.ID)
	if err != nil || d.Outcome != store.OutcomeExpired || !d.At.Equal(created.st.Deadline) || d.Message != expiredMessage {
		t.Fatalf("decision = %+v, %v; want expired at the deadline %v", d, err, created.st.Deadline)
	}
	h.host.mu.Lock()
	defer h.host.mu.Unlock()
	if len(h.host.settled) != 1 {
		t.Errorf("the host settled %d times, want once", len(h.host.settled))
	}
}
