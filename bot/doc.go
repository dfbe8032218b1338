// Package bot is slackgate's Slack side: Socket Mode and HTTP transports around one handler set, sessions started from Slack, the store events shown in threads, the outbox every write goes through, and the approver checks on every decision.
//
// It does not speak to Claude Code and never imports relay: it records
// sessions and inputs in the store and shows what the store's events say.
// It does not render or decode Block Kit itself (blocks does), and keeps
// nothing durable of its own: what must survive a restart or be shared by
// replicas (sessions, cards, decisions, seen Slack retries) is in the
// store. Configuration reaches it as a Config from cmd/slackgate.
package bot

// Where things live:
//
//	bot.go           Bot, New, Run; tasks (the work done after an ack)
//	config.go        Config and its checks
//	socket.go        the Socket Mode transport
//	http.go          the HTTP transport (signed requests, /healthz)
//	slack_events.go  Slack → bot: Events API handlers (mentions, DMs,
//	                 thread replies) and /claude; starting and continuing
//	                 sessions (each session and input signed, as workers
//	                 run only what verifies)
//	dedup.go         Events API redeliveries seen once across replicas
//	api*.go          the approval API (api.go says what it grants a
//	                 token); apilimits.go its per-token limits and
//	                 per-key locks, apiexpire.go the expiry of requests
//	                 whose client stopped polling
//	interactions.go  clicks and modal submissions; the one decide pipeline
//	                 both go through (decision)
//	approvers.go     who may decide or stop (approvers, guarded, Bot.may)
//	teams.go         only the installation's team (and ALLOWED_TEAMS) act
//	stop.go          Stop from the status message or a "stop" reply
//	store_events.go  store → Slack: the bus consumer; what Claude said and
//	                 did
//	cards.go         every request's card: posted once (a claim in the
//	                 store), found in its thread, adopted at a click, its
//	                 outcome shown; who acknowledges what, and when
//	answers.go       remembered answers: kept (signed) when an approver
//	                 answers with "Always answer this way", used when the
//	                 same question's request arrives and the answer
//	                 verifies, the App Home and Forget
//	reconcile.go     cards lost in a crash posted at start and every 30 s
//	status.go        the one status message per session (statusBook)
//	outbox.go        every post and edit: paced, coalesced, retried
//	ephemeral.go     messages only one person sees
//	render.go        adapters to package blocks, the only look of things
//	auditseal.go     signed checkpoints of the store's audit chain
//	clock.go         the injectable clock
//
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
// The store's "bot" consumer group starts at the oldest event still in the
// log the first time any bot runs, and resumes where it left off after
// that, so no event is missed whenever the bot starts. Events API
// deliveries are deduplicated by event_id in the store (FirstSeen), so a
// Slack retry runs once even when it reaches another replica.
//
// Who may do what: first, only people of the workspace the bot token
// belongs to act through the bot, unless ALLOWED_TEAMS lists their
// workspace (T…) or organization (E…); people of Slack Connect and shared
// channels are refused (teams.go). Then STARTERS may start a session
// (mention, DM, /claude): the APPROVERS unless set, * for anyone. A
// session's starter and APPROVERS may continue it (a reply in its thread)
// and stop it; only APPROVERS decide request cards and forget remembered
// answers. APPROVERS is required; * lets anyone who can see a card decide.
//
// Stopping Claude: the status message offers Stop (with a confirm dialog)
// while Claude works or waits, and a thread reply that is just "stop"
// (any case, with or without the bot's mention) does the same. Only the
// session's starter and APPROVERS may stop it; everyone else is told who
// may. A stop is a store.ControlInterrupt input on the session's queue, so
// it reaches whichever worker runs the session; the thread then says
// "Stopped by <@…>" and the pending cards end cancelled.
