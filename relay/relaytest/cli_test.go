package relaytest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/relay/relaytest"
)

// outcomeTB records how CLI ended a test instead of ending it.
type outcomeTB struct {
	testing.TB
	skipped, fatal string
}

func (o *outcomeTB) Helper()                          {}
func (o *outcomeTB) Logf(string, ...any)              {}
func (o *outcomeTB) Skip(args ...any)                 { o.skipped = fmt.Sprint(args...) }
func (o *outcomeTB) Fatal(args ...any)                { o.fatal = fmt.Sprint(args...) }
func (o *outcomeTB) Skipf(format string, args ...any) { o.skipped = fmt.Sprintf(format, args...) }
func (o *outcomeTB) Fatalf(format string, args ...any) {
	o.fatal = fmt.Sprintf(format, args...)
}

func TestCLISkipsOrFailsWhenTheBinaryIsMissing(t *testing.T) {
	notRunnable := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notRunnable, []byte("not a program"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		bin       string
		require   string
		ci        string
		wantFatal bool
	}{
		{name: "unset skips locally", bin: ""},
		{name: "not runnable skips locally", bin: notRunnable},
		{name: "unset fails when integration is required", bin: "", require: "1", wantFatal: true},
		{name: "unset fails on CI", bin: "", ci: "true", wantFatal: true},
		{name: "not runnable fails on CI", bin: notRunnable, ci: "true", wantFatal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CLAUDE_BIN", tt.bin)
			t.Setenv("SLACKGATE_REQUIRE_INTEGRATION", tt.require)
			t.Setenv("CI", tt.ci)
			o := &outcomeTB{TB: t}
			if got := relaytest.CLI(o); got != "" {
				t.Fatalf("CLI = %q, want \"\"", got)
			}
			msg := o.skipped
			if tt.wantFatal {
				msg = o.fatal
			}
			if (o.fatal != "") != tt.wantFatal || (o.skipped != "") == tt.wantFatal {
				t.Fatalf("skipped %q, fatal %q; want fatal %t", o.skipped, o.fatal, tt.wantFatal)
			}
			if !strings.Contains(msg, "CLAUDE_BIN") {
				t.Fatalf("message %q does not say which variable to set", msg)
			}
		})
	}
}

func TestCLIReturnsARunnableBinary(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "claude")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '9.9.9 (Claude Code)'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CLAUDE_BIN", fake)
	if got := relaytest.CLI(t); got != fake {
		t.Fatalf("CLI = %q, want %q", got, fake)
	}
}
