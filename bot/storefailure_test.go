package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/slackgate/slackgate/bot/fakeslack"
	"github.com/slackgate/slackgate/store"
)

func TestStoreFailuresBecomeOneStatusAndReason(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		reason string
	}{
		{fmt.Errorf("boltstore: get request x: %w", store.ErrNotFound), http.StatusNotFound, "it is no longer in the store"},
		{fmt.Errorf("redisstore: create: %w", store.ErrInvalid), http.StatusBadRequest, "the store refused it as invalid"},
		{fmt.Errorf("redisstore: count: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, "the store did not answer in time"},
		{fmt.Errorf("redisstore: count: %w", store.ErrClosed), http.StatusServiceUnavailable, "the store is unavailable"},
		{errors.New("dial tcp 127.0.0.1:6379: connection refused"), http.StatusServiceUnavailable, "the store is unavailable"},
	} {
		if status, reason := storeFailure(tc.err); status != tc.status || reason != tc.reason {
			t.Errorf("storeFailure(%v) = %d %q, want %d %q", tc.err, status, reason, tc.status, tc.reason)
		}
	}
	if got := sorry("start a session", store.ErrClosed); got != "Sorry, I could not start a session (the store is unavailable). Please try again." {
		t.Errorf("sorry = %q", got)
	}
}

// storeDown is the store as the bot sees it while Redis is unreachable for
// the calls that count and create.
type storeDown struct{ store.Store }

var errDown = errors.New("redisstore: dial tcp 127.0.0.1:6379: connection refused")

func (storeDown) ActiveSessionsBy(context.Context, string) (int, error)  { return 0, errDown }
func (storeDown) CountPendingUnder(context.Context, string) (int, error) { return 0, errDown }

// A person in Slack and an API client are told the same reason in their
// own form when the store fails, and nothing is created.
func TestAFailingStoreIsToldTheSameWayInSlackAndTheAPI(t *testing.T) {
	h := newHarness(t, transportHTTP, harnessOpts{
		cfg:  func(c *Config) { c.APITokens, c.MaxSessionsPerUser = testAPITokens(t), 3 },
		wrap: func(s store.Store) store.Store { return storeDown{s} },
	})
	ctx := testCtx(t)
	if _, err := h.fake.Mention(ctx, "U1", "C1", "fix the failing test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.WaitEphemeral(ctx, "U1", fakeslack.Text("Sorry, I could not start a session (the store is unavailable). Please try again.")); err != nil {
		t.Error(err)
	}
	r := apiCall(t, http.MethodPost, h.base+"/v1/requests", apiTokenA, bashBody("sess-down"))
	if r.code != http.StatusServiceUnavailable || r.body["error"] != "the store is unavailable; try again" {
		t.Errorf("create = %d %v, want 503 saying the store is unavailable", r.code, r.body)
	}
	assertNothingCreated(t, h.st)
}
