// Package storetest is the conformance suite every store.Store backend must pass.
//
// Run(t, newStore) drives a backend through the contract written on the
// store interfaces (Decide exactly once, Claim and NextInput ownership,
// Consume's delivery and redelivery, FirstSeen, the audit log, Close), and
// Bench measures its round trips. Where the contract is silent and backends
// must still agree, this suite is where the agreement is pinned. Clock is
// the fake store.Clock every package's tests move by hand. It is test
// code: nothing outside tests imports it.
package storetest
