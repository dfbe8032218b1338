package redistest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/store/redisstore/redistest"
)

// outcomeTB records how a helper ended a test instead of ending it.
type outcomeTB struct {
	testing.TB
	skipped, fatal string
}

func (o *outcomeTB) Helper()           {}
func (o *outcomeTB) Skip(args ...any)  { o.skipped = fmt.Sprint(args...) }
func (o *outcomeTB) Fatal(args ...any) { o.fatal = fmt.Sprint(args...) }

func TestURLSkipsOrFailsWhenTheVariableIsUnset(t *testing.T) {
	helpers := []struct {
		variable string
		url      func(testing.TB) string
	}{
		{"REDIS_URL", redistest.URL},
		{"REDIS_CLUSTER_URL", redistest.ClusterURL},
	}
	tests := []struct {
		name      string
		require   string
		ci        string
		wantFatal bool
	}{
		{name: "skips locally"},
		{name: "fails when integration is required", require: "1", wantFatal: true},
		{name: "fails on CI", ci: "true", wantFatal: true},
	}
	for _, h := range helpers {
		for _, tt := range tests {
			t.Run(h.variable+"/"+tt.name, func(t *testing.T) {
				t.Setenv(h.variable, "")
				t.Setenv("SLACKGATE_REQUIRE_INTEGRATION", tt.require)
				t.Setenv("CI", tt.ci)
				o := &outcomeTB{TB: t}
				if got := h.url(o); got != "" {
					t.Fatalf("url = %q, want \"\"", got)
				}
				if (o.fatal != "") != tt.wantFatal || (o.skipped != "") == tt.wantFatal {
					t.Fatalf("skipped %q, fatal %q; want fatal %t", o.skipped, o.fatal, tt.wantFatal)
				}
				if msg := o.skipped + o.fatal; !strings.Contains(msg, h.variable) || !strings.Contains(msg, ".ci/with-redis.sh") {
					t.Fatalf("message %q does not say what to set and how", msg)
				}
			})
		}
	}
}

func TestURLReturnsTheVariable(t *testing.T) {
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("REDIS_CLUSTER_URL", "redis+cluster://127.0.0.1:2/")
	if got := redistest.URL(t); got != "redis://127.0.0.1:1/0" {
		t.Errorf("URL = %q", got)
	}
	if got := redistest.ClusterURL(t); got != "redis+cluster://127.0.0.1:2/" {
		t.Errorf("ClusterURL = %q", got)
	}
}
