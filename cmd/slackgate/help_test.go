package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEveryCommandAnswersHelp: every command and subcommand, asked with
// -h, -help, --help or `slackgate help`, prints its usage on stdout,
// exits 0 and does nothing else. The environment would make each act
// visibly: a store in DATA_DIR, a key pair, a hook answer, a service that
// starts; the output being the usage alone, and DATA_DIR staying empty,
// shows none did.
func TestEveryCommandAnswersHelp(t *testing.T) {
	data := t.TempDir()
	environ := []string{"DATA_DIR=" + data, "SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "APPROVERS=*",
		"SLACKGATE_URL=http://127.0.0.1:1", "SLACKGATE_TOKEN_FILE=" + writeTokenFile(t, "x", 0o600)}
	for _, c := range usageCommands() {
		if _, ok := commandHelp[c]; !ok {
			t.Errorf("the usage lists %s, which has no help of its own (commandHelp)", c)
		}
	}
	for topic, text := range commandHelp {
		words := strings.Fields(topic)
		asks := [][]string{append(slices.Clone(words), "-h"), append(slices.Clone(words), "--help"), append([]string{"help"}, words...)}
		if len(words) == 1 && words[0] != "help" {
			asks = append(asks, []string{words[0], "-help"})
		}
		for _, args := range asks {
			var out, errb bytes.Buffer
			p := program{environ: environ, stdin: strings.NewReader(`{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`), stdout: &out, stderr: &errb}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := p.run(ctx, args)
			cancel()
			if err != nil || out.String() != text || errb.Len() > 0 {
				t.Errorf("slackgate %s = %v; stdout %q, stderr %q; want its usage alone, exit 0", strings.Join(args, " "), err, out.String(), errb.String())
			}
		}
	}
	if entries, err := os.ReadDir(data); err != nil || len(entries) > 0 {
		t.Errorf("DATA_DIR after asking for help: %v, %v; want it untouched", entries, err)
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, err := runProgram(t, nil, args...)
		if err != nil || out != usage {
			t.Errorf("slackgate %s = %v, %q; want the list of commands", args[0], err, out)
		}
	}
}

// TestHelpNamesEveryFlag: each command's usage names every flag its
// parser takes, and no flag's description holds back-quotes, which Go's
// flag package would take for the argument's name and garble. The
// parsers are asked for their own defaults (-h, straight to the command,
// past the dispatcher's help).
func TestHelpNamesEveryFlag(t *testing.T) {
	ctx := context.Background()
	cfg := Config{DataDir: t.TempDir()}
	parsers := map[string]func(p program) error{
		"audit":        func(p program) error { return p.audit(ctx, []string{"-h"}, cfg) },
		"audit verify": func(p program) error { return p.auditVerify(ctx, []string{"-h"}, cfg) },
		"audit export": func(p program) error { _, _, _, err := p.exportFlags([]string{"-h"}); return err },
		"answers":      func(p program) error { return p.answers(ctx, []string{"list", "-h"}, cfg) },
		"rules":        func(p program) error { return p.rules(ctx, []string{"list", "-h"}, cfg) },
		"policy":       func(p program) error { return p.policyExplain([]string{"-h"}, cfg) },
		"hook install": func(p program) error { return p.hookInstall([]string{"-h"}) },
		"doctor":       func(p program) error { return p.doctor(ctx, []string{"-h"}) },
		"hook":         func(p program) error { var c HookConfig; return c.waitFlag([]string{"-h"}, p.stderr) },
	}
	flagLine := regexp.MustCompile(`(?m)^  -(\S+)(?: (.*))?$`)
	for topic, parse := range parsers {
		var out bytes.Buffer
		if err := parse(program{stdout: &out, stderr: &out}); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s -h straight to the command = %v; want flag.ErrHelp", topic, err)
		}
		flags := flagLine.FindAllStringSubmatch(out.String(), -1)
		if len(flags) == 0 {
			t.Errorf("%s: its parser printed no flags: %q", topic, out.String())
		}
		for _, m := range flags {
			if !regexp.MustCompile(`(?m)[\[ ]-` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(commandHelp[topic]) {
				t.Errorf("slackgate %s -h does not name its flag -%s", topic, m[1])
			}
			if strings.Contains(m[2], " ") {
				t.Errorf("%s -%s: its description has back-quotes, which garble the flag's help as %q", topic, m[1], m[0])
			}
		}
	}
}

func TestVersionNamesTheVersionAndCommit(t *testing.T) {
	out, err := runProgram(t, nil, "version")
	if err != nil || !regexp.MustCompile(`^slackgate \S+ commit \S+`).MatchString(out) {
		t.Fatalf("slackgate version = %v, %q; want slackgate VERSION commit COMMIT", err, out)
	}
	version, commit = "v1.2.3", "0123abcd"
	defer func() { version, commit = "", "" }()
	if got := versionLine(); got != "slackgate v1.2.3 commit 0123abcd\n" {
		t.Errorf("with -ldflags -X, version = %q", got)
	}
}
