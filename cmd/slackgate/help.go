package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
)

// Every command answers -h, -help and --help with its usage, on stdout,
// and does nothing else: not even read its configuration, so help works
// where the environment is wrong. `slackgate help COMMAND` says the same.

// commandHelp is each command's usage, by the words that name it.
// TestEveryCommandAnswersHelp holds each command's flags to its text.
var commandHelp = map[string]string{
	"run": `usage: slackgate run

The Slack bot and a Claude Code worker in one process: on the embedded
store in DATA_DIR, or on Redis when REDIS_URL is set. It reads its
configuration from the environment (README.md lists every variable; make
run reads .env first) and refuses to start, saying what to fix, when a
setting is wrong. SLACK_BOT_TOKEN, SLACK_APP_TOKEN (or
SLACK_SIGNING_SECRET), APPROVERS and a credential for Claude Code are
required. slackgate doctor checks the same without starting.
`,
	"bot": `usage: slackgate bot

Only the Slack side, on REDIS_URL; any number of bots may run against one
Redis. Needs the Slack settings, APPROVERS and DECISION_SIGNING_KEY (from
slackgate keygen).
`,
	"worker": `usage: slackgate worker

Only the Claude Code side, on REDIS_URL; any number of workers may run
against one Redis. Needs DECISION_VERIFY_KEY (from slackgate keygen), the
working directories the bots hand out, at the same paths, and a credential
for Claude Code. It holds no Slack credential.
`,
	"keygen": `usage: slackgate keygen

Print a new decision signing key pair as two lines: DECISION_SIGNING_KEY
goes to the bots, DECISION_VERIFY_KEY to the workers.
`,
	"version": `usage: slackgate version

Print slackgate's version and the commit it was built from.
`,
	"doctor": `usage: slackgate doctor [-offline] [run|bot|worker]

Check what the command (run by default) needs, one line each, and say
what to fix: every check that command makes before it starts, and the
Slack tokens and scopes, Socket Mode, the store and the Claude Code CLI
beside them. A worker skips the Slack checks, a bot the CLI's. Exits 1
when a check fails. make doctor runs it as make run runs slackgate: with
.env, and the CLI make run installed.

  -offline   only the checks that need neither the network nor the CLI
             (the settings, keys, team policy and working directories)
`,
	"audit": `usage: slackgate audit [-after ID] [-limit N]
       slackgate audit verify [-from ID] [-file F] [-expect SEQ:HASH] [-allow-unsealed]
       slackgate audit reset -reason TEXT [-by NAME]
       slackgate audit export [-since T] [-until T] [-channel C] [-user U]
                              [-tool NAME] [-outcome O] [-format jsonl|csv]
                              [-slack-url URL]

Print the store's audit log, oldest first, one JSON object a line: every
request and how it was settled, by whom and when.

  -after ID   print only entries after this id (the last id printed before)
  -limit N    print at most N entries (0, the default: all)

verify, reset and export: slackgate audit verify -h, and so on.
The store is REDIS_URL's, or DATA_DIR's once slackgate run has stopped.
`,
	"audit verify": `usage: slackgate audit verify [-from ID] [-file F] [-expect SEQ:HASH] [-allow-unsealed]

Check the audit chain and the bots' signed checkpoints with
DECISION_VERIFY_KEY (or the public half of DECISION_SIGNING_KEY, or the
key slackgate run keeps in DATA_DIR), and hold the store to what is kept
outside it: AUDIT_CHANNEL's checkpoint lines and the anchor in DATA_DIR.
A break names the first entry changed, removed or inserted.

  -from ID          verify from this entry on, from the checkpoint before
                    it (default: the whole log, from its newest reset)
  -file F           verify an export (slackgate audit export's jsonl, or a
                    webhook receiver's bodies) instead of the store
  -expect SEQ:HASH  the entry at SEQ must have this hash, as a checkpoint
                    line shows it; may be given more than once
  -allow-unsealed   pass a log no checkpoint seals yet (a new installation)
`,
	"audit reset": `usage: slackgate audit reset -reason TEXT [-by NAME]

After a break the bots refuse to seal: acknowledge it with a chain_reset
entry saying who and why and a reset checkpoint signed with
DECISION_SIGNING_KEY (or the key slackgate run keeps in DATA_DIR); the
bots seal again from it.

  -reason TEXT  why the break is acknowledged (required): what was found,
                who looked
  -by NAME      who acknowledges it (default: this OS user)
`,
	"audit export": `usage: slackgate audit export [-since T] [-until T] [-channel C] [-user U]
                              [-tool NAME] [-outcome O] [-format jsonl|csv]
                              [-slack-url URL]

Write the audit entries of a period, for an auditor or a spreadsheet.

  -since T      entries at or after T (RFC 3339, or a date: 2026-11-01 is
                its midnight UTC)
  -until T      entries before T (the same forms)
  -channel C    entries of sessions in this channel (id, C…)
  -user U       entries decided by this Slack user (id, U…)
  -tool NAME    entries about this tool (Bash, Write, mcp__server__tool…)
  -outcome O    allow, deny, expired, cancelled, ended or refused
  -format F     jsonl (the default; audit verify -file checks it) or csv
  -slack-url U  the workspace URL the csv's thread links start with
                (default https://slack.com), e.g. https://acme.slack.com
`,
	"answers": `usage: slackgate answers list [-json]
       slackgate answers forget [-by NAME] ID

The remembered answers ("Always answer this way") in the store.

  list          one row per question; -json: one JSON object a line
  forget ID     forget one (its id from list); -by NAME: who forgets it,
                for the audit log (default cli:<OS user>@<host>)
`,
	"rules": `usage: slackgate rules list [-json]
       slackgate rules forget [-by NAME] ID

The rules approvers allowed from a card (grants) in the store.

  list          one row per grant; -json: one JSON object a line
  forget ID     forget one (its id from list); -by NAME: who forgets it,
                for the audit log (default cli:<OS user>@<host>)
`,
	"policy": `usage: slackgate policy check [FILE]
       slackgate policy explain -tool NAME -input JSON [-file FILE]
                                [-channel C] [-cwd DIR] [-token NAME] [-home DIR]

The team policy file (FILE, or POLICY_FILE), without Slack or a store.

  check      print its rules as understood and its warnings, or every
             problem as file:line (exit 1)
  explain    which rule decides a request, and what happens:
    -tool NAME     the tool: Bash, Read, Edit, WebFetch, mcp__server__tool…
    -input JSON    its input, e.g. '{"command":"npm test"}' (default {})
    -file FILE     the policy file (default POLICY_FILE)
    -channel C     the session's Slack channel id
    -cwd DIR       the working directory (default: the channel's
                   CHANNEL_WORKDIRS entry, else CLAUDE_WORKDIR)
    -token NAME    the approval API token's name, for a request through
                   the API
    -home DIR      the home of the user Claude runs as (default:
                   CLAUDE_USER's, else HOME)
`,
	"hook": `usage: slackgate hook [-wait D]
       slackgate hook install [-write FILE] [-wait D] [-command CMD]

A Claude Code command hook: Claude Code runs it for each permission
prompt (PermissionRequest), question (PreToolUse) and tool that ran
(PostToolUse), with the event on stdin. It puts the prompt on a Slack card
through a bot's approval API (SLACKGATE_URL; the token in
~/.config/slackgate/token or SLACKGATE_TOKEN_FILE) and waits for a person;
then, or on any error, it passes the prompt back to the terminal and says
why on stderr.

  -wait D    how long to wait for a person (default SLACKGATE_WAIT, else
             10m); install puts the one it was given here

install prints the settings block that registers it: slackgate hook
install -h.
`,
	"hook install": `usage: slackgate hook install [-write FILE] [-wait D] [-command CMD]

Print the Claude Code settings block that registers slackgate hook, or
merge it into a settings file, keeping everything else there.

  -write FILE    merge into FILE (~/.claude/settings.json, or a project's
                 .claude/settings.json) and print the file as written
  -wait D        how long the hook waits for a person (default 10m): the
                 block sets SLACKGATE_WAIT in the hook's command and Claude
                 Code's timeout a minute longer
  -command CMD   the command Claude Code runs (default: this binary's
                 path, then hook)
`,
	"mcp": `usage: slackgate mcp

An MCP stdio server whose tool approve is a permission prompt tool, for
unattended runs:

  claude -p --mcp-config FILE --permission-prompt-tool mcp__slackgate__approve

Each prompt becomes a Slack card through a bot's approval API
(SLACKGATE_URL; the token in ~/.config/slackgate/token or
SLACKGATE_TOKEN_FILE); nobody answering within SLACKGATE_WAIT is a deny.
`,
	"help": `usage: slackgate help [COMMAND]

Print the commands, or one command's usage (as COMMAND -h does).
`,
}

