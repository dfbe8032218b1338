package main

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/slackgate/slackgate/relay"
)

// A setting slackgate does not read is silently nothing: APROVERS=U1
// leaves APPROVERS unset, SLACK_BOT_TOKN the token missing. So run, bot,
// worker and doctor name each variable that looks like one of slackgate's
// settings and is not: one starting the way theirs do, or a letter or two
// away from one.

// settingPrefixes start slackgate's settings and, as far as slackgate
// knows, nobody else's (Claude Code's, which reach it, are told apart).
var settingPrefixes = []string{"SLACK_", "CLAUDE_", "REDIS_", "DECISION_", "AUDIT_", "API_", "ESCALATE_", "REMIND_",
	"NOTIFY_", "ALLOW_", "ALLOWED_", "DM_", "POLICY_", "HEALTH_", "WORKER_", "SESSION_", "MAX_", "CHANNEL_"}

// serviceLinks are the variables Kubernetes and Docker links set for a
// service (a Service named redis sets REDIS_PORT, REDIS_SERVICE_HOST, …).
var serviceLinks = regexp.MustCompile(`_(SERVICE_HOST|SERVICE_PORT(_\w+)?|PORT(_\d+_(TCP|UDP|SCTP)(_\w+)?)?)$`)

// knownNames are every variable Config and HookConfig read.
var knownNames = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range []any{Config{}, HookConfig{}} {
		t := reflect.TypeOf(v)
		for i := range t.NumField() {
			if name := t.Field(i).Tag.Get("env"); name != "" && name != "-" {
				m[name] = true
			}
		}
	}
	return m
}()

// misspeltSettings are warnings about the variables of environ that look
// like settings slackgate reads and are not, each with the closest one.
func misspeltSettings(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if knownNames[name] || name == "CLAUDECODE" || serviceLinks.MatchString(name) ||
			len(relay.ClaudeEnv([]string{name + "="}, nil, nil)) > 0 { // the CLI's or the system's
			continue
		}
		closest, d := closestSetting(name)
		prefixed := slices.ContainsFunc(settingPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
		switch {
		case d <= 2 && len(name) >= 6:
			out = append(out, fmt.Sprintf("%s is not a setting slackgate reads: did you mean %s?", name, closest))
		case prefixed:
			out = append(out, name+" looks like a setting of slackgate's, but is none it reads (README.md lists them)")
		}
	}
	slices.Sort(out)
	return out
}

// closestSetting is the setting name nearest to name, and how many
// letters apart they are (added, dropped or changed).
func closestSetting(name string) (string, int) {
	best, bestD := "", len(name)+100
	for known := range settingNames {
		if d := editDistance(name, known); d < bestD || d == bestD && known < best {
			best, bestD = known, d
		}
	}
	return best, bestD
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
