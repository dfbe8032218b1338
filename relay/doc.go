// Package relay is the Claude Code side of slackgate: the stream-json wire
// codec, one claude process per session, and the worker that bridges its
// control requests to the store and the store's decisions back to Claude.
//
// It owns, from the bottom up: the wire types and their decoding (one stdout
// line in, one typed Message out); Conn, the control protocol over an
// io.Reader and an io.Writer (answering can_use_tool and MCP elicitations, sending user messages,
// interrupts and permission-mode changes, withdrawing requests the CLI
// cancels); Process, one spawned `claude -p` whose Conn runs over its pipes
// and which is stopped through exec.Cmd's Cancel and WaitDelay, reading no
// settings, MCP servers, slash commands or auto memory but what the
// operator named (ProcessOptions.Args, cliDefaults), since whatever a
// session can write must not change what a later one allows; and Worker,
// which claims sessions from the store within MaxSessions, feeds each
// session's queued inputs to its process, turns the process's output into
// store events and its can_use_tool and elicitation requests into store requests, expires
// requests nobody answers, saves each session's transcript (the CLI's own
// file) to the store after every turn and restores it before a resume, so
// any worker can resume any session, and at start ends what a previous life
// under the same WorkerID left behind.
//
// A worker obeys only its operator and the bots' key (vet.go): it runs a
// session only when its record verifies with VerifyKey, carries a session id
// of the form bots make, is no approval API session and asks for one of
// AllowedDirs; it delivers an input only when it verifies, belongs to the
// session and was not delivered to the same process before; it acts on a
// person's decision only when it verifies too. What it refuses is not run,
// the thread is told why (EventRefused) and the audit log records it.
//
// It does not know Slack: it imports store and nothing else of ours, never
// bot or blocks, and learns about people only through store decisions and
// inputs. Configuration reaches it as a Config from cmd/slackgate.
package relay