// subcommands are the commands whose second word picks a usage of its own.
var subcommands = map[string][]string{
	"audit": {"verify", "export", "reset"},
	"hook":  {"install"},
}

// helpTopic reports whether args ask for help, and about what: "" for the
// list of commands, else a key of commandHelp. -h anywhere before "--"
// asks, as Go's flag package reads it; `help X` asks about X.
func helpTopic(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	if args[0] == "help" && len(args) > 1 && !slices.ContainsFunc(args[1:], func(a string) bool { return !isHelpFlag(a) }) {
		return "help", true // help -h
	}
	if args[0] == "help" || isHelpFlag(args[0]) {
		return topicOf(args[1:]), true
	}
	for _, a := range args[1:] {
		if a == "--" {
			break
		}
		if isHelpFlag(a) {
			return topicOf(args), true
		}
	}
	return "", false
}

func isHelpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// topicOf is the help topic args name: the command, with its subcommand
// when that has a usage of its own.
func topicOf(args []string) string {
	args = slices.DeleteFunc(slices.Clone(args), isHelpFlag)
	if len(args) == 0 {
		return ""
	}
	if len(args) > 1 && slices.Contains(subcommands[args[0]], args[1]) {
		return args[0] + " " + args[1]
	}
	return args[0]
}

// help writes the usage of topic ("" for the list of commands).
func help(w io.Writer, topic string) error {
	if topic == "" {
		_, err := io.WriteString(w, usage)
		return err
	}
	text, ok := commandHelp[topic]
	if !ok {
		return fmt.Errorf("help: no command %q; slackgate help lists them", topic)
	}
	_, err := io.WriteString(w, text)
	return err
}

// Set by -ldflags "-X main.version=… -X main.commit=…" where the build
// has no VCS information to read (deploy/Dockerfile's build sees no .git).
var version, commit string

// versionLine is slackgate's version and commit: what -ldflags set, else
// what Go recorded of the module and the checkout it was built in.
func versionLine() string {
	v, c, modified := version, commit, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if c == "" {
		c = "unknown"
	} else if modified {
		c += " (with uncommitted changes)"
	}
	return strings.Join([]string{"slackgate", v, "commit", c}, " ") + "\n"
}
