// Package store is slackgate's domain vocabulary and the one place where the
// Slack side (bot) and the Claude Code side (relay) meet: the durable record of
// sessions and pending control requests, and the bus that carries inputs,
// decisions and session events between processes.
//
// It owns the types both sides speak (Request, Decision, Session, Input,
// Event, AuditEntry), the sentinel errors callers test with errors.Is, and
// the Store interface with the contract every backend keeps: above all that
// Decide settles a request exactly once, whoever races it. It also keeps
// remembered answers (Answers: an approver's answer to a question form,
// kept per repository or channel and keyed by QuestionFingerprint).
//
// Store access is not authority. A bot signs, with its Ed25519 key, every
// record that decides what a worker runs or in whose name: decisions,
// sessions, queued inputs and remembered answers (sign.go: one signing core,
// a domain string per kind, so one kind's signature never verifies as
// another's). Workers verify sessions, inputs and decisions; bots verify
// remembered answers. A record written by anyone without the key is
// refused, and the refusal audited.
//
// It does not store anything itself: store/boltstore (one machine) and
// store/redisstore (several) implement Store, and store/storetest holds them
// to the contract. It imports only the standard library, does no I/O and
// never logs, so every other package may depend on it and it on none of them.
package store
