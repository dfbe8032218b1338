// Command slackgate runs Claude Code headless and puts every permission
// prompt and question it asks into Slack, where people answer with a tap.
//
//	slackgate run      Slack bot and Claude Code worker in one process (embedded store, or Redis)
//	slackgate bot      only the Slack side (needs REDIS_URL)
//	slackgate worker   only the Claude Code side (needs REDIS_URL)
//	slackgate audit    the audit log as JSON lines; audit verify checks its chain, audit export writes a period
//	slackgate keygen   print a decision signing key pair for bots and workers
//	slackgate policy   check the team policy file, or explain what it does with a request
//
// Before anything else, main locks the process down (lockdown): not
// dumpable, so a process of the same user reads neither its environment
// nor its memory, and no ambient or inheritable capabilities, so what it
// starts inherits none of those it may hold for CLAUDE_USER.
//
// It is the only package that reads configuration (environment variables,
// into Config), builds loggers and picks a store backend; it hands the other
// packages plain config structs, a zerolog.Logger and a store.Store, and runs
// the bot and the worker under one errgroup. Nothing imports it. Its tests
// run the whole program in-process against the real Claude Code CLI and
// bot/fakeslack, and hold the import rules (architecture_test.go).
package main
