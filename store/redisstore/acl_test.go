package redisstore_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/slackgate/slackgate/store"
	"github.com/slackgate/slackgate/store/redisstore/redistest"
	"github.com/slackgate/slackgate/store/storetest"
)

// deployACLRules returns the ACL rules deploy/compose.yaml gives the bot's
// Redis user, after its password.
func deployACLRules(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		_, rules, ok := strings.Cut(line, `--user slackgate-bot on ">$$REDIS_BOT_PASSWORD" `)
		if !ok {
			continue
		}
		var out []string
		for _, f := range strings.Fields(rules) {
			out = append(out, strings.Trim(f, "'"))
		}
		return out
	}
	t.Fatal("deploy/compose.yaml has no --user slackgate-bot line")
	return nil
}

// TestConformanceAsTheDeployACLUser runs the suite logged in as users with
// the rules deploy/compose.yaml gives slackgate's users, so the key patterns
// there cover every key the store touches (and no other prefix's) and the
// commands it needs are allowed. Each store of the suite gets a user of its
// own, its prefix standing in for "slackgate".
func TestConformanceAsTheDeployACLUser(t *testing.T) {
	url := redistest.URL(t)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opts)
	defer admin.Close()
	rules := deployACLRules(t)
	// limitedURL makes a user for prefix and returns the URL logging in as it.
	limitedURL := func(tb testing.TB, prefix string) string {
		user, pass := prefix, uniquePrefix()
		args := []any{"ACL", "SETUSER", user, "on", ">" + pass}
		for _, r := range rules {
			args = append(args, strings.ReplaceAll(r, "{slackgate", "{"+prefix))
		}
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			tb.Fatalf("%v: %v", args, err)
		}
		tb.Cleanup(func() { _ = admin.Do(context.Background(), "ACL", "DELUSER", user).Err() })
		return "redis://" + user + ":" + pass + "@" + opts.Addr + "/0"
	}
	var urls sync.Map // store.Store → its user's URL and prefix
	type login struct{ url, prefix string }
	newStore := func(tb testing.TB) store.Store {
		prefix := uniquePrefix()
		tb.Cleanup(func() { dropPrefix(tb, url, prefix) }) // as the admin
		u := limitedURL(tb, prefix)
		s := open(tb, u, prefix, testOptions...)
		urls.Store(store.Store(s), login{u, prefix})
		return s
	}
	second := storetest.WithSecondClient(func(tb testing.TB, s store.Store) store.Store {
		l, _ := urls.Load(s)
		return open(tb, l.(login).url, l.(login).prefix, testOptions...)
	})
	storetest.Run(t, newStore, second, storetest.WithRedeliveryDelay(testRedelivery), writeApprovals)
}
