// Package relaytest runs the real Claude Code CLI offline in tests, on a scripted Messages API.
//
// NewServer is a scripted fake of the Anthropic Messages API, and CLI
// locates the pinned binary.
//
// It is test code: nothing outside tests imports it. It does not fake Claude
// Code itself; the CLI under test is always the real one, pinned in the
// Makefile (CLAUDE_CODE_VERSION) and installed by `make claude-code`. The
// one exception is load: relaytest/standin is a stand-in program speaking
// stream-json that asks a fixed number of approvals a turn, so a benchmark
// can run fifty sessions where fifty real CLIs would not fit; the real CLI
// stays the fidelity check.
//
// # Using it
//
//	bin := relaytest.CLI(t) // CLAUDE_BIN; skips, or fails under SLACKGATE_REQUIRE_INTEGRATION=1 / CI=true
//	srv := relaytest.NewServer(t,
//		relaytest.ToolUse("toolu_1", "Bash", map[string]any{"command": "touch x", "description": "make x"}),
//		relaytest.Text("done"))
//	cmd := exec.Command(bin, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
//		"--verbose", "--permission-prompt-tool", "stdio", "--permission-mode", "default")
//	cmd.Env = srv.Env(t)
//	// ... write a user line, answer can_use_tool ...
//	tr, err := srv.WaitToolResult(ctx, "toolu_1") // what the model was told: tr.Content, tr.IsError
//
// Each Step answers one main /v1/messages call, in order:
//
//   - Text(s): the model says s and ends its turn (stop_reason end_turn).
//   - ToolUse(id, name, input): the model calls one tool (stop_reason tool_use).
//   - Reply{TextBlock(..), ToolUseBlock(..), ToolUseBlock(..)}: several blocks in one
//     message; concurrency-safe tools (Read, AskUserQuestion, ...) then prompt at once.
//   - Func(func(Request) Reply): computed from the request it answers.
//   - WritePlan(id, plan): in plan mode, Write the plan file the CLI named; follow it with
//     ToolUse(id2, "ExitPlanMode", map[string]any{}).
//   - Hold(release, then): keep the call open until release is closed (or the CLI aborts
//     it, e.g. on interrupt), then answer then.
//   - APIError(status, type, message): fail the call; the CLI's retries of the same
//     conversation get the same error without consuming steps.
//
// A main call is one that offers tools: the session's own agent loop, and
// also any subagent it starts (the Agent tool), which therefore consumes
// steps too. Calls without tools (2.1.197's auto-mode classifier, title or
// summary generation) are side calls: they get the text Exhausted ("end")
// and consume nothing. Once the script is exhausted every main call gets
// "end" with end_turn, so a turn always ends. Every call is logged through
// the test (one line: kind, model, tools, messages, last user text).
//
// To assert what reached the model: Requests (decoded main calls: Messages,
// Tools, System, Raw), ToolResult, WaitToolResult, WaitRequests, WaitCall,
// LastUserText, Request.UserTexts. Outbound lists the hosts the CLI tried to
// reach other than the fake (Env routes them to a proxy that refuses);
// Calls lists every HTTP call with its arrival time.
//
// # What the CLI does against the fake (2.1.330 and 2.1.197, as seen here)
//
//   - Endpoints: only POST /v1/messages with "stream": true for the agent
//     loop. 2.1.197 also sends HEAD / at startup to warm the connection
//     (answered 200; it skips it when a proxy is set). Non-streaming calls
//     only as side calls (2.1.197's auto-mode classifier: 5 calls with
//     max_tokens 64, then 5 with 8192, no tools; 2.1.330 makes none in auto
//     mode). No count_tokens and no /api/... calls with Env's variables;
//     the fake answers count_tokens anyway and 404s anything else (logged,
//     Call.Kind "other").
//   - Startup: nothing reaches the API before the first user message
//     (except 2.1.197's HEAD /); the first call carries the prompt. No side
//     calls in default, acceptEdits or plan mode.
//   - Model: the CLI asks for its default model (2.1.330: claude-opus-5-5,
//     max_tokens 128000, 13 tools, most others deferred behind ToolSearch;
//     2.1.197: claude-opus-4-8, max_tokens 64000, 27 tools). The fake
//     answers with the model that was asked for; any name works.
//   - Headers: none needed beyond Content-Type: text/event-stream (checked
//     by dropping request-id and Cache-Control); the fake sends request-id
//     anyway, like the API.
//   - Request shape: messages may contain a "system" role message (both
//     versions append environment or agent context that way); user messages
//     start with <system-reminder> text blocks; consecutive user messages
//     are merged (after an interrupt: "think hard\n", "[Request interrupted
//     by user]\n", "again" in one message).
//   - Offline: without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 both
//     versions open 5–6 connections to api.anthropic.com:443 per run (seen
//     through the recording proxy); with it, none. The proxy variables in
//     Env make a regression visible (Outbound) and fast instead of a hang.
//   - Auto mode (--permission-mode auto) cannot approve risky commands
//     against the fake: 2.1.197 asks its classifier (10 side calls), cannot
//     parse "end" and denies ("Permission for this action was denied by the
//     Claude Code auto mode classifier…"); 2.1.330 runs its check on the
//     server side and denies at once ("Auto mode is unavailable: its safety
//     check does not run for this session…"). Safe commands in the working
//     directory (touch x) run without a prompt or a classifier call.
//   - Errors: a 400 is retried 5 times at once by 2.1.330 (the retries drop
//     ToolSearch deferral: 24 tools), not at all by 2.1.197; then the turn
//     ends with is_error true and exit status 1 once stdin closes.
//   - Resume: --resume <session id> needs the same HOME (Env gives every
//     process of one server the same) and, for 2.1.197, the same working
//     directory; 2.1.330 also found the session from another directory.
//   - Timing: most of a one-command turn is the CLI starting up;
//     TestCLIRunsApprovedBashThroughFake logs each step's time.
//   - AskUserQuestion arrives as can_use_tool with tool_name
//     "AskUserQuestion" and input {questions:[{question, header,
//     options:[{label, description}], multiSelect}]}, identical in both
//     versions (2.1.330 adds "requires_user_interaction": true next to the
//     input). ExitPlanMode takes no input from the model: the model writes
//     the plan file named in the plan-mode instructions
//     ($HOME/.claude/plans/<slug>.md; plan mode allows that Write without
//     asking) and calls ExitPlanMode with {}; the CLI then sends the host
//     input {"plan": <file content>, "planFilePath": <path>}. Without a plan
//     file 2.1.330 sends {} and 2.1.197 passes the model's input through.
//
// # Hermetic runs
//
// Env's private HOME keeps the user's ~/.claude and ~/.claude.json out,
// and a test's own working directory holds no .claude/ or .mcp.json, so a
// run needs no arguments of its own to ignore the machine's settings;
// tests of slackgate run the production arguments (relay's
// ProcessOptions.Args), which read no setting source at all.
// IS_SANDBOX=1 is only needed for bypassPermissions as root. Do not use
// --bare: it cuts the tools to Bash, Edit and Read (checked in both
// versions), so AskUserQuestion and Write disappear.
package relaytest
