package redisstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/slackgate/slackgate/store"
)

// startSentinel runs a Sentinel (redis-server --sentinel) watching the
// primary on masterPort under the name "main".
func startSentinel(t *testing.T, masterPort int) *server {
	t.Helper()
	srv := &server{t: t, bin: redisServerBin(t), dir: t.TempDir(), port: freePort(t), ready: "+monitor master main"}
	conf := filepath.Join(srv.dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor main 127.0.0.1 %d 1\n", srv.port, srv.dir, masterPort)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.argv = []string{conf, "--sentinel", "--logfile", ""}
	srv.start()
	t.Cleanup(srv.kill)
	return srv
}

// TestSentinelURLReachesThePrimary: a redis+sentinel:// URL finds the
// primary through a real Sentinel, and a request makes its round trip there.
func TestSentinelURLReachesThePrimary(t *testing.T) {
	primary := startServer(t)
	sentinel := startSentinel(t, primary.port)
	url := fmt.Sprintf("redis+sentinel://127.0.0.1:%d/main/0", sentinel.port)
	prefix := uniquePrefix()
	s := open(t, url, prefix)
	ctx := t.Context()
	r := newTestRequest("req-1", "sess-1")
	must(t, s.CreateRequest(ctx, r))
	got := make(chan error, 1)
	go func() {
		_, err := s.WaitDecision(ctx, r.ID)
		got <- err
	}()
	_, err := s.Decide(ctx, r.ID, store.Decision{Outcome: store.OutcomeAllow, At: time.Now()})
	must(t, err)
	must(t, <-got)
	// The data is on the primary the Sentinel names.
	direct := open(t, primary.url(), prefix)
	back, err := direct.GetRequest(ctx, r.ID)
	must(t, err)
	if back.Decision == nil || back.Decision.Outcome != store.OutcomeAllow {
		t.Errorf("the primary holds %+v", back)
	}
}
