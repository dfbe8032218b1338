package redistest

import (
	"os"
	"testing"
)

// URL is the Redis server the integration tests share, REDIS_URL, which
// .ci/with-redis.sh starts (make test runs under it). Unset, the test is
// skipped saying how to run it, or fails when integration tests are
// required (SLACKGATE_REQUIRE_INTEGRATION=1 or CI=true).
func URL(tb testing.TB) string {
	tb.Helper()
	return fromEnv(tb, "REDIS_URL", "a private redis-server")
}

// ClusterURL is URL for the 3-node Redis Cluster, REDIS_CLUSTER_URL.
func ClusterURL(tb testing.TB) string {
	tb.Helper()
	return fromEnv(tb, "REDIS_CLUSTER_URL", "a private 3-node Redis Cluster")
}

// fromEnv returns the variable name, or skips tb (fails it when
// integration tests are required) naming what .ci/with-redis.sh starts.
func fromEnv(tb testing.TB, name, what string) string {
	tb.Helper()
	if url := os.Getenv(name); url != "" {
		return url
	}
	msg := name + " is not set; run the tests under .ci/with-redis.sh, which starts " + what +
		" (make test does; e.g. .ci/with-redis.sh go test -race ./store/redisstore/)"
	if required() {
		tb.Fatal(msg)
		return ""
	}
	tb.Skip(msg)
	return ""
}

// required reports whether tests that need Redis must fail, rather than
// skip, when it is missing.
func required() bool {
	return os.Getenv("SLACKGATE_REQUIRE_INTEGRATION") == "1" || os.Getenv("CI") == "true"
}
