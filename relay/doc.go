// Package relay is slackgate's Claude Code side: wire codec, CLI processes and the worker.
//
// It owns, from the bottom up: the stream-json wire types and their
// decoding (wire.go: one stdout line in, one typed Message out); Conn, the
// control protocol over an io.Reader and an io.Writer (answering
// can_use_tool and MCP elicitations, sending user messages, interrupts and
// permission-mode changes, withdrawing requests the CLI cancels); Process,
// one spawned `claude -p --input-format stream-json --output-format
// stream-json --permission-prompt-tool stdio`, stopped through exec.Cmd's
// Cancel and WaitDelay; and Worker, which claims sessions from the store
// within MaxSessions, feeds each session's queued inputs to its process,
// turns its output into store events and its requests into store
// requests, expires requests nobody answers, and carries transcripts
// between workers. Other control requests (hook_callback, mcp_message,
// request_user_dialog) are answered with an error, as the SDKs do; the CLI
// sends none while slackgate registers no hooks or SDK MCP servers.
//
// It does not know Slack: it imports store and nothing else of ours, and
// learns about people only through store decisions and inputs.
// Configuration reaches it as a Config from cmd/slackgate.
//
// # What reaches Claude
//
// A worker obeys only its operator and the bots' key (vet.go): it runs a
// session only when its record verifies with VerifyKey, carries an id of
// the form bots make, is no approval API session and asks for one of
// AllowedDirs; it delivers an input only when it verifies, belongs to the
// session and was not delivered before; it acts on a person's decision only
// when it verifies too, over the request as the worker made it, and hands
// Claude Code no permission update but one of that request's own
// suggestions; it switches a process's permission mode only for a switch
// signed for that process, within store.ModeSwitchTTL. What it refuses is
// not run, the thread is told why (EventRefused) and the audit log
// records it.
//
// The CLI reads no settings, MCP servers, slash commands or auto memory but
// what the operator named (ProcessOptions.Args, cliDefaults), since
// whatever a session can write must not change what a later one allows.
// Opting into setting sources trusts whoever can write there: project and
// local trust anyone who can get a file into the repository (a pushed
// branch, an approved git pull) to allow tools and run hooks with no card;
// user trusts every earlier session, whose approved commands can write
// ~/.claude.
//
// Its environment is an allowlist (env.go, ClaudeEnv): what a shell and the
// CLI need, ANTHROPIC_*, CLAUDE_CODE_*, the proxy and certificate
// variables, a cloud provider's credentials only when the CLI is told to
// use that provider, and the names the operator adds; slackgate's own
// settings never pass. With Config.User the CLI and every command it
// starts run as another OS user, holding no capability (runas.go).
//
// # Liveness and restarts
//
// Every worker beats a heartbeat into the store every third of
// WorkerTimeout and then looks for workers whose heartbeat lapsed
// (liveness.go). It takes each of their sessions over in one atomic step
// (Store.TakeOver: of several racing, one wins), ends its pending requests
// (LostMessage), marks it idle and releases it, so the next reply resumes
// it anywhere with --resume. A worker cut off that comes back finds its
// sessions gone and acts on them no more.
//
// A worker that stops cleanly ends the requests of a turn in progress,
// stops its processes, puts inputs it took but did not deliver back at
// the head of their queues and releases its sessions. One restarted under
// the same WorkerID first ends what its previous life left (Store.Owned):
// pending requests end, the sessions go idle and are released, and each
// thread is told an answer given just before may not have reached Claude.
// A process that dies on its own has its requests ended, and the next
// reply resumes the session.
//
// When every place is taken, a new session does not wait for an idle
// process's timeout: the longest-idle process stops and its session
// resumes later (capacity.go).
//
// # Transcripts
//
// --resume needs the CLI's own record of the session (transcript.go says
// where it lives), so a worker saves it to the store, gzipped, after each
// turn's last message is in it and when the process exits, each time only
// if it changed; and before resuming a session it restores the store's
// copy unless its own file is at least as long. A save runs beside the
// session, never before the answer reaches Slack, and each store call is
// bounded, so a slow store loses only that save. A file over
// MaxTranscriptBytes stays on its worker: a resume elsewhere says in the
// thread that the conversation cannot be resumed there. A worker dying
// mid-turn leaves the conversation as its last finished turn left it.
//
// # Where things live
//
//	wire.go        the stream-json messages, decoded and encoded
//	conn.go        Conn: the control protocol over a reader and a writer
//	process.go     Process: spawning and stopping one claude -p
//	worker.go      Worker: claiming sessions, recovery at start, the chores
//	capacity.go    MAX_SESSIONS: places, idle order, the longest-idle giving way
//	session.go     one process's life for a session, and what it hands back
//	turn.go        a turn's state, for the idle timer and stops
//	mode.go        a permission mode switched from Slack (set_permission_mode)
//	bridge.go      output turned into events; a request waited on and expired
//	request.go     a can_use_tool or elicitation as a store.Request, a decision
//	               as the control_response
//	vet.go         what a worker refuses: unsigned sessions, inputs, decisions
//	liveness.go    heartbeats and taking over a lost worker's sessions
//	transcript.go  saving and restoring a session's transcript
//	env.go         the CLI's environment, an allowlist
//	runas*.go      running the CLI as another OS user, without capabilities
//	login.go       the credential the CLI would use (claude auth status)
//	config.go      Config and its defaults
//	store.go       what the worker reads and writes in the store (Store)
package relay
