// Package auditsink delivers the audit log beyond the store, in order, and seals it.
//
// The Sealer signs checkpoints of the store's audit chain and holds the
// store to what it remembers of it (sealer.go); the Follower delivers the
// log, entries and checkpoints, to each sink: the Webhook (webhook.go),
// and the Channel, which posts a line of each to the audit channel in
// Slack through the bot's outbox (channel.go). ReadChannel reads those
// lines back for `slackgate audit verify`.
//
// Delivery is at least once: a Follower reads the log from a sink's
// cursor, hands each entry to a Sink (the Channel, the Webhook), and
// moves the cursor only once the sink accepted it.
//
// One replica delivers to a sink at a time: the one holding the sink's
// claim in the store (store.AuditSinks), which it renews while it runs and
// releases when it stops. Every replica runs a Follower; the others look
// at the sink each poll, report its backlog, and take the claim over once
// it is released or lapses (a crashed holder's after the claim's ttl).
// The new holder resumes at the cursor, so the entry the old one was
// delivering when it died may be delivered twice: that is what at least
// once means here, and why every delivery carries the entry's own
// identity (the webhook's Idempotency-Key, the audit channel's block_id).
// A sink that cannot take an entry holds the log there, retrying with
// backoff, and never skips it: the backlog grows and shows (Status).
//
// # The webhook's receiver
//
// The Webhook POSTs each entry, one at a time and in the log's order, and
// each checkpoint once the entries it seals were delivered, as a record
// (store.AuditRecordEntry): a JSON object whose "record" is "entry" (the
// fields of a store.AuditEntry, chain fields included) or "checkpoint"
// (a store.AuditCheckpoint's). A receiver that keeps the bodies one a
// line has a file `slackgate audit verify -file` checks, and the
// checkpoints are the anchors a store writer cannot reach (see store's
// "Audit chain"). Each POST has these headers:
//
//	Content-Type: application/json
//	X-Slackgate-Timestamp: 1763803862            (unix seconds, when sent)
//	X-Slackgate-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//	Idempotency-Key: <the entry's chain hash>     (its store id for an entry from before the chain;
//	                                               "checkpoint-" and its digest for a checkpoint)
//
// A receiver recomputes the HMAC over the timestamp header, a ".", and the
// raw body bytes with the shared secret (AUDIT_WEBHOOK_SECRET), compares it
// with the signature in constant time, and refuses a timestamp more than a
// few minutes from its clock, so a captured request cannot be replayed
// later (a retry is signed anew, with a new timestamp). It answers 2xx once
// the entry is stored, also for an Idempotency-Key it has stored already:
// that is a redelivery, to be acknowledged and dropped. Entries arrive in
// seq order; a seq that skips ahead means older entries were trimmed from
// the store (AUDIT_RETENTION) before they could be delivered. Any other
// answer is retried: a network error, 408, 429 (Retry-After is honoured)
// and 5xx with exponential backoff and jitter; any other status too, but
// logged as an error, since it usually means a wrong URL or secret and the
// log waits at that entry until the receiver takes it. Redirects are not
// followed.
package auditsink
