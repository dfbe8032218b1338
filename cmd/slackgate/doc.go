// Command slackgate runs Claude Code headless and puts every prompt it asks on a Slack card.
//
//	slackgate run       the Slack bot and a Claude Code worker in one process (embedded store, or Redis)
//	slackgate bot       only the Slack side; any number of them on one REDIS_URL
//	slackgate worker    only the Claude Code side; any number of them on one REDIS_URL
//	slackgate keygen    print a decision key pair: DECISION_SIGNING_KEY (bots), DECISION_VERIFY_KEY (workers)
//	slackgate audit     the audit log as JSON lines [-after ID] [-limit N];
//	                    audit verify [-from ID] [-file F] [-expect SEQ:HASH] [-allow-unsealed] checks its
//	                    chain, signed checkpoints and anchors (AUDIT_CHANNEL, DATA_DIR);
//	                    audit export [-since T] [-until T] [-channel C] [-user U] [-tool NAME]
//	                    [-outcome O] [-format jsonl|csv] writes a period of it;
//	                    audit reset -reason WHY [-by NAME] acknowledges a break, signed and logged
//	slackgate answers   list [-json] | forget [-by NAME] ID: the remembered answers
//	slackgate rules     list [-json] | forget [-by NAME] ID: the grants from cards
//	slackgate doctor    [run|bot|worker]: check what that command needs, one ✓/✗ line each
//	slackgate hook      a Claude Code hook asking through a bot's approval API [-wait D];
//	                    hook install [-write FILE] [-wait D] [-command PATH] prints or merges its settings
//	slackgate mcp       an MCP stdio server whose tool "approve" is a permission prompt tool
//	slackgate policy    check [FILE] | explain -tool T -input JSON ...: the team policy file, offline
//	slackgate version   the version and the commit it was built from
//
// Every command answers -h, -help and --help (and `slackgate help COMMAND`)
// with its usage (help.go), without reading its configuration or acting.
//
// The commands that read the store (audit, answers, rules, doctor) open the one
// the service uses: REDIS_URL, or DATA_DIR once `slackgate run` has
// stopped, since the embedded file takes one process at a time.
//
// What run, bot and worker check before they start is one list
// (preflight.go): the configuration, the decision keys, the Slack
// settings and team policy, the working directories, CLAUDE_USER, the
// files the CLI reads and the credential it would use (relay.CheckLogin).
// A command refuses to start at the first that fails; doctor prints each
// as a ✓/✗ line, with checks of its own between (auth.test and the
// manifest's scopes, Socket Mode, a store round trip, CLAUDE_BIN
// --version), so it passes only what a start would.
//
// Before anything else, main locks the process down (lockdown): not
// dumpable, so a process of the same user reads neither its environment
// nor its memory, and no ambient or inheritable capabilities, so what it
// starts inherits none of those it may hold for CLAUDE_USER.
//
// # Configuration
//
// This is the only package that reads configuration (environment
// variables into Config and HookConfig; README.md's table lists each, and
// TestREADMEConfigurationMatchesConfig keeps the two in step), builds
// loggers and picks a store backend. It hands the other packages plain
// config structs, a zerolog.Logger and a store.Store, and runs the bot and
// the worker under one errgroup. A variable that looks like a setting and
// is none (APROVERS) is warned about (misspelt.go). It also serves
// /healthz, /readyz and /metrics (health.go, metrics.go): bot and relay
// know nothing of Prometheus.
//
// # How the parts fit
//
//	                 Slack (Socket Mode or HTTP)
//	                          │   ▲  cards, thread messages, ephemerals
//	                          ▼   │  (every write through the outbox)
//	                 ┌─────────────────┐
//	                 │       bot       │── blocks: render, decode, Slack's limits
//	                 └─────────────────┘
//	CreateSession, Enqueue,   │   ▲   Consume events,
//	Decide, SetCard           ▼   │   GetRequest, GetSession
//	 ┌─────────────────────────────────────────────────────┐
//	 │ store   sessions · input queue · requests/decisions │
//	 │         event bus · audit log · dedup               │
//	 │         boltstore (one machine) │ redisstore (many) │
//	 └─────────────────────────────────────────────────────┘
//	Claim, NextInput,         │   ▲   CreateRequest, Publish,
//	WaitDecision              ▼   │   Decide (expired, cancelled, ended)
//	                 ┌─────────────────┐
//	                 │  relay.Worker   │  one relay.Process per session
//	                 └─────────────────┘
//	                          │   ▲  stream-json: user messages and
//	                          ▼   │  control_response in, events and
//	                 claude -p       control_request can_use_tool out
//
// The packages, and which of ours each may import:
//
//	store                       the vocabulary, the Store contract, signing     (standard library only)
//	store/boltstore             the embedded backend: one bbolt file            store
//	store/redisstore            the Redis backend: server, Sentinel, Cluster    store
//	store/redisstore/redistest  tests: a redis-server to kill and restart       nothing
//	store/storetest             the conformance suite every backend passes      store
//	relay                       the Claude Code side: wire, Process, Worker     store
//	relay/relaytest             tests: a scripted Messages API for the real CLI relay, store
//	relay/relaytest/standin     a stand-in CLI for load runs                    relay, store
//	blocks                      what Slack shows and what a click means; pure   store
//	bot                         the Slack side: transports, sessions, cards     store, blocks, bot/approvalapi, bot/auditsink, bot/decide, bot/outbox, bot/policy
//	bot/approvalapi             the approval API: server, wire and client       store, blocks, bot/outbox
//	bot/auditsink               the audit log beyond the store: seal, deliver   store, blocks, bot/decide, bot/outbox, bot/policy
//	bot/decide                  the one path that signs and settles a request   store, bot/policy
//	bot/outbox                  every write to Slack: paced, in lanes, retried  store
//	bot/policy                  the team policy file; pure                      store
//	bot/fakeslack               tests: an in-process Slack enforcing limits     store, blocks
//	cmd/slackgate               configuration, wiring, the subcommands          everything
//
// The rules, held by architecture_test.go (TestPackagesKeepTheirLayers with
// go list -deps; TestNoLongFunctions: no function outside tests over 80
// lines): dependencies point toward store, and bot and relay never import
// each other (relay does not import blocks either: it does not know
// Slack); nothing imports cmd. store and blocks do no I/O and never log. An
// error is logged once, where it is handled, and wrapped everywhere else.
// Every long-running part is Run(ctx) error, returns nil when ctx ends and
// is started under an errgroup; time that matters comes from an injected
// clock.
//
// # One request, hop by hop
//
// A tool approval, from the CLI's question to its answer, in order:
//
//	relay/conn.go             reads control_request can_use_tool off the CLI's stdout (wire.go)
//	relay/bridge.go           makes it a store.Request (its store.ToolCall) and CreateRequest:
//	                          the store adds request_created to the bus and an audit entry
//	bot/store_events.go       the bot's consumer takes the event and hands it to cards.post
//	bot/decide/standing.go    deny rule, allow rule, grant, remembered answer: one that
//	                          applies settles it now, signed, and one thread line stands for a card
//	bot/cards.go              claims the post on the request (store.CardClaimed), renders it
//	                          (blocks/card.go), posts it through bot/outbox, records it (SetCard)
//	bot/reach.go              copies where approvers look; a reminder, an escalation
//	bot/socket.go, http.go    a click arrives and is acked
//	bot/interactions.go       clicks: the team gate, the answer decoded (blocks/decide.go)
//	bot/decide/who.go         who may decide (May: the rule's approvers, not_self, an
//	                          escalation), one of several approvals counted (Approve)
//	bot/decide/settle.go      signs the decision (store/sign.go) and store.Decide settles it once
//	bot/responseurl.go        the click's response_url shows the outcome; the request_settled
//	                          event edits the card otherwise (cards.outcome)
//	relay/bridge.go           WaitDecision wakes the worker, which verifies the signature and
//	                          the rules it passes on, and writes control_response (conn.go)
//	bot/auditsink/channel.go  the audit entry's line; bot/auditsink seals and publishes the chain
//
// # Tests
//
// The end-to-end tests run the whole program in-process against the real
// Claude Code CLI on relay/relaytest's scripted model, bot/fakeslack, real
// Redis and bbolt on disk. The fault suite (faults_test.go) runs the bot
// and the worker as processes and breaks them; its doc comment lists each
// fault and what it costs. docs_test.go holds README.md and the
// deployment READMEs to the code: the configuration table, links, named
// tests, and the package docs' indexes.
package main
