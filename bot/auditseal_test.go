package bot

import (
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store/storetest"
)

// TestBotSealsTheAuditWhenConfigured: Run starts the sealer only with
// SealAudit, and it seals at shutdown.
func TestBotSealsTheAuditWhenConfigured(t *testing.T) {
	for _, seal := range []bool{false, true} {
		t.Run(fmt.Sprint("SealAudit=", seal), func(t *testing.T) {
			h := newHarness(t, transportSocket, harnessOpts{
				cfg: func(c *Config) { c.SealAudit = seal; c.AuditSealEvery = time.Hour },
			})
			st := h.st
			storetest.AppendToolRan(t, st, 2)
			h.stop()
			want := uint64(0)
			if seal {
				want = 2
			}
			if got := storetest.SealedAt(t, st, testSigningKey.Public().(ed25519.PublicKey)); got != want {
				t.Fatalf("sealed at %d after the bot stopped, want %d", got, want)
			}
		})
	}
}
