// Package bot is slackgate's Slack side: transports, sessions, cards and who may act.
//
// It serves Socket Mode and HTTP around one handler set, starts and
// continues sessions from Slack, shows what the store's events say in
// threads, sends every write through one paced outbox (bot/outbox), and
// checks who may act on every message and click. It never imports relay and does not
// speak to Claude Code: it records sessions and inputs in the store. It
// renders and decodes no Block Kit itself (blocks does), and keeps nothing
// durable of its own: sessions, cards, decisions and seen Slack retries
// live in the store, so replicas share them and a restart loses nothing.
// The one exception is what a bot remembers of the audit chain it sealed
// (AuditAnchor, in DATA_DIR): evidence must not live only in the store it
// watches.
// Configuration reaches it as a Config from cmd/slackgate.
//
// # Who may do what
//
// First, only people of the workspace the bot token belongs to act, unless
// ALLOWED_TEAMS lists their workspace (T…) or organization (E…); people of
// Slack Connect and shared channels are refused before any other check
// (teams.go). Then, each checked on every message and click (Bot.may):
//
//   - start a session (mention, DM, /claude): STARTERS, which defaults to
//     APPROVERS; * for anyone. Only in ALLOWED_CHANNELS when set, in DMs
//     only with ALLOW_DMS, and at most MAX_SESSIONS_PER_USER at once.
//   - reply in a session's thread (and so use its "Always allow" grants),
//     or stop it: the session's starter and APPROVERS.
//   - decide a card, remember or forget an answer: APPROVERS only; * lets
//     anyone who can see the card decide. APPROVERS is required. A policy
//     rule's ask names its own approvers instead, and may need count
//     distinct people (not_self: never the session's starter, anyone whose
//     thread message the asking turn answers, nor an API token's owner;
//     with such a rule every token must name one). Each approval but the
//     last is kept on the request,
//     signed (store.Approvals); the last settles it with a decision that
//     names them all, the input the first approver edited, and no
//     "Always allow" (one person's word would let the next one through).
//     An approval the bot cannot verify counts for nothing and is not shown.
//   - an approval API token (API_TOKENS) may create, poll and withdraw its
//     own requests and report tool runs, nothing more (bot/approvalapi);
//     a token whose channel is a person's DM grants that person nothing.
//
// An allow also needs the session's record to verify: it says which
// rules ask whom and who started it. Anyone else is told, privately, who
// may; nothing is started, queued or changed. A message over MAX_PROMPT_BYTES, or a reply while
// MAX_QUEUED_INPUTS already wait, is refused the same way, saying the limit.
//
// # Flows
//
// A mention, DM, reply or /claude is acked at once; an Events API retry
// runs once even on another replica (store.FirstSeen on the event id). A
// new thread gets a signed store.Session and its prompt is enqueued,
// signed; a reply is enqueued as a follow-up. The status line is posted.
//
// The bot consuming a request_created event renders the card, posts it and
// records where with SetCard. A click is acked at once (a modal submission
// is decided before its ack: its errors can only travel in it), checked,
// decoded by blocks into a store.Decision and settled through package
// bot/decide (Settle signs it and passes it to store.Decide, which
// settles a request exactly once); a click that loses
// gets the winning decision and the person is told who decided. The
// outcome of a click replaces the card at once through the click's
// response_url (a modal's, through the click that opened it), which
// spends no chat.update budget (a response_url replaces its message up to
// 5 times in 30 minutes; chat.update's is about 50 edits a minute for the
// workspace, status lines included); the request_settled event makes a
// bot edit the card in place for every other decision, and for a click
// whose response_url failed (responseurl.go).
//
// Which replica writes what to a card is on its request (store.CardState,
// changed by named steps: cards.go). A card's post is claimed for
// CARD_CLAIM_TIMEOUT, so the event path, the reconciler and every replica
// post one card between them. A click claims its outcome before it
// decides, then says whether its response_url showed it; one bot
// announces its copies (reach.go) once; the settled
// event's handler, on whichever replica, edits a card only when no click
// claimed its decision or the click's response failed, and sends the
// event back (errOutcomeNotShown) while a claimed outcome is unsaid, for
// clickGrace at most. The state spares Slack second writes and decides
// nothing: a store writer can only hold a card back or show an outcome
// twice. Within one bot the outbox sends a message's writes one at a time
// and a response replaces an edit of the card still queued; a write that
// showed a card pending is followed by a fresh read
// (cards.settledMeanwhile), so one landing after a click's outcome does
// not put buttons back on a decided request.
//
// The store's "bot" consumer group starts at the oldest event in the log
// and resumes where it left off, so no event is missed whenever a bot
// starts. An event is acknowledged once Slack shows it (a card's once its
// post is on its way), so one a dead bot held is delivered again. A card
// Slack took but nobody recorded is found in its thread before it is
// posted again (cards.go), or adopted at its first click; one that
// never reached Slack is posted by the reconciler once the dead bot's claim
// lapses. Stop (the status line's button, or a reply that is just "stop")
// enqueues a store.ControlInterrupt, so it reaches whichever worker runs
// the session; the thread then says "Stopped by <@…>".
//
// # The approval API
//
// With API_TOKENS the bot builds package approvalapi's Server, which
// serves /v1 (on HTTP mode's routes, or in Socket Mode on a listener of
// its own) and expires requests at their deadlines under Run. The server
// holds no part of the bot: it gets the store, the clock, the signing key
// and the tokens' limits, and apiHost (apihost.go) for what it needs of
// Slack, a session's thread and a tool run's line, and Settle, the one
// way it settles a request no person decided. Its requests reach cards
// like any other, through the events the bot consumes.
//
// # Slack's budgets
//
// Every post, edit, upload and response_url goes through package
// bot/outbox, which spends budgets modelled on Slack's documented limits
// in lanes (cards first) and says how. The bot names a lane for each
// write and keeps two live messages per session there: the status line,
// and the tool uses that ran without asking, folded into one progress
// message per turn (status.go). Short budgets make the lowest lanes wait
// or fold; nothing is dropped.
//
// # The team policy
//
// With POLICY_FILE, the bot evaluates every request before its card is
// claimed (bot/decide's Standing, from cards.post), so the stdio worker, the approval
// API, `slackgate hook` and `slackgate mcp` all meet the same rules: they
// all create requests the bot consumes. The facts are the records': tool
// and input, the session's channel and working directory (an API
// session's is its client's), the API token's name, and Request.Home and
// Request.Resolved, which only the machine Claude runs on knows (the
// worker, the hook and the MCP server resolve before they ask). An allow
// or deny rule settles the request at once, with a decision this bot
// signs naming the rule and the policy file's digest (both also in the
// store's audit entry), and one thread line instead of a card; a deny
// rule's message is what Claude is told. An ask rule's card says which
// rule asks. The order, deliberately:
//
//  1. a deny rule wins over everything slackgate could answer with:
//     grants, remembered answers, a card a person would answer;
//  2. an allow rule settles tool calls and plans (a question or an MCP
//     form needs an answer no rule can give: it goes on);
//  3. a grant allows a tool call no rule matched (see Grants);
//  4. a remembered answer answers a question;
//  5. otherwise a card asks (the ask rule's people, or APPROVERS).
//
// The facts are only as good as the records, so each is held by a
// signature. The session's (channel, directory, token) by the session's:
// an allow by rule needs it to verify with the bot's key
// (TestPolicyAllowNeedsASessionThatVerifies). The request's by the
// decision's, which covers Home and Resolved: a store writer who rewrites
// them to make a path look like one a rule allows gets the decision
// refused by the worker, which checks it against the request as it made
// it; an API client gets the digest of the facts with each allow
// (approvalapi.Facts) and refuses one made on facts it did not send
// (TestPolicyFactsChangedInTheStoreAreRefused). An API session's
// directory and resolved paths are its client's word, like everything
// a token says: a rule scoped to a repository trusts the token holder. SetPolicy replaces the
// policy whole (a SIGHUP reload in cmd/slackgate); a request is evaluated
// under one policy or the other. Without a policy every request asks
// APPROVERS once.
//
// # Remembered answers
//
// An approver who answers a question card with "Always answer this way"
// (this repository or this channel) keeps the answer, signed (answers.go).
// When the same question form (store.QuestionFingerprint: the tool, every
// header, question, choice kind and option label in order) comes from a
// session in that repository or channel, the bot answers it before any
// card, with a decision signed like any other and one thread line; only
// while who remembered it is still an approver and the answer verifies.
// Through the approval API the repository is the client's directory, and
// only answers remembered through the same token meet it. Tool approvals
// are never remembered (that is "Always allow", per session), nor skips.
// The App Home lists the answers with Forget for approvers. Forgetting
// buries an answer or grant first (a tombstone this bot signs), so a copy
// of its signed record written back into the store decides nothing.
//
// # Grants
//
// The card's "Approve and allow…" menu lists the rule sets Claude
// suggests; a pick opens its second step (a modal), which offers, beside
// Claude Code's own session rule, the same rules kept by slackgate
// (grants.go): for 1 hour in this session, or in this repository until
// forgotten, which confirms first. Only scopes that will apply are
// offered: no grants where a policy rule matches the request. A grant is
// signed by the bot (a store.Standing of kind grant) and, while live, decides a tool call one
// of its rules allows (matched as a policy allow rule) before any card:
// a signed allow naming the grant, audited, and one thread line. Only
// where no policy rule matched: a deny rule always wins, and a rule's
// approvers are never stood in for. A grant that does not verify, or whose
// adder is no longer an approver, decides nothing. Each choice of the menu
// names the suggestion its card rendered (store.SuggestionDigest): a pick
// whose request no longer holds it is refused, so a store writer cannot
// swap the rule after the card was posted; and Claude Code's own session
// rule is offered only where no deny or ask rule could meet what it lets
// run without a card (sessionrules.go). The worker passes only its own
// suggestions on.
//
// # Reaching approvers
//
// A request someone other than its starter must decide is announced once
// its card is recorded: a copy (what, where, for whom, since when, a link
// to the card, Approve and Deny) in NOTIFY_CHANNEL and, with NOTIFY=dm, in
// each approver's DM; a policy rule's ask: says where instead. A copy's
// buttons are the card's, so a click takes the one decide pipeline; every
// copy is recorded on the request (store.Reaches), so whichever replica
// shows the outcome settles them all, in the reach lane below cards. The
// reach sweeper (reacher.run) lists pending requests at start, when the next
// step falls due and every ReconcileInterval; each reminder and escalation
// is claimed once across replicas and restarts (MarkReach), audited, and
// shown on the card. A reminder goes to the card's thread, under each
// channel's copy and as a new DM to each person a copy went to by DM; the
// escalation line to the card's thread: each with Approve and Deny,
// recorded as a copy, so it decides and shows the outcome like one. Each
// says what is left of several approvals, naming who may still give one;
// a person's own DM copy and App Home row say they approved. A tap in the
// App Home is answered there. Who it was escalated to may decide it once the store
// says so and the bot's own clock agrees the time has come, counted from
// when this bot first saw the request (a created_at moved back changes
// nothing).
//
// # Where things live
//
//	bot.go           Bot, New, Run; tasks (the work done after an ack)
//	config.go        Config and its checks
//	socket.go        socketMode: the Socket Mode transport
//	http.go          slackHTTP: the HTTP transport (signed requests,
//	                 replays, /healthz)
//	slack_events.go  slackEvents: mentions, DMs, replies and /claude, starting
//	                 and continuing sessions; inputs, signed
//	admission.go     admission: the checks in front of a new session (size,
//	                 place, quota) and of a message for one
//	dedup.go         Events API redeliveries seen once across replicas
//	apihost.go       the approval API (bot/approvalapi's Server): what it
//	                 needs of Slack (a session's thread, a tool run's line)
//	                 and of the store (Settle); a reply in its threads
//	apitokens.go     API_TOKENS: names, channels, hashed tokens
//	interactions.go  clicks: a click or modal submission on a card, the one
//	                 decide pipeline (decision: one attempt)
//	responseurl.go   a click's outcome through its response_url, and how the
//	                 settled event knows the click showed it
//	approvers.go     who may decide, reply, stop or start (Bot.may)
//	approvals.go     people: what bot/decide's May asks of Slack and the
//	                 config; one of several approvals told to its approver
//	verdict.go       the team policy applied now (SetPolicy) and its verdict
//	teams.go         teamGate: only the bot's team (and ALLOWED_TEAMS) act
//	stop.go          stopper: Stop from the status line or a "stop" reply
//	mode.go          the status line's permission mode menu (approvers;
//	                 bypassPermissions only for whom the policy names; a
//	                 mode that skips prompts only where the policy agrees),
//	                 signed for the process running now
//	store_events.go  consumer: store → Slack, what Claude said and did
//	cards.go         every request's card: posted once (a claim on its request),
//	                 found in its thread, adopted at a click, its outcome
//	                 shown; who acknowledges what, and when
//	answers.go       remembered answers, the App Home and its Forget of
//	                 either kind of standing rule
//	reach.go         reacher: copies of a card where approvers look, one
//	                 reminder, one escalation, and who it was escalated to
//	                 may decide
//	waiting.go       homes: the App Home's "Waiting for you", republished
//	                 coalesced
//	grants.go        grants: kept from the card's menu, deciding before a card
//	sessionrules.go  Claude Code's session rules the policy lets a card offer
//	tombstones.go    graves: forgotten grants and answers, buried so copies
//	                 stay dead
//	reconcile.go     lost cards posted at start and every 30 s
//	status.go        statusLines: the one status message per session and
//	                 the fold of its turn
//	ephemeral.go     ephemerals: messages only one person sees
//	storefailure.go  a failed store call put into words for people and the API
//	render.go        adapters to package blocks
//	metrics.go       what the bot measures (Metrics) and SlackReady
//	auditseal.go     the sealer of the store's audit chain (bot/auditsink),
//	                 its alarm posted by the audit channel's sink
//	auditchannel.go  AUDIT_CHANNEL wired: bot/auditsink's Channel posts a
//	                 line per settled request, refusal and checkpoint, and
//	                 its Follower delivers them in order from the audit log
//	store.go         what the bot reads and writes in the store (Store)
//
// Readiness: in Socket Mode the bot is ready once its connection is up
// (fakeslack.WaitConnected in tests); in HTTP mode once GET /healthz
// answers.
package bot
