// Package fakeslack is an in-process Slack for tests: the Web API, Socket Mode and HTTP delivery, Slack's limits enforced on every message and view, and helpers that act as a person (mention, click, select, submit a modal).
//
// It validates what the bot sends with blocks' validator, the same law the
// renderers are tested against, and records every call so tests assert on
// what a workspace would have shown. Its scope is the Web API methods and
// deliveries the bot uses, not all of Slack. It is test code: nothing
// outside tests imports it.
package fakeslack
