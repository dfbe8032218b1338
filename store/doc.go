// Package store is slackgate's vocabulary and where its Slack and Claude Code sides meet.
//
// It is the durable record of sessions and pending control requests, and
// the bus that carries inputs, decisions and session events between bot
// and relay processes, which never talk to each other directly.
//
// It owns the types both sides speak (Request, Decision, Session, Input,
// Event, AuditEntry), the sentinel errors callers test with errors.Is, and
// the Store interface with the contract every backend keeps: above all that
// Decide settles a request exactly once, whoever races it. It also keeps
// the standing rules approvers keep from a card (Standings: a grant,
// slackgate's own "Always allow" for a session or a repository until it
// expires or is forgotten; a remembered answer to a question form, kept
// per repository or channel and keyed by QuestionFingerprint) and the
// signed tombstones of those forgotten, which keep a copy written back
// from counting (Tombstones); and the partial approvals of a request
// several people must approve (Approvals: counted atomically, so of two
// approvals at once exactly one is the last). Each request also records
// how far it reached beyond its card (Reaches: its copies, and its one
// reminder and one escalation, each taken once across processes), and
// how its card fares in Slack (Cards: who posts it, whether a click shows
// its outcome and how that went, who announces its copies), so replicas
// write each card once. The
// card's state only spares Slack a second write: nothing is decided by it,
// and a store writer who sets it can hold a card back or show an outcome
// twice, no more.
//
// Store access is not authority. A bot signs, with its Ed25519 key, every
// record that decides what a worker runs or in whose name: decisions,
// sessions, queued inputs, remembered answers, partial approvals and
// grants (sign.go: one signing core,
// a domain string per kind, so one kind's signature never verifies as
// another's). Workers verify sessions, inputs and decisions; bots verify
// remembered answers. A record written by anyone without the key is
// refused, and the refusal audited. A decision's signature covers the
// request it settles and everything of it that reaches Claude or the audit
// trail, the exact input that will run included (DecisionPayload), and
// names who decided in one group (Decider: a person, a rule, a grant, a
// remembered answer or the system). Its payload is versioned: bots sign
// v2; workers and bots verify v2 and v1, which earlier releases signed
// with one field left out when empty per kind of decider. A forged
// one becomes OutcomeRefused: the audit names the decider it claimed, and
// Claude is told no in slackgate's own words, never the forger's; an
// expired, cancelled or ended decision counts only when the worker made it.
//
// Retention is part of the contract (Store): settled requests and sessions
// at rest expire after RETENTION, the event log is capped, the audit trail
// is trimmed by age only, and remembered answers stay until forgotten.
//
// # Audit chain
//
// The audit log is tamper-evident: every entry carries the hash of the one
// before it, and bots sign checkpoints of the chain's head, so an entry
// changed, removed or inserted by someone with write access to the store
// but not the signing key shows. An auditor can check it without slackgate:
//
//   - An entry's canonical encoding (AuditCanonical) is the bytes
//     "slackgate audit entry v1\n", then, for each field of its JSON
//     object but id, seq, prev and hash whose value is not empty ("",
//     false, 0, absent), sorted by name: the name, "=", the value's length
//     in bytes in decimal, ":", the value, "\n". A value is the string's
//     UTF-8 bytes (a flag "true", a number in decimal); a time (at) is RFC
//     3339 in UTC, its fraction of a second to nanoseconds without
//     trailing zeros ("2026-11-23T10:31:02.5Z", "…:02Z"). The id is left
//     out on purpose: it is where a store keeps the entry, which an export
//     or another backend may change; the sequence number orders entries
//     instead.
//   - Its digest D is SHA-256 of that encoding.
//   - Its hash is SHA-256 of the 104 bytes "slackgate audit chain link
//     v1.0\n" (32 bytes), D, seq as 8 bytes big-endian, and prev (the
//     previous entry's hash as 32 bytes; zeros for seq 1), written as 64
//     lowercase hex digits. Seq counts every entry the chain ever had, so
//     the gap retention leaves is visible and anchored.
//   - A checkpoint (AuditCheckpoint) is an Ed25519 signature with the
//     decision signing key over "slackgate audit checkpoint v2\n", seq
//     in decimal, "\n", the hash of the entry at seq, "\n", the time
//     (RFC 3339, nanoseconds, UTC), "\n", the seq of the checkpoint
//     before it in decimal, "\n", that checkpoint's digest (SHA-256 of
//     the bytes it signed, in hex; 0 and 64 zeros for the first), "\n",
//     and its kind, "\n": "seal", or "reset" for an operator's signed
//     acknowledgment of a break (`slackgate audit reset`), which names the
//     checkpoint it supersedes ("reset-unlinked" when the chain before it
//     did not hold: it is checked from the reset on). Checkpoints so form
//     a chain of their own: one removed or replaced shows in the next. Version 1
//     checkpoints ("…checkpoint v1\n", seq, hash and time only) still
//     verify. Either domain differs from a decision's, so neither
//     signature passes for the other.
//
// The store links an entry where it appends it, atomically with every
// other append: no two entries share a seq. A bot seals (signs a
// checkpoint) once AuditSealEntries entries or AuditSealAfter have gone
// unsealed, and at shutdown, after checking the unsealed entries link up
// from the last checkpoint; entries after the newest checkpoint are
// guarded by the chain alone, which someone with write access can rebuild
// from that checkpoint on. Whoever can write the store can also delete
// the whole log and let a new one grow, so the evidence that it existed
// must live elsewhere too: AuditVerifier takes checkpoints published
// outside the store (Published) and hashes an operator kept (Expect), and
// names a store that falls short of them. Retention cuts the log only at a checkpoint
// whose entries are all due, and keeps that checkpoint, so the kept part
// verifies from it; before the first checkpoint nothing is trimmed.
// AuditVerifier walks a chain and names the first break. AuditSinks keep,
// for each place the log is delivered beyond the store (a Slack channel, a
// webhook), who delivers it now (a claim that lapses) and how far it got
// (a cursor only the claim's holder moves).
//
// # Where things live
//
// One file per concept, each with its types and its part of Store:
//
//	store.go        the sentinel errors, MessageRef, Store and its retention
//	requests.go     Request, ToolCall (one shape for the wire, the record and
//	                the approval API), KindOf, Elicitation, Requests
//	decisions.go    Outcome, Decision
//	decider.go      Decider: who settled a request, in one field
//	suggestion.go   permission suggestions, their digests, CheckPermissions
//	question.go     IsQuestionForm: which questions a card may turn into a form
//	approvals.go    the approvals of a request several people must approve
//	reach.go        a request's copies, reminder and escalation (Reaches)
//	cards.go        a card's state and its steps (Cards), DecisionDigest
//	sessions.go     Session, Sessions
//	queue.go        Input, the control inputs, Queue
//	workers.go      heartbeats and take-overs (Workers)
//	counts.go       the counts the Slack side's limits read (Counts)
//	transcripts.go  a session's transcript (Transcripts)
//	bus.go          Event, Result, Exit, Bus
//	dedup.go        Dedup
//	standing.go     standing rules: grants and remembered answers (Standings)
//	fingerprint.go  QuestionFingerprint: which form a remembered answer answers
//	tombstone.go    the signed tombstones of forgotten ones (Tombstones)
//	audit.go        AuditEntry and its actions, Audit
//	auditinput.go   what an entry records of a request's input
//	auditchain.go   the chain's links and checkpoints (AuditChain)
//	auditverify.go  AuditVerifier
//	auditsink.go    where the log is delivered beyond the store (AuditSinks)
//	secrets.go      masking secrets in what is shown and recorded
//	sign.go         the signing core; signed decisions, sessions and inputs
//	retention.go    the retention defaults
//	clock.go        Clock, the one injected time source
//
// It does not store anything itself: store/boltstore (one machine) and
// store/redisstore (several) implement Store, and store/storetest holds them
// to the contract. It imports only the standard library, does no I/O and
// never logs, so every other package may depend on it and it on none of them.
package store
