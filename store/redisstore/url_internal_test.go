package redisstore

import (
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestClusterURLForms(t *testing.T) {
	for _, tc := range []struct {
		name, url  string
		addrs      []string
		user, pass string
		tls        bool
	}{
		{"SchemeWithSeeds", "redis+cluster://app:pw@h1:7000,h2:7001,h3:7002/", []string{"h1:7000", "h2:7001", "h3:7002"}, "app", "pw", false},
		{"TLS", "rediss+cluster://h1:7000,h2:7001", []string{"h1:7000", "h2:7001"}, "", "", true},
		{"OneSeed", "redis+cluster://h1:7000/0?dial_timeout=2s", []string{"h1:7000"}, "", "", false},
		{"BareSeedList", "10.0.0.1:6379,10.0.0.2:6379", []string{"10.0.0.1:6379", "10.0.0.2:6379"}, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseURL(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cc, ok := c.(*redis.ClusterClient)
			if !ok {
				t.Fatalf("%s made a %T, want a cluster client", tc.url, c)
			}
			o := cc.Options()
			if !slices.Equal(o.Addrs, tc.addrs) || o.Username != tc.user || o.Password != tc.pass || (o.TLSConfig != nil) != tc.tls {
				t.Errorf("options: addrs %v user %q pass %q tls %v", o.Addrs, o.Username, o.Password, o.TLSConfig != nil)
			}
			if o.PoolSize != defaultPoolSize {
				t.Errorf("pool size %d, want %d per node", o.PoolSize, defaultPoolSize)
			}
		})
	}
}

func TestSentinelURLForms(t *testing.T) {
	o, err := sentinelOptions("redis+sentinel://app:pw@s1:26379,s2:26380/main/2?sentinel_password=spw&dial_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if o.MasterName != "main" || o.DB != 2 || !slices.Equal(o.SentinelAddrs, []string{"s1:26379", "s2:26380"}) {
		t.Errorf("master %q db %d sentinels %v", o.MasterName, o.DB, o.SentinelAddrs)
	}
	if o.Username != "app" || o.Password != "pw" || o.SentinelUsername != "" || o.SentinelPassword != "spw" {
		t.Errorf("data node login %q/%q, sentinel login %q/%q", o.Username, o.Password, o.SentinelUsername, o.SentinelPassword)
	}
	if o.TLSConfig != nil || o.DialTimeout.Seconds() != 3 {
		t.Errorf("tls %v dial timeout %v", o.TLSConfig, o.DialTimeout)
	}
	o, err = sentinelOptions("rediss+sentinel://s1:26379/main")
	if err != nil {
		t.Fatal(err)
	}
	if o.TLSConfig == nil || o.DB != 0 || o.MasterName != "main" {
		t.Errorf("rediss+sentinel: tls %v db %d master %q", o.TLSConfig != nil, o.DB, o.MasterName)
	}
}

func TestBadURLsSayWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"ClusterWithADatabase", "redis+cluster://h1:7000,h2:7001/3"},
		{"ClusterHostWithoutPort", "redis+cluster://h1,h2:7001/"},
		{"SentinelWithoutMaster", "redis+sentinel://s1:26379/"},
		{"SentinelWithTooLongAPath", "redis+sentinel://s1:26379/main/0/x"},
		{"SentinelBadDatabase", "redis+sentinel://s1:26379/main/x"},
		{"UnknownOption", "redis+cluster://h1:7000/?no_such_option=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dial(tc.url)
			if err == nil {
				_ = c.Close()
				t.Fatalf("%s was accepted", tc.url)
			}
		})
	}
}

func TestSingleServerURLsStayAsTheyWere(t *testing.T) {
	c, err := parseURL("redis://app:pw@127.0.0.1:6380/4?pool_size=7")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, ok := c.(*redis.Client)
	if !ok {
		t.Fatalf("made a %T, want a single-server client", c)
	}
	if o := rc.Options(); o.Addr != "127.0.0.1:6380" || o.DB != 4 || o.Username != "app" || o.PoolSize != 7 {
		t.Errorf("options %+v", o)
	}
}
