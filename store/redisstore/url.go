package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The forms of REDIS_URL New accepts. Every form takes go-redis's query
// options (dial_timeout, pool_size, …) after "?".
//
//	redis://[user:pass@]host:port/db            one server (rediss:// for TLS), as always
//	redis+cluster://[user:pass@]h1:p1,h2:p2/    a Redis Cluster, from any of its nodes
//	                                           (rediss+cluster:// for TLS)
//	h1:p1,h2:p2                                 the same, as a bare seed list (no auth, no TLS)
//	redis+sentinel://[user:pass@]s1:p1,s2:p2/mastername[/db]
//	                                           the primary Sentinel names mastername
//	                                           (rediss+sentinel:// for TLS); user:pass log
//	                                           in to the data nodes, the query options
//	                                           sentinel_username and sentinel_password
//	                                           to the Sentinels
const (
	schemeCluster  = "+cluster"
	schemeSentinel = "+sentinel"
)

// dial parses rawURL (see the forms above) and makes the client, without
// connecting yet.
func dial(rawURL string) (redis.UniversalClient, error) {
	client, err := parseURL(rawURL)
	if err != nil {
		// url.Parse's error quotes the whole URL, password included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	return client, nil
}

func parseURL(rawURL string) (redis.UniversalClient, error) {
	if !strings.Contains(rawURL, "://") && strings.Contains(rawURL, ",") {
		rawURL = "redis+cluster://" + rawURL
	}
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch scheme {
	case "redis+cluster", "rediss+cluster":
		o, err := clusterOptions(rawURL)
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(o), nil
	case "redis+sentinel", "rediss+sentinel":
		o, err := sentinelOptions(rawURL)
		if err != nil {
			return nil, err
		}
		return redis.NewFailoverClient(o), nil
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if o.PoolSize == 0 {
		// Every blocked Claim, NextInput and Consume holds a connection
		// (so it can be woken); a worker running many sessions needs more
		// than go-redis's default of 10 per CPU. Connections are only
		// opened when needed. pool_size in the URL overrides this.
		o.PoolSize = defaultPoolSize
	}
	return redis.NewClient(o), nil
}

// splitHosts parses a URL whose host is a comma-separated list, returning
// it with the first host only, and the others.
func splitHosts(rawURL string) (*url.URL, []string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	hosts := strings.Split(u.Host, ",")
	for _, h := range hosts {
		if h == "" || !strings.Contains(h, ":") {
			return nil, nil, fmt.Errorf("host %q: want host:port, comma-separated", h)
		}
	}
	u.Host = hosts[0]
	u.Scheme = strings.TrimSuffix(strings.TrimSuffix(u.Scheme, schemeCluster), schemeSentinel)
	return u, hosts[1:], nil
}

func clusterOptions(rawURL string) (*redis.ClusterOptions, error) {
	u, more, err := splitHosts(rawURL)
	if err != nil {
		return nil, err
	}
	if p := strings.Trim(u.Path, "/"); p != "" && p != "0" {
		return nil, fmt.Errorf("a cluster has only database 0, not %q", p)
	}
	u.Path = ""
	q := u.Query()
	for _, h := range more {
		q.Add("addr", h)
	}
	u.RawQuery = q.Encode()
	o, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, err
	}
	if o.PoolSize == 0 {
		o.PoolSize = defaultPoolSize // per node; see parseURL
	}
	return o, nil
}

func sentinelOptions(rawURL string) (*redis.FailoverOptions, error) {
	u, more, err := splitHosts(rawURL)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if parts[0] == "" || len(parts) > 2 {
		return nil, fmt.Errorf("path %q: want /mastername or /mastername/db", u.Path)
	}
	q := u.Query()
	sentinelUser, sentinelPass := q.Get("sentinel_username"), q.Get("sentinel_password")
	q.Del("sentinel_username")
	q.Del("sentinel_password")
	q.Set("master_name", parts[0])
	for _, h := range more {
		q.Add("addr", h)
	}
	user := u.User
	u.User = nil
	u.Path = "/"
	if len(parts) == 2 {
		u.Path = "/" + parts[1]
	}
	u.RawQuery = q.Encode()
	o, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPass
	if user != nil {
		o.Username = user.Username()
		o.Password, _ = user.Password()
	}
	if o.PoolSize == 0 {
		o.PoolSize = defaultPoolSize // see parseURL
	}
	return o, nil
}

// ping checks the server answers; on a cluster, every primary.
func ping(ctx context.Context, rdb redis.UniversalClient) error {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
	}
	return rdb.Ping(ctx).Err()
}

// nodeFor returns the client of the server holding key: the Store's own
// client, or on a cluster the client of the key's primary. Blocking reads
// run on a connection of it, so CLIENT UNBLOCK can reach that connection.
func (s *Store) nodeFor(ctx context.Context, key string) (*redis.Client, error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, key)
	case *redis.Client:
		return c, nil
	default:
		return nil, fmt.Errorf("unsupported client %T", s.rdb)
	}
}
