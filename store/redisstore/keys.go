package redisstore

// Every key the store touches is built here. All of them start with the hash
// tag "{prefix}", so on Redis Cluster they share one slot and each Lua
// script may touch any of them.

// keys builds the names of one store's keys from its prefix.
type keys struct {
	tag string // "{prefix}"
}

func newKeys(prefix string) keys { return keys{tag: "{" + prefix + "}"} }

// request is a hash: body (the Request's JSON without Card and Decision),
// card, decision (JSON, absent while pending), session, kind, tool.
func (k keys) request(id string) string { return k.tag + ":req:" + id }

// pending is a sorted set of undecided request ids scored by CreatedAt in
// microseconds.
func (k keys) pending() string { return k.tag + ":pending" }

// session is the Session's JSON.
func (k keys) session(id string) string { return k.tag + ":sess:" + id }

// thread maps a Slack thread to the id of the session living in it.
func (k keys) thread(channel, ts string) string { return k.tag + ":thread:" + channel + ":" + ts }

// starter is the set of ids of the sessions a Slack user started, so their
// active sessions are counted without a scan. Ids of sessions that no
// longer exist are dropped when they are next counted.
func (k keys) starter(user string) string { return k.tag + ":starter:" + user }

// inbox is a list of the session's queued Input JSON, oldest first.
func (k keys) inbox(sessionID string) string { return k.tag + ":inbox:" + sessionID }

// ready is a list of session ids with input and no owner, each at most once.
func (k keys) ready() string { return k.tag + ":ready" }

// owner holds the name of the worker that owns a session.
func (k keys) owner(sessionID string) string { return k.tag + ":owner:" + sessionID }

// owned is the set of session ids a worker owns.
func (k keys) owned(worker string) string { return k.tag + ":owned:" + worker }

// owners is the set of workers that own at least one session, so dead
// ones are found without a scan.
func (k keys) owners() string { return k.tag + ":owners" }

// heartbeat exists while a worker is alive: each beat sets it with the
// worker's ttl, and it expires on the server when the beats stop.
func (k keys) heartbeat(worker string) string { return k.tag + ":hb:" + worker }

// events is the stream the Bus publishes to; one field "e" holds the Event's JSON.
func (k keys) events() string { return k.tag + ":events" }

// audit is the append-only audit stream; one field "a" holds the AuditEntry's JSON.
func (k keys) audit() string { return k.tag + ":audit" }

// decided is the pub/sub channel a request's Decision is published on
// (payload: the Decision's JSON). Channels are not keys, but they share the
// prefix so one pattern subscription covers one store.
func (k keys) decided(id string) string { return k.tag + ":decided:" + id }

// decidedPattern matches every decided channel of this store.
func (k keys) decidedPattern() string { return k.tag + ":decided:*" }

// requestIDFromChannel returns the request id a decided channel names.
func (k keys) requestIDFromChannel(channel string) (string, bool) {
	p := k.tag + ":decided:"
	if len(channel) < len(p) || channel[:len(p)] != p {
		return "", false
	}
	return channel[len(p):], true
}

// dedup marks a key FirstSeen has seen; it expires with the caller's ttl.
func (k keys) dedup(key string) string { return k.tag + ":dedup:" + key }

// answer is a remembered answer's JSON (store.RememberedAnswer).
func (k keys) answer(id string) string { return k.tag + ":answer:" + id }

// answerIndex maps a scope and a question form's fingerprint to the id of
// the answer remembered for them.
func (k keys) answerIndex(scopeKey, fingerprint string) string {
	return k.tag + ":answeridx:" + fingerprint + ":" + scopeKey
}

// answers is a sorted set of remembered answer ids scored by when they
// were remembered (unix microseconds), for listing them without a scan.
func (k keys) answers() string { return k.tag + ":answers" }
