// Package policy is the team policy file (POLICY_FILE): which requests need whom; it is pure.
//
// The file says which requests run by themselves, which nobody may run,
// and who, how many and never whom must approve the rest. The package
// parses it, matches requests in Claude Code's permission-rule syntax,
// evaluates them and lints the rules; it does no I/O, never logs and reads
// no clock.
//
// # The file
//
//	rules:
//	  - name: reads
//	    allow: {preset: reads}        # presets.go: git status/diff/log/show, ls, reads below the directory
//	  - name: tests
//	    match: ["Bash(go test ./...)"]
//	    allow: {}
//	  - name: no-pipe-to-shell
//	    match: ["Bash(curl:*)", "Bash(wget:*)"]
//	    deny: {message: "No downloads from the agent; vendor the file instead."}
//	  - name: prod
//	    match: ["Bash(kubectl --context prod*:*)", "Bash(terraform apply:*)"]
//	    channels: ["C0OPS"]           # only sessions in these channels (C…, G…, D…)
//	    repos: ["/srv/payments/**"]   # only working directories inside these
//	    tokens: ["ci"]                # only approval API tokens of these names
//	    ask:
//	      approvers: ["S0SRE", "U0LEE"] # user (U…, W…) and user group (S…) ids, or "*"; default APPROVERS
//	      count: 2                       # distinct people; any deny wins
//	      not_self: true                 # the session's starter / the token's owner never counts
//	      notify: ["C0SRE"]              # channels (C…, G…) or people (U…, W…) also told
//	      remind_after: 10m
//	      escalate_after: 30m
//	      escalate_to: ["S0ONCALL"]
//	modes:
//	  bypassPermissions: ["U0ADMIN"]     # who may pick it from Slack; default nobody
//
// Parse is strict and reports every problem at once, each as
// "file:line: what is wrong": unknown keys, wrong types, a rule without
// exactly one of allow, deny and ask, names used twice, bad match entries
// or globs, ids of the wrong kind, durations, a count of less than one or
// more than the approvers can give. Users count one each; a user group's
// size is known only in Slack, so a list with a group is not limited here
// (the bot checks when it asks), and with not_self one listed user may be
// the starter, so one fewer counts. Aliases (*name) are refused. Warnings
// (a rule an earlier one shadows, with both lines; a tool name no Claude
// Code has) do not stop it. Digest is the file's SHA-256, for audit.
//
// # Evaluation
//
// Evaluate tries the rules in file order; the first whose scope takes the
// request and one of whose entries matches decides. When none does, a card
// asks APPROVERS once, as without a policy. channels, repos and tokens
// each limit a rule when given. A rule with repos meets a request whose
// working directory is unknown, or not resolved, as outside them when it
// allows and inside them when it denies or asks. Claude Code's own
// settings decide first what reaches slackgate at all.
//
// # Matching
//
// Entries use Claude Code's permission-rule syntax, on the input as it
// will run. A bare tool name (or Tool(*)) matches every use of the tool;
// Read and Edit name their families: Read covers Read, Grep, Glob, LS and
// NotebookRead, Edit covers Edit, Write, MultiEdit and NotebookEdit. Only
// Bash, Read, Edit and WebFetch take a pattern. An input that cannot be
// read (not JSON, a field missing, over the bounds) never matches an entry
// with a pattern in an allow rule, and always in a deny or ask rule.
//
//   - Bash(git status) is that command exactly; Bash(npm test:*) and
//     Bash(npm test *) are npm test alone or followed by a blank and
//     anything (not npm testing); other stars are any text
//     (Bash(git * main)); a wildcard rule ending in :* also takes
//     arguments after its match.
//   - Read(path) and Edit(path) are gitignore-style globs (* within a
//     name, ** across directories, ?, [a-z]); a path matches when it or a
//     directory it lies in does. //path and /path are absolute (a policy
//     file has no project root, unlike a settings file), ~/path is below
//     the home of the user Claude runs as, ./path and path below the
//     session's working directory; a path without a slash matches that
//     name at any depth below it, and in deny and ask rules NAME/** any
//     NAME directory below it, as the CLI's deny rules do. .., braces and
//     a leading ! are refused.
//   - WebFetch(domain:example.com) is that host exactly, any port;
//     WebFetch(domain:*.example.com) every host below it (not
//     example.com itself). The URL is read
//     as a browser does: userinfo is not the host
//     (https://example.com@evil.test/ reaches evil.test), numeric IPv4
//     spellings are dotted quads, and a URL with backslashes, spaces or
//     percent-encoding in its host is unknown.
//   - mcp__server matches every tool of that MCP server, as does
//     mcp__server__*; mcp__server__tool one tool.
//
// Paths are placed before matching: ~ is the home, relative paths are
// below the working directory, and . .. and doubled slashes are resolved
// as text, so /srv/app/../../etc/passwd is /etc/passwd and never matches
// Edit(/srv/app/**). Symlinks need the file system of the machine Claude
// runs on, so the caller resolves them (Request.Resolved, filled by
// Request.Resolve) and a path is matched under both its names; one it did
// not resolve never matches an allow rule. A rule anchored at a home or
// working directory the request does not give matches in deny and ask
// rules only. Grep, Glob and LS search a directory: an allow rule must
// take everything in it, a deny or ask rule matches when it may take
// anything in it.
//
// # Compound commands, and where the policy is stricter than the CLI
//
// An allow rule must match every part of a request and a deny or ask rule
// any part, so a request that is only partly allowed asks a person. The
// command is read as bash (mvdan.cc/sh's parser; the worker runs Claude's
// commands in bash, CLAUDE_CODE_SHELL), and its parts are every simple
// command it runs: those joined by ;, &, &&, ||, | and newlines; inside
// ( ), { }, if, while, for and case; inside $(…), `…`, <(…) and >(…),
// also within double quotes, ${…} and unquoted here-documents; the
// command line of sh -c, bash -c, eval, trap, su -c, ssh, watch, env -S
// and sed's e command, and a shell's here-string or here-document (a shell
// reading any other input runs what is known only when it runs); the
// command env, sudo, xargs, find -exec and other wrappers run (the
// wrapper's own part stays, so an allow rule must allow both, where the
// CLI strips xargs). Like the CLI, timeout, time, nice, nohup and stdbuf
// are stripped instead.
//
// An allow rule matches a command only when the reader models all of it
// (shread.go, builtins.go), since what it does not model may run a
// command no text shows: any ${…} but a name, its length or a plain
// default (quotes inside ${…} within double quotes are text to bash);
// arithmetic on a name, [[ ]] comparisons and -v, let and (( )) (a
// name's value is evaluated, subscripts and all); here-document
// delimiters but a plain word, bare or wholly quoted; extended globs,
// function definitions, coproc; and the builtins that evaluate the names
// they are given (printf -v, read, test -v, declare, export, local,
// unset, getopts, wait -p, mapfile) unless each is a plain name, and
// those that run or redefine what later commands run (compgen, complete,
// bind, fc, enable, alias, hash -p). Such a command still reaches deny
// and ask rules with every part the reader found and every plausible
// piece of its text, split at each operator, quote and =.
// TestReaderAgreesWithBash and FuzzReaderAgainstBash run commands in
// real bash and hold the reader to what it ran and wrote.
//
// An allow rule for a program allows its safe use: a part using one of
// the program's own options that write files or run programs
// (progopts.go: git's -c, --output, --ext-diff and --textconv, format-patch
// -o, archive -o, rebase -x; find -delete, -exec and -fprint; sort -o
// and --compress-program; sed -i, -f and its scripts' w, W and e; tar
// -I, --to-command and --checkpoint-action; go -exec, -toolexec and
// -o; make -f, -C, --eval and VAR=value; npm --script-shell and exec;
// uniq and xxd's output operand; rg --pre; fd -x; curl -o and -K; …), or
// an argument known only when it runs in such a program's options,
// matches only a rule that spells the option (Bash(sort -o out.txt:*)).
// The CLI matches text alone, and git diff --output=.git/config writes the
// configuration the next allowed git diff obeys. TestGitOptionsAgreeWithGit
// runs real git. allow: {preset: reads} names a vetted list (presets.go).
//
// An allow rule matches a part as written, words joined by single
// spaces. It never matches a part that redirects output to a file (2>&1
// and >/dev/null are fine), whose program is computed when it runs ($X,
// $(…), globs, {a,b}) or whose wrapper's options are not understood; the
// command xargs runs gets arguments it cannot see, so only a prefix rule
// allows it. Leading VAR=value assignments stay in the text, so only a
// rule naming them allows them.
// A deny or ask rule also tries each part without quotes, assignments and
// redirections, with its program's directory dropped (/bin/rm is rm),
// git without its global options (git -C . push is git push), as it was
// before a wrapper was stripped, and at each place a wrapper's command
// may start; and it matches every part whose program is computed when it
// runs. A command the parser cannot read (unclosed quotes, over
// MaxCommandBytes or the nesting bounds) never matches an allow rule
// except a bare Bash, and matches a deny or ask rule when any piece of it
// split at every operator does. Comments end at the line. `policy check`
// warns of allow rules for programs that run others and of deny rules
// that bundle options (rm -rf is not rm -fr); `policy explain` says, part
// by part, which entry took it or why none did.
//
// Matching is on the text Claude sends, not on what programs do: it does
// not look inside scripts, programs that run others from their own
// configuration (git aliases and hooks, make, npm scripts), interpreters'
// -c or -e code, or Read and Edit paths named in Bash commands (Read and
// Edit rules apply to the file tools only). A deny rule narrows what Claude
// may ask for; it is not a sandbox.
//
// Everything is bounded so a hostile request costs little: MaxInputBytes
// of input, MaxCommandBytes of command, 256 simple commands, nesting 8
// deep, MaxPathBytes of path; patterns of at most 1,024 bytes, 16 stars in
// a command and 8 ** in a path, 200 entries a rule, 1,000 rules a file.
package policy
