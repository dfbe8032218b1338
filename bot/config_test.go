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
	"github.com/slackgate/slackgate/store"
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

func TestParseApprovers(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{name: "empty means anyone", in: "", want: nil},
		{name: "users, enterprise users and groups, deduplicated", in: "U1, W2 S3,U1", want: []string{"U1", "W2", "S3"}},
		{name: "a channel id is refused", in: "C123", wantErr: true},
		{name: "a name is refused", in: "@alice", wantErr: true},
		{name: "lower case is refused", in: "u123", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseApprovers(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
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
		{"a bad approver", Config{BotToken: "xoxb-1", SigningSecret: "s", Approvers: []string{"alice"}, SigningKey: testSigningKey}},
		{"no signing key", Config{BotToken: "xoxb-1", AppToken: "xapp-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, nopStore{}, zerolog.Nop()); !errors.Is(err, ErrConfig) {
				t.Errorf("New = %v, want ErrConfig", err)
			}
		})
	}
	t.Run("either transport alone is enough", func(t *testing.T) {
		for _, cfg := range []Config{{BotToken: "xoxb-1", AppToken: "xapp-1", SigningKey: testSigningKey}, {BotToken: "xoxb-1", SigningSecret: "s", SigningKey: testSigningKey}} {
			if _, err := New(cfg, nopStore{}, zerolog.Nop()); err != nil {
				t.Errorf("New(%+v) = %v", cfg, err)
			}
		}
	})
}

// testSigningKey signs the decisions of every test bot.
var testSigningKey = ed25519.NewKeyFromSeed([]byte("bot tests: decision signing seed"))

// nopStore satisfies store.Store for constructor tests that never use it.
type nopStore struct{ store.Store }

func TestApproverGroupsAreCachedForTheirTTL(t *testing.T) {
	clock := newFakeClock()
	calls := 0
	members := []string{"U1"}
	a := newApprovers([]string{"U9", "S1"}, func(_ context.Context, g string) ([]string, error) {
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
	a := newApprovers([]string{"S1"}, func(context.Context, string) ([]string, error) {
		return nil, errors.New("missing_scope")
	}, newFakeClock(), time.Minute)
	ok, err := a.allowed(t.Context(), "U1")
	if ok || err == nil {
		t.Errorf("allowed = %v, %v; want false with an error", ok, err)
	}
}

func TestEmptyApproverListLetsAnyoneDecide(t *testing.T) {
	a := newApprovers(nil, nil, newFakeClock(), time.Minute)
	if ok, err := a.allowed(t.Context(), "U42"); !ok || err != nil {
		t.Errorf("allowed = %v, %v", ok, err)
	}
}

func TestRunFailsFastOnABadBotToken(t *testing.T) {
	fake := fakeslack.New(t, fakeslack.AllowRejections())
	b, err := New(Config{BotToken: "xoxb-wrong", AppToken: fakeslack.AppToken, APIURL: fake.APIURL(), SigningKey: testSigningKey}, nopStore{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	err = b.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "auth.test") {
		t.Errorf("Run = %v, want an auth.test error", err)
	}
}
