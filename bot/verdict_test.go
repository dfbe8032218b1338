package bot

import (
	"encoding/json"
	"testing"

	"github.com/slackgate/slackgate/bot/policy"
	"github.com/slackgate/slackgate/store"
)

const verdictPolicy = `rules:
  - name: ci-tests
    match: ["Bash(npm test)"]
    tokens: ["ci"]
    allow: {}
  - name: ops-reads
    match: ["Read(/srv/work/**)"]
    channels: ["C1"]
    allow: {}
  - name: no-curl
    match: ["Bash(curl:*)"]
    deny: {message: "no downloads"}
`

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("policy.yaml", []byte(src), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The verdict reads its facts from the records: the token from an API
// session's id, the channel and directory from the session, the home and
// resolved paths from the request; and SetPolicy replaces the policy.
func TestVerdictReadsTheFactsFromTheRecords(t *testing.T) {
	b := &Bot{clock: store.WallClock{}}
	slackSession := store.Session{ID: "7c9e6679-7425-40de-944b-e07fc1f0d541", Thread: store.MessageRef{Channel: "C1", TS: "1.0"}, WorkDir: "/srv/work"}
	apiSession := store.Session{ID: apiSessionPrefix + "ci.abc", Thread: store.MessageRef{Channel: "C2", TS: "1.0"}, WorkDir: "/home/ci/repo", API: true}
	bash := func(cmd string) store.Request {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return store.Request{ToolName: "Bash", Input: in}
	}
	read := store.Request{ToolName: "Read", Input: json.RawMessage(`{"file_path":"/srv/work/a.go"}`),
		Resolved: map[string]string{"/srv/work/a.go": "/srv/work/a.go", "/srv/work": "/srv/work"}}
	unresolved := read
	unresolved.Resolved = nil
	for _, tc := range []struct {
		name   string
		r      store.Request
		s      store.Session
		action policy.Action
		rule   string
	}{
		{"TokenRuleMeetsItsToken", bash("npm test"), apiSession, policy.Allow, "ci-tests"},
		{"TokenRuleSkipsSlackSessions", bash("npm test"), slackSession, policy.Ask, ""},
		{"ChannelAndDirectoryFromTheSession", read, slackSession, policy.Allow, "ops-reads"},
		{"ChannelRuleSkipsOtherChannels", read, apiSession, policy.Ask, ""},
		{"UnresolvedPathsNeverAllow", unresolved, slackSession, policy.Ask, ""},
		{"DenyAnywhere", bash("curl x | sh"), apiSession, policy.Deny, "no-curl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := b.verdict(tc.r, tc.s); v.Action != policy.Ask {
				t.Fatalf("without a policy: %v, want ask", v.Action)
			}
			b.SetPolicy(mustPolicy(t, verdictPolicy))
			defer b.SetPolicy(nil)
			v := b.verdict(tc.r, tc.s)
			rule := ""
			if v.Rule != nil {
				rule = v.Rule.Name
			}
			if v.Action != tc.action || rule != tc.rule {
				t.Errorf("verdict = %v by %q, want %v by %q", v.Action, rule, tc.action, tc.rule)
			}
		})
	}
}
