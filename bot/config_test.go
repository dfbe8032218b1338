package bot

import (
	"context"
	"crypto/ed25519"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot/fakeslack"
)

func TestParseChannelWorkDirs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr bool
	}{
		{name: "empty gives no overrides", in: "", want: map[string]string{}},
		{name: "pairs with spaces", in: " C123=/srv/a , C456=/srv/b/ ", want: map[string]string{"C123": "/srv/a", "C456": "/srv/b"}},
		{name: "relative path is refused", in: "C1=srv/a", wantErr: true},
		{name: "missing equals is refused", in: "C1", wantErr: true},
		{name: "empty channel is refused", in: "=/srv/a", wantErr: true},
		{name: "a channel twice is refused", in: "C1=/a,C1=/b", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseChannelWorkDirs(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("err %v is not ErrConfig", err)
			}
			if !tt.wantErr && !maps.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParsePeople(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    People
		wantErr bool
	}{
		{name: "empty names nobody", in: "", want: People{}},
		{name: "a star is anyone", in: " * ", want: People{Anyone: true}},
		{name: "users, enterprise users and groups, deduplicated", in: "U1, W2 S3,U1", want: People{IDs: []string{"U1", "W2", "S3"}}},
		{name: "a star with ids is ambiguous", in: "*,U1", wantErr: true},
		{name: "a channel id is refused", in: "C123", wantErr: true},
		{name: "a name is refused", in: "@alice", wantErr: true},
		{name: "lower case is refused", in: "u123", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePeople(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && (got.Anyone != tt.want.Anyone || !slices.Equal(got.IDs, tt.want.IDs)) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseChannels(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "*", want: nil},
		{in: "C1, G2 C1", want: []string{"C1", "G2"}},
		{in: "D1", wantErr: true},
		{in: "#general", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseChannels(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseChannels(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseTeams(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "T1, E2 T1", want: []string{"T1", "E2"}},
		{in: "*", wantErr: true}, // every team is what the gate is there to refuse
		{in: "acme", wantErr: true},
		{in: "U1", wantErr: true},
		{in: "t1", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTeams(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseTeams(%q) = %v, %v; want %v (error: %v)", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no bot token", Config{AppToken: "xapp-1"}},
		{"a user token as bot token", Config{BotToken: "xoxp-1", AppToken: "xapp-1"}},
		{"no transport", Config{BotToken: "xoxb-1"}},
		{"a bot token as app token", Config{BotToken: "xoxb-1", AppToken: "xoxb-2"}},
		{"a bad approver", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: People{IDs: []string{"alice"}}, SigningKey: testSigningKey}},
		{"no signing key", Config{BotToken: "xoxb-1", AppToken: "xapp-1", Approvers: anyone}},
		{"no approvers", Config{BotToken: "xoxb-1", SigningSecret: "s", SigningKey: testSigningKey}},
		{"a bad starter", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, Starters: People{IDs: []string{"C1"}}, SigningKey: testSigningKey}},
		{"a bad allowed team", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, AllowedTeams: []string{"acme"}, SigningKey: testSigningKey}},
		{"a bad channel", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, AllowedChannels: []string{"general"}, SigningKey: testSigningKey}},
		{"DMs without a workdir", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, AllowDMs: true, SigningKey: testSigningKey}},
		{"DMs with a relative workdir", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, AllowDMs: true, DMWorkDir: "dm", SigningKey: testSigningKey}},
		{"a negative limit", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, MaxPromptBytes: -1, SigningKey: testSigningKey}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nopStore{}, zerolog.Nop()); !errors.Is(err, ErrConfig) {
				t.Errorf("New = %v, want ErrConfig", err)
			}
		})
	}
	t.Run("either transport alone is enough", func(t *testing.T) {
		for _, cfg := range []Config{{BotToken: "xoxb-1", AppToken: "xapp-1", Approvers: anyone, SigningKey: testSigningKey}, {BotToken: "xoxb-1", SigningSecret: "s", Approvers: anyone, SigningKey: testSigningKey}} {
			if _, err := New(cfg, nopStore{}, zerolog.Nop()); err != nil {
				t.Errorf("New(%+v) = %v", cfg, err)
			}
		}
	})
}

