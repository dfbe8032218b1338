// Package bot is slackgate's Slack side: Socket Mode and HTTP transports around one handler set, sessions started from Slack, the store events shown in threads, the outbox every write goes through, and the approver checks on every decision.
package bot

// How to run it (cmd/slackgate does this; tests do the same against
// bot/fakeslack):
//
//	b, err := bot.New(bot.Config{
//		BotToken: "xoxb-…",
//		AppToken: "xapp-…",          // Socket Mode; or SigningSecret (+ HTTPAddr or Listener) for HTTP mode
//		APIURL:   fake.APIURL(),     // tests only
//		WorkDir:  "/srv/repo",
//	}, st, log)
//	err = b.Run(ctx) // nil once ctx is cancelled
//
// Readiness: in Socket Mode the bot is ready once its connection is up
// (fakeslack.WaitConnected); in HTTP mode once GET /healthz answers (with a
// Listener bound by the caller, that request simply waits until Run serves).
// Run joins the store's "bot" consumer group before taking traffic, so no
// event published after that point is missed.
//
// Who may do what: anyone in a channel with the bot may start a session
// (mention, DM, /claude) or continue one (a reply in its thread). APPROVERS
// only gates decisions on request cards; an empty list lets anyone who can
// see a card decide it.
