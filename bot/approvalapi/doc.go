// Package approvalapi is the approval API: the server the bot runs, its wire and its client.
//
// The API lets Claude Code sessions slackgate did not start (a terminal,
// a CI job, through `slackgate hook` or `slackgate mcp`) put their
// permission prompts and questions on the same cards, before the same
// approvers:
//
//	POST   /v1/requests            create a request; 201 {"id", "status":"pending", ...}
//	GET    /v1/requests/{id}?wait= its state, waiting up to wait (≤ MaxWait) for a decision
//	DELETE /v1/requests/{id}       withdraw it, saying why (Withdrawal)
//	POST   /v1/tool-results        a tool that ran (the hook's PostToolUse): audited, one thread line
//
// The bodies are written once (approvalapi.go), for the Server that
// answers them and the Client that sends them.
//
// Every call carries "Authorization: Bearer <token>" (API_TOKENS, a
// Token each); a request belongs to the token that created it, and
// another token is told it does not exist. Each Claude session id gets
// one store.Session whose thread lives in the token's channel. Such a
// session never has queued input, so no worker ever claims it.
//
// A token is a hook's credential, and the hook runs as the same user as
// the commands Claude runs, so the API grants a token no more than a
// hook's job: create, poll and withdraw its own requests, and report tool
// results in its own sessions. Nothing a token sends decides anything (a
// decision comes only from an approver in Slack, signed, and the server
// returns none that does not verify), and everything it says about itself
// is shown as its claim: the thread's root names the token that reports
// the host, directory and user, and each tool_ran line and audit entry
// names the token that reported it (ReportedBy). Its Limits bound how
// much of Slack, the store and the approvers' attention one token can
// take, and a request expires at its deadline whether or not its client
// still polls (expire.go).
//
// The Server takes only what it uses: a Store (a few of the store's
// methods), the bot's signing key and clock, and a Host, which package
// bot implements over its outbox and Slack client: a session's thread, a
// tool run's line, and Settle, the one way the server settles a request
// no person decided (a withdrawal, an expiry). The card is the bot's: it
// consumes the request_created event like any other request's.
//
// The wire and the client use only store and the standard library; the
// server adds blocks (the words a withdrawal and an audit entry use), the
// outbox's token bucket, and a logger. The package never imports bot.
//
//	approvalapi.go  the wire: bodies, their checks, withdrawals, Facts
//	client.go       Client, for `slackgate hook` and `slackgate mcp`
//	server.go       Server, what it needs (Store, Host), GET and DELETE
//	create.go       POST /v1/requests and a session's thread
//	toolresult.go   POST /v1/tool-results
//	tokens.go       Token, and which sessions are a token's
//	limits.go       Limits, per-key locks, and a failure put into words
//	expire.go       expiry of requests whose client stopped polling
package approvalapi
