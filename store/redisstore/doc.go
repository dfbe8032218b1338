// Package redisstore is the Redis backend of store.Store, for bots and workers
// spread over several processes and machines.
//
// It owns everything Redis-specific: every key name, built in one file
// (keys.go) under one hash tag so a Lua script may touch any of them on Redis
// Cluster; one Lua script per atomic transition (scripts.go), each
// documenting its KEYS, ARGV and reply; a Stream with consumer groups for
// events; pub/sub to wake WaitDecision; blocking list moves for the session
// queue. No call polls with sleeps.
//
// It does not decide what the transitions mean (store's contract does, checked
// by store/storetest) and never logs: errors go back to the caller wrapped
// with what was being done.
package redisstore