// testSigningKey signs the decisions of every test bot.
var testSigningKey = ed25519.NewKeyFromSeed([]byte("bot tests: decision signing seed"))
var anyone = People{Anyone: true}

func TestNoApproversErrorNamesBothOptions(t *testing.T) {
	_, err := New(Config{BotToken: "xoxb-1", AppToken: "xapp-1"}, nopStore{}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "APPROVERS is required") || !strings.Contains(err.Error(), "APPROVERS=*") {
		t.Errorf("New without approvers = %v, want the error naming a list and APPROVERS=*", err)
	}
}

// nopStore satisfies Store for constructor tests that never use it.
type nopStore struct{ Store }

func TestApproverGroupsAreCachedForTheirTTL(t *testing.T) {
	clock := newFakeClock()
	calls := 0
	members := []string{"U1"}
	a := newApprovers(People{IDs: []string{"U9", "S1"}}, func(_ context.Context, g string) ([]string, error) {
		calls++
		return members, nil
	}, clock, time.Minute)
	ctx := t.Context()
	check := func(user string, want bool) {
		t.Helper()
		ok, err := a.allowed(ctx, user)
		if err != nil || ok != want {
			t.Errorf("allowed(%s) = %v, %v; want %v", user, ok, err, want)
		}
	}
	check("U9", true) // listed by id: no lookup
	if calls != 0 {
		t.Errorf("a listed user caused %d group lookups", calls)
	}
	check("U1", true)
	check("U2", false)
	if calls != 1 {
		t.Errorf("group looked up %d times within its TTL, want 1", calls)
	}
	members = []string{"U2"}
	clock.Advance(time.Minute)
	check("U2", true)
	check("U1", false)
	if calls != 2 {
		t.Errorf("group looked up %d times after the TTL, want 2", calls)
	}
}

func TestApproversFailClosedWhenAGroupCannotBeListed(t *testing.T) {
	a := newApprovers(People{IDs: []string{"S1"}}, func(context.Context, string) ([]string, error) {
		return nil, errors.New("missing_scope")
	}, newFakeClock(), time.Minute)
	ok, err := a.allowed(t.Context(), "U1")
	if ok || err == nil {
		t.Errorf("allowed = %v, %v; want false with an error", ok, err)
	}
}

func TestStarLetsAnyoneDecideAndAnEmptyListNobody(t *testing.T) {
	if ok, err := newApprovers(anyone, nil, newFakeClock(), time.Minute).allowed(t.Context(), "U42"); !ok || err != nil {
		t.Errorf("APPROVERS=*: allowed = %v, %v; want true", ok, err)
	}
	if ok, err := newApprovers(People{}, nil, newFakeClock(), time.Minute).allowed(t.Context(), "U42"); ok || err != nil {
		t.Errorf("no approvers: allowed = %v, %v; want false", ok, err)
	}
}

func TestRunFailsFastOnABadBotToken(t *testing.T) {
	fake := fakeslack.New(t, fakeslack.AllowRejections())
	b, err := New(Config{BotToken: "xoxb-wrong", AppToken: fakeslack.AppToken, APIURL: fake.APIURL(), Approvers: anyone, SigningKey: testSigningKey}, nopStore{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "auth.test") || !strings.Contains(err.Error(), "Slack refused SLACK_BOT_TOKEN") {
		t.Errorf("Run = %v, want an auth.test error blaming the token", err)
	}
}

// TestRunDoesNotBlameTheTokenForTheNetwork: a Slack that cannot be reached
// (DNS, a firewall) is no token's fault, and the error says where to look.
func TestRunDoesNotBlameTheTokenForTheNetwork(t *testing.T) {
	b, err := New(Config{BotToken: "xoxb-1", AppToken: fakeslack.AppToken, APIURL: "http://127.0.0.1:1/api/", Approvers: anyone, SigningKey: testSigningKey}, nopStore{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "cannot reach Slack") || !strings.Contains(err.Error(), "DNS") || strings.Contains(err.Error(), "refused SLACK_BOT_TOKEN") {
		t.Errorf("Run = %v, want it to say Slack was not reached, not that the token is wrong", err)
	}
}
