// Package redisstore is the Redis backend of store.Store, for bots and workers on many machines.
//
// It runs on one Redis server, a Sentinel-managed primary or a Redis
// Cluster (url.go lists the REDIS_URL forms).
//
// It owns everything Redis-specific: every key name, built in one file
// (keys.go), hash-tagged per session, per request and per pending-index
// shard so a cluster spreads them, with the few single ordered logs (the
// events and audit streams, the ready list) and the worker bookkeeping in
// one shared slot; one Lua script per atomic step, right above the method
// that runs it and written one way (scripts.go says how), each
// documenting its KEYS, ARGV and reply, all of a script's keys in one slot
// (checked on every call), the audit chain linked by the scripts that append
// to the audit stream (auditchain.go); a Stream with consumer groups for events; pub/sub
// (classic PUBLISH, which reaches every node of a cluster) to wake
// WaitDecision; blocking list moves for the session queue. No call polls
// with sleeps.
//
// A transition whose keys live in several slots is several steps, ordered
// so that a process dying between two leaves a state readers tolerate and a
// later call repairs: index entries are written before their records and
// removed after, and readers check the record (keys.go gives the argument
// in full).
//
// Redis expires records itself: the scripts that settle a request or leave
// a session at rest set the TTL, and the audit stream is trimmed with
// XTRIM MINID as entries are appended.
//
// It does not decide what the transitions mean (store's contract does, checked
// by store/storetest) and never logs: errors go back to the caller wrapped
// with what was being done.
package redisstore
