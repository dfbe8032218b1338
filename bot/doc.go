// Package bot is slackgate's Slack side: transports, sessions, cards, the outbox and who may act.
//
// It serves Socket Mode and HTTP around one handler set, starts and
// continues sessions from Slack, shows what the store's events say in
// threads, sends every write through one paced outbox, and checks who may
// act on every message and click. It never imports relay and does not
// speak to Claude Code: it records sessions and inputs in the store. It
// renders and decodes no Block Kit itself (blocks does), and keeps nothing
// durable of its own: sessions, cards, decisions and seen Slack retries
// live in the store, so replicas share them and a restart loses nothing.
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
//     distinct people (not_self: never the session's starter, nor an API
//     token's owner). Each approval but the last is kept on the request,
//     signed (store.Approvals); the last settles it with a decision that
//     names them all, the input the first approver edited, and no
//     "Always allow" (one person's word would let the next one through).
//     An approval the bot cannot verify counts for nothing and is not shown.
//   - an approval API token (API_TOKENS) may create, poll and withdraw its
//     own requests and report tool runs, nothing more (api.go); a token
//     whose channel is a person's DM grants that person nothing.
//
// Anyone else is told, privately, who may; nothing is started, queued or
// changed. A message over MAX_PROMPT_BYTES, or a reply while
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
// decoded by blocks into a store.Decision, signed and passed to
// store.Decide, which settles a request exactly once; a click that loses
// gets the winning decision and the person is told who decided. The
// outcome of a click replaces the card at once through the click's
// response_url (a modal's, through the click that opened it), which
// spends no chat.update budget; the request_settled event makes a bot
// edit the card in place for every other decision, and for a click whose
// response_url failed (responseurl.go).
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
// # Slack's budgets
//
// The outbox spends budgets modelled on Slack's documented limits
// (budget.go): chat.postMessage per channel, chat.update per workspace, a
// 429's Retry-After over both (a click's response_url spends neither), and one edit per live message (status line,
// progress) every SLACK_LIVE_EDIT_INTERVAL. Writes have lanes: cards and
// their outcomes first, then what Claude said, then status and progress; a
// lower lane leaves tokens for the ones above, and a thread keeps its
// order within a lane. Edits of one message coalesce to the newest state,
// an edit equal to what Slack shows is not sent, and tool uses that ran
// without asking fold into one progress message per turn. Nothing is
// dropped: short budgets make the lowest lanes wait or fold.
//
// # The team policy
//
// With POLICY_FILE, the bot evaluates every request where its card would
// be posted (Bot.verdict, cards.post), so the stdio worker, the approval
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
//     remembered answers, a card a person would answer;
//  2. an allow rule settles tool calls and plans (a question or an MCP
//     form needs an answer no rule can give: it goes on);
//  3. a remembered answer answers a question;
//  4. otherwise a card asks (the ask rule's people, or APPROVERS).
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
// The App Home lists the answers with Forget for approvers.
//
// # Grants
//
// The card's "Approve and allow…" menu offers, beside Claude Code's own
// session rule, the same rules kept by slackgate (grants.go): for 1 hour
// in this session, or in this repository until forgotten. A grant is
// signed by the bot (store.Grant) and, while live, decides a tool call one
// of its rules allows (matched as a policy allow rule) before any card:
// a signed allow naming the grant, audited, and one thread line. Only
// where no policy rule matched: a deny rule always wins, and a rule's
// approvers are never stood in for. A grant that does not verify, or whose
// adder is no longer an approver, decides nothing.
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
// reach sweeper (runReach) lists pending requests at start, when the next
// step falls due and every ReconcileInterval; each reminder and escalation
// is claimed once across replicas and restarts (MarkReach), audited, and
// shown on the card. Who it was escalated to may decide it once the store
// says so and the bot's own clock agrees the time has come.
//
// # Where things live
//
//	bot.go           Bot, New, Run; tasks (the work done after an ack)
//	config.go        Config and its checks
//	socket.go        the Socket Mode transport
//	http.go          the HTTP transport (signed requests, replays, /healthz)
//	slack_events.go  Events API handlers (mentions, DMs, replies) and /claude:
//	                 starting and continuing sessions, signed
//	admission.go     the checks in front of a new session (size, place, quota)
//	dedup.go         Events API redeliveries seen once across replicas
//	api.go           the approval API and what it grants a token
//	apicreate.go     POST /v1/requests
//	apitoolresult.go POST /v1/tool-results
//	apitokens.go     API_TOKENS: names, channels, hashed tokens
//	apilimits.go     per-token limits and per-key locks
//	apiexpire.go     expiry of requests whose client stopped polling
//	interactions.go  clicks and modal submissions: the one decide pipeline
//	responseurl.go   a click's outcome through its response_url, and how the
//	                 settled event knows the click showed it
//	approvers.go     who may decide, reply, stop or start (Bot.may)
//	approvals.go     who may decide a request (Bot.mayDecide: the policy's
//	                 approvers, not_self) and approvals of several people
//	verdict.go       the team policy applied now (SetPolicy) and its verdict
//	teams.go         only the bot's team (and ALLOWED_TEAMS) act
//	stop.go          Stop from the status line or a "stop" reply
//	mode.go          the status line's permission mode menu (approvers;
//	                 bypassPermissions only for whom the policy names)
//	store_events.go  store → Slack: the consumer; what Claude said and did
//	cards.go         every request's card: posted once (a claim in the store),
//	                 found in its thread, adopted at a click, its outcome
//	                 shown; who acknowledges what, and when
//	answers.go       remembered answers, the App Home and Forget
//	reach.go         copies of a card where approvers look, one reminder,
//	                 one escalation, and who it was escalated to may decide
//	waiting.go       the App Home's "Waiting for you", republished coalesced
//	grants.go        grants: kept from the card's menu, deciding before a card
//	reconcile.go     lost cards posted at start and every 30 s
//	status.go        the one status message per session
//	outbox.go        every post and edit: paced, in lanes, coalesced, retried
//	budget.go        Slack's budgets as the outbox spends them
//	live.go          messages kept showing their newest state
//	ephemeral.go     messages only one person sees
//	storefailure.go  a failed store call put into words for people and the API
//	render.go        adapters to package blocks
//	metrics.go       what the bot measures (Metrics) and SlackReady
//	auditseal.go     signed checkpoints of the store's audit chain
//	auditchannel.go  AUDIT_CHANNEL: a line per settled request and refusal,
//	                 delivered in order from the audit log (bot/auditsink)
//	store.go         what the bot reads and writes in the store (Store)
//
// Readiness: in Socket Mode the bot is ready once its connection is up
// (fakeslack.WaitConnected in tests); in HTTP mode once GET /healthz
// answers.
package bot
