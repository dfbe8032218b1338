package bot

import (
	"sync"
	"testing"
)

// The bot keeps its connections to Slack: rounds of calls made at once
// find the connections the earlier rounds opened idle. Go's default
// transport keeps two, so every call past the second in each round paid
// for a new TCP and TLS handshake (measured: 10–14 new connections a round
// of 16). A connection goes back to the pool just after its call returns,
// so a round may still open one or two the previous round was about to
// return: the bound is twice one round's calls over five rounds.
func TestSlackCallsReuseTheirConnections(t *testing.T) {
	h := newHarness(t, transportSocket, harnessOpts{})
	ctx := testCtx(t)
	const atOnce = 16
	round := func() {
		var wg sync.WaitGroup
		for range atOnce {
			wg.Go(func() {
				if _, err := h.bot.api.AuthTestContext(ctx); err != nil {
					t.Errorf("auth.test: %v", err)
				}
			})
		}
		wg.Wait()
	}
	const rounds = 5
	for range rounds {
		round()
	}
	if opened := h.fake.TCPConnections(); opened > 2*atOnce {
		t.Errorf("%d rounds of %d calls at once opened %d connections, want at most %d", rounds, atOnce, opened, 2*atOnce)
	}
}
