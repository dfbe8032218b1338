package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackgate/slackgate/bot"
	"github.com/slackgate/slackgate/bot/policy"
)

// policyCmd runs the policy file's commands; neither needs Slack or a
// store, only the file.
//
//	slackgate policy check [FILE]
//	slackgate policy explain -tool T -input JSON [-channel C] [-cwd DIR] [-token NAME] [-home DIR] [-file FILE]
func (p program) policyCmd(args []string, cfg Config) error {
	if len(args) == 0 {
		return errors.New("policy: want `slackgate policy check [FILE]` or `slackgate policy explain -tool T -input JSON …`")
	}
	switch args[0] {
	case "check":
		return p.policyCheck(args[1:], cfg)
	case "explain":
		return p.policyExplain(args[1:], cfg)
	}
	return fmt.Errorf("policy: unknown subcommand %q (want check or explain)", args[0])
}

// loadPolicy reads and parses file, checking ask counts against
// APPROVERS when it is set. Its error lists every problem, one
// file:line a line.
func loadPolicy(file string, cfg Config) (*policy.Policy, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, policy.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", file, err)
	}
	var opts policy.Options
	if strings.TrimSpace(cfg.Approvers) != "" {
		people, err := bot.ParsePeople(cfg.Approvers)
		if err != nil {
			return nil, fmt.Errorf("APPROVERS: %w", err)
		}
		opts.Approvers = people.IDs
		if people.Anyone {
			opts.Approvers = []string{"*"}
		}
	}
	return policy.Parse(file, data, opts)
}

// startPolicy is the POLICY_FILE `run` and `bot` start with (nil when
// unset); a broken file stops them at startup.
func startPolicy(cfg Config) (*policy.Policy, error) {
	if cfg.PolicyFile == "" {
		return nil, nil
	}
	pol, err := loadPolicy(cfg.PolicyFile, cfg)
	if err != nil {
		return nil, fmt.Errorf("config: POLICY_FILE=%s:\n%w", cfg.PolicyFile, err)
	}
	return pol, nil
}

// policyReloader reloads POLICY_FILE into the bot on SIGHUP. A file that
// does not load keeps the policy in force: the log says why, every
// problem with its line, and /readyz names the note policy_reload until a
// reload succeeds (names only: the file's contents stay in the log).
type policyReloader struct {
	file  string
	cfg   Config
	set   func(*policy.Policy)
	hup   chan os.Signal // nil: SIGHUP
	after func(error)    // nil: nobody is told (tests are)
	log   zerolog.Logger

	mu     sync.Mutex
	failed error // the last reload's error; nil after one that worked
}

// Run reloads at each SIGHUP until ctx ends.
func (r *policyReloader) Run(ctx context.Context) error {
	hup := r.hup
	if hup == nil {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			r.reload()
		}
	}
}

func (r *policyReloader) reload() {
	pol, err := loadPolicy(r.file, r.cfg)
	if err != nil {
		r.log.Error().Err(err).Str("file", r.file).Msg("POLICY_FILE not reloaded: the policy in force stays")
	} else {
		r.set(pol)
		for _, w := range pol.Warnings() {
			r.log.Warn().Str("warning", w.String()).Msg("POLICY_FILE warning")
		}
		r.log.Info().Str("file", r.file).Str("sha256", pol.Digest()).Int("rules", len(pol.Rules())).Msg("POLICY_FILE reloaded")
	}
	r.mu.Lock()
	r.failed = err
	r.mu.Unlock()
	if r.after != nil {
		r.after(err)
	}
}

// ready is /readyz's note: failing while the last reload failed.
func (r *policyReloader) ready(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// resolvePaths is what the worker, `slackgate hook` and `slackgate mcp`
// record beside each request for the policy: the real paths, on this
// machine, of the paths tool's input names and of cwd and home.
func resolvePaths(tool string, input json.RawMessage, cwd, home string) map[string]string {
	r := policy.Request{Tool: tool, Input: input, Cwd: cwd, Home: home}
	r.Resolve(filepath.EvalSymlinks)
	return r.Resolved
}

// policyFile is FILE, or POLICY_FILE.
func policyFile(arg string, cfg Config) (string, error) {
	if file := cmp.Or(arg, cfg.PolicyFile); file != "" {
		return file, nil
	}
	return "", errors.New("policy: no file: name one, or set POLICY_FILE")
}

// policyCheck validates the file and prints its rules as understood,
// then any warnings. Every problem goes to stderr as file:line.
func (p program) policyCheck(args []string, cfg Config) error {
	if len(args) > 1 {
		return fmt.Errorf("policy check: one file at most, got %q", args)
	}
	arg := ""
	if len(args) == 1 {
		arg = args[0]
	}
	file, err := policyFile(arg, cfg)
	if err != nil {
		return err
	}
	pol, err := loadPolicy(file, cfg)
	var errs policy.Errors
	if errors.As(err, &errs) {
		fmt.Fprintln(p.stderr, errs.Error())
		return fmt.Errorf("policy check: %d problems in %s", len(errs), file)
	} else if err != nil {
		return err
	}
	var b bytes.Buffer
	describePolicy(&b, pol, cfg)
	_, err = p.stdout.Write(b.Bytes())
	return err
}

// describePolicy writes the rules in order, each entry with what it
// matches, what happens when nothing matches, and the warnings.
func describePolicy(w io.Writer, pol *policy.Policy, cfg Config) {
	fmt.Fprintf(w, "%s: %d rules, sha256 %s\n", pol.File(), len(pol.Rules()), pol.Digest())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, r := range pol.Rules() {
		fmt.Fprintf(tw, "%d. %s (line %d): %s\n", i+1, r.Name, r.Line, r.Describe())
		if s := r.Scope(); s != "" {
			fmt.Fprintf(tw, "     %s\n", s)
		}
		for _, m := range r.Match {
			fmt.Fprintf(tw, "     %s\t%s\n", m, m.Describe())
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "Anything else: %s.\n", approversLine(cfg))
	who := strings.Join(pol.BypassPermissions(), ", ")
	fmt.Fprintf(w, "bypassPermissions from Slack: %s.\n", cmp.Or(who, "nobody"))
	for _, warn := range pol.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	for _, r := range pol.ModeWidensAnywhere(cfg.PermissionMode) {
		fmt.Fprintf(w, "warning: CLAUDE_PERMISSION_MODE=%s runs without asking what rule %q (line %d) is for; run and bot refuse to start so\n", cfg.PermissionMode, r.Name, r.Line)
	}
}

// approversLine says whom a request no rule matches asks.
func approversLine(cfg Config) string {
	if a := strings.TrimSpace(cfg.Approvers); a != "" {
		return "a card asks APPROVERS (" + a + "); one approval is enough"
	}
	return "a card asks APPROVERS; one approval is enough"
}

// explainFlags are the request `policy explain` evaluates.
type explainFlags struct {
	file, tool, input, channel, cwd, token, home string
}

// policyExplain prints which rule decides a request and what happens. It
// builds the request as a session gets it: the working directory of the
// channel (CHANNEL_WORKDIRS, else CLAUDE_WORKDIR), the home of
// CLAUDE_USER (else HOME), paths resolved on this machine.
func (p program) policyExplain(args []string, cfg Config) error {
	var fl explainFlags
	fs := flag.NewFlagSet("policy explain", flag.ContinueOnError)
	fs.SetOutput(p.stderr)
	fs.StringVar(&fl.file, "file", "", "the policy file (default POLICY_FILE)")
	fs.StringVar(&fl.tool, "tool", "", "the tool's name: Bash, Read, Edit, WebFetch, mcp__server__tool …")
	fs.StringVar(&fl.input, "input", "{}", `the tool's input as JSON, e.g. '{"command":"npm test"}'`)
	fs.StringVar(&fl.channel, "channel", "", "the session's Slack channel id")
	fs.StringVar(&fl.cwd, "cwd", "", "the working directory (default: the channel's CHANNEL_WORKDIRS entry, else CLAUDE_WORKDIR)")
	fs.StringVar(&fl.token, "token", "", "the approval API token's name, when the request comes through the API")
	fs.StringVar(&fl.home, "home", "", "the home of the user Claude runs as (default: CLAUDE_USER's, else HOME)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("policy explain: %w", err)
	}
	if fs.NArg() > 0 || fl.tool == "" {
		return errors.New("policy explain: want -tool NAME and -input JSON, and no other arguments")
	}
	file, err := policyFile(fl.file, cfg)
	if err != nil {
		return err
	}
	pol, err := loadPolicy(file, cfg)
	if err != nil {
		return err
	}
	req, err := p.explainRequest(fl, cfg)
	if err != nil {
		return err
	}
	req.Resolve(filepath.EvalSymlinks)
	var b bytes.Buffer
	explain(&b, pol, req, pol.Evaluate(req, time.Now()))
	_, err = p.stdout.Write(b.Bytes())
	return err
}

// explainRequest builds the request the flags describe.
func (p program) explainRequest(fl explainFlags, cfg Config) (policy.Request, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(fl.input), &obj); err != nil || obj == nil {
		return policy.Request{}, fmt.Errorf("policy explain: -input %q is not a JSON object", fl.input)
	}
	req := policy.Request{Tool: fl.tool, Input: json.RawMessage(fl.input), Channel: fl.channel, Token: fl.token, Cwd: fl.cwd, Home: fl.home}
	if req.Cwd == "" {
		dirs, err := bot.ParseChannelWorkDirs(cfg.ChannelWorkDirs)
		if err != nil {
			return req, fmt.Errorf("CHANNEL_WORKDIRS: %w", err)
		}
		req.Cwd = cmp.Or(dirs[fl.channel], cfg.WorkDir)
	}
	if abs, err := filepath.Abs(req.Cwd); err == nil {
		req.Cwd = abs
	}
	if req.Home == "" && cfg.ClaudeUser != "" {
		u, err := user.Lookup(cfg.ClaudeUser)
		if err != nil {
			return req, fmt.Errorf("config: CLAUDE_USER=%s: %w", cfg.ClaudeUser, err)
		}
		req.Home = u.HomeDir
	}
	if req.Home == "" {
		req.Home = environValue(p.environ, "HOME")
	}
	return req, nil
}

// environValue is the value of name in environ ("" when unset).
func environValue(environ []string, name string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// explain writes the request and what the policy does with it.
func explain(w io.Writer, pol *policy.Policy, req policy.Request, v policy.Verdict) {
	fmt.Fprintf(w, "%s (sha256 %.12s…): %s %s\n", pol.File(), pol.Digest(), req.Tool, req.Input)
	token := "no approval API token"
	if req.Token != "" {
		token = "approval API token " + req.Token
	}
	fmt.Fprintf(w, "  channel %s, working directory %s, home %s, %s\n",
		cmp.Or(req.Channel, "(none)"), cmp.Or(req.Cwd, "(unknown)"), cmp.Or(req.Home, "(unknown)"), token)
	defer explainParts(w, pol, req)
	if v.Rule == nil {
		fmt.Fprintf(w, "no rule matches: asks APPROVERS (one approval is enough)\n")
		return
	}
	what := ""
	for _, r := range pol.Rules() {
		if r.Name == v.Rule.Name {
			what = r.Describe()
		}
	}
	fmt.Fprintf(w, "decides: rule %q (%s:%d): %s\n", v.Rule.Name, pol.File(), v.Rule.Line, what)
	fmt.Fprintf(w, "  %s matched %q\n", v.Matcher, v.Subject)
}

// explainParts writes, for a Bash command, what took each part or why
// nothing did, and what of it the reader did not model.
func explainParts(w io.Writer, pol *policy.Policy, req policy.Request) {
	notes, whole := pol.Parts(req, time.Now())
	if whole != "" {
		fmt.Fprintf(w, "not modeled: %s; no allow rule matches the command\n", whole)
	}
	if len(notes) < 2 && whole == "" && (len(notes) == 0 || notes[0].Why == "") {
		return
	}
	for _, n := range notes {
		if n.Rule != "" {
			fmt.Fprintf(w, "  part %q: rule %q (%s)\n", n.Part, n.Rule, n.Matcher)
			continue
		}
		fmt.Fprintf(w, "  part %q: no rule: %s\n", n.Part, n.Why)
	}
}
