package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/slackgate/slackgate/relay"
)

// What the Claude Code CLI reads is the operator's decision: by default no
// settings source (relay.ProcessOptions.Args), else the sources named in
// CLAUDE_SETTING_SOURCES, plus the operator's own settings file
// (CLAUDE_SETTINGS) and MCP config (CLAUDE_MCP_CONFIG). Those files must
// stay out of Claude's reach: outside every working directory and the
// CLI's config directory, and, with CLAUDE_USER, not writable by that user,
// since a file Claude can rewrite would let one approved command change
// what every later session allows. CLAUDE_ARGS cannot undo any of it.

// maxClaudeFile bounds what startup reads of an operator's file to check it.
const maxClaudeFile = 4 << 20

// refusedArgs are CLAUDE_ARGS flags that would undo what slackgate decides
// about the CLI, each with what to do instead.
var refusedArgs = map[string]string{
	"--setting-sources":                    "set CLAUDE_SETTING_SOURCES instead",
	"--settings":                           "set CLAUDE_SETTINGS to the settings file instead",
	"--managed-settings":                   "set CLAUDE_SETTINGS to the settings file instead",
	"--mcp-config":                         "set CLAUDE_MCP_CONFIG to the MCP config file instead",
	"--strict-mcp-config":                  "slackgate always passes it",
	"--plugin-dir":                         "a plugin's hooks and MCP servers run without a card; put hooks in CLAUDE_SETTINGS and servers in CLAUDE_MCP_CONFIG",
	"--plugin-dir-no-mcp":                  "a plugin's hooks run without a card; put hooks in CLAUDE_SETTINGS",
	"--plugin-url":                         "a plugin's hooks and MCP servers run without a card; put hooks in CLAUDE_SETTINGS and servers in CLAUDE_MCP_CONFIG",
	"--permission-prompt-tool":             "slackgate answers every permission prompt in Slack",
	"--permission-prompts":                 "slackgate answers every permission prompt in Slack",
	"--permission-mode":                    "set CLAUDE_PERMISSION_MODE instead",
	"--dangerously-skip-permissions":       "it skips every card; set CLAUDE_PERMISSION_MODE=bypassPermissions if that is really meant",
	"--allow-dangerously-skip-permissions": "it lets a session skip every card; set CLAUDE_PERMISSION_MODE=bypassPermissions if that is really meant",
}

// fileArgs are CLAUDE_ARGS flags whose value is a file the CLI loads: it
// must lie where Claude cannot rewrite it, like CLAUDE_SETTINGS.
// --agents also takes inline JSON, which is not a file.
var fileArgs = []string{"--agents", "--system-prompt-file", "--append-system-prompt-file", "--append-subagent-system-prompt-file"}

// checkClaudeArgs refuses CLAUDE_ARGS that hold a refused flag, alone or in
// its --flag=value form.
func checkClaudeArgs(args []string) error {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if why, ok := refusedArgs[name]; ok {
			return fmt.Errorf("CLAUDE_ARGS: %s is slackgate's to set: %s", name, why)
		}
	}
	return nil
}

// argFiles are the files CLAUDE_ARGS names with fileArgs, as flag → path.
func argFiles(args []string) [][2]string {
	var out [][2]string
	for i := 0; i < len(args); i++ {
		name, value, inline := strings.Cut(args[i], "=")
		if !slices.Contains(fileArgs, name) {
			continue
		}
		if !inline {
			if i+1 == len(args) {
				continue // the CLI says what is missing
			}
			i++
			value = args[i]
		}
		if name == "--agents" && strings.HasPrefix(strings.TrimSpace(value), "{") {
			continue
		}
		out = append(out, [2]string{name, value})
	}
	return out
}

// settingSources is CLAUDE_SETTING_SOURCES: the sources the operator lets
// the CLI read, each once, in the CLI's order; none by default.
func (c Config) settingSources() ([]string, error) {
	var out []string
	for src := range strings.SplitSeq(c.ClaudeSettingSources, ",") {
		src = strings.TrimSpace(src)
		switch {
		case src == "":
		case !slices.Contains(relay.SettingSources, src):
			return nil, fmt.Errorf("CLAUDE_SETTING_SOURCES: %q is not a setting source; want a comma-separated list of %s, or nothing (the default) for none",
				src, strings.Join(relay.SettingSources, ", "))
		case !slices.Contains(out, src):
			out = append(out, src)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return slices.Index(relay.SettingSources, a) - slices.Index(relay.SettingSources, b)
	})
	return out, nil
}

// validateClaude is validate's share for what the CLI reads: what can be
// said without looking at the disk.
func (c Config) validateClaude() []error {
	var errs []error
	if _, err := c.settingSources(); err != nil {
		errs = append(errs, err)
	}
	for name, path := range map[string]string{"CLAUDE_SETTINGS": c.ClaudeSettings, "CLAUDE_MCP_CONFIG": c.ClaudeMCPConfig} {
		if path != "" && !filepath.IsAbs(path) {
			errs = append(errs, fmt.Errorf("%s=%s: must be an absolute path (the CLI runs in each session's working directory)", name, path))
		}
	}
	if args, err := splitArgs(c.Args); err == nil {
		if err := checkClaudeArgs(args); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// claudeFile is one operator file the CLI loads.
type claudeFile struct {
	name, path string
	check      func([]byte) error // what its content must be; nil for any
}

// claudeFiles are the operator's files the CLI loads, under cfg.
func claudeFiles(cfg Config) []claudeFile {
	var out []claudeFile
	if cfg.ClaudeSettings != "" {
		out = append(out, claudeFile{"CLAUDE_SETTINGS", cfg.ClaudeSettings, settingsFile})
	}
	if cfg.ClaudeMCPConfig != "" {
		out = append(out, claudeFile{"CLAUDE_MCP_CONFIG", cfg.ClaudeMCPConfig, jsonObject("mcpServers")})
	}
	args, _ := splitArgs(cfg.Args) // validated by loadConfig
	for _, f := range argFiles(args) {
		out = append(out, claudeFile{"CLAUDE_ARGS " + f[0], f[1], nil})
	}
	return out
}

// settingsFile checks the operator's settings: one JSON object, and a
// sandbox that keeps asking. Claude Code 2.1.197 runs every sandboxed Bash
// command without asking unless sandbox.autoAllowBashIfSandboxed is false
// (2.1.330 asks by default), so an enabled sandbox must say which it means.
func settingsFile(data []byte) error {
	if err := jsonObject("")(data); err != nil {
		return err
	}
	var s struct {
		Sandbox struct {
			Enabled   bool  `json:"enabled"`
			AutoAllow *bool `json:"autoAllowBashIfSandboxed"`
		} `json:"sandbox"`
	}
	if json.Unmarshal(data, &s) == nil && s.Sandbox.Enabled && s.Sandbox.AutoAllow == nil {
		return errors.New(`enables the sandbox without "autoAllowBashIfSandboxed": set it to false to keep a card for every command (Claude Code 2.1.197 otherwise runs sandboxed commands without asking), or to true if that is what you want`)
	}
	return nil
}

// jsonObject checks that a file is one JSON object, with an object under
// key when key is set.
func jsonObject(key string) func([]byte) error {
	return func(data []byte) error {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(data, &obj); err != nil {
			return fmt.Errorf("not a JSON object: %w", err)
		}
		if key == "" {
			return nil
		}
		var inner map[string]json.RawMessage
		if err := json.Unmarshal(obj[key], &inner); err != nil || inner == nil {
			return fmt.Errorf(`want {"%s": {"name": {…}, …}}, as claude --mcp-config takes`, key)
		}
		return nil
	}
}

// checkClaudeFiles proves, before any session, that the operator's files
// exist, hold what the CLI expects, and lie out of Claude's reach: outside
// every working directory and the CLI's config directory, and not
// writable by CLAUDE_USER (runAs), who must be able to read them.
func checkClaudeFiles(cfg Config, runAs *relay.RunAs, environ []string) error {
	var errs []error
	for _, f := range claudeFiles(cfg) {
		if err := checkClaudeFile(f, cfg, runAs, environ); err != nil {
			errs = append(errs, fmt.Errorf("%s=%s: %w", f.name, f.path, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

func checkClaudeFile(f claudeFile, cfg Config, runAs *relay.RunAs, environ []string) error {
	abs, err := filepath.Abs(f.path)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("is not a regular file (%v)", errOrMode(err, fi))
	}
	if f.check != nil {
		data, err := readBounded(real)
		if err == nil {
			err = f.check(data)
		}
		if err != nil {
			return err
		}
	}
	for _, place := range reachable(cfg, runAs, environ) {
		for _, p := range []string{abs, real} {
			if within(place.dir, p) {
				return fmt.Errorf("lies in %s (%s), which Claude can write: one approved command could change what every later session allows. Keep it outside every working directory and the CLI's config directory", place.what, place.dir)
			}
		}
	}
	if runAs != nil {
		return userCannotChange(real, fi, runAs)
	}
	return nil
}

func errOrMode(err error, fi os.FileInfo) any {
	if err != nil {
		return err
	}
	return fi.Mode().Type()
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxClaudeFile+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(data) > maxClaudeFile {
		return nil, fmt.Errorf("is larger than %d bytes", maxClaudeFile)
	}
	return data, nil
}

// place is a directory Claude's sessions can write.
type place struct{ what, dir string }

// reachable lists what sessions write without asking anyone beyond a card:
// the working directories, and the CLI's config directory and file under
// its HOME (CLAUDE_USER's, else the one slackgate passes) or
// CLAUDE_CONFIG_DIR. Each is given as configured and with its links
// resolved.
func reachable(cfg Config, runAs *relay.RunAs, environ []string) []place {
	var out []place
	add := func(what, dir string) {
		if dir == "" {
			return
		}
		if abs, err := filepath.Abs(dir); err == nil {
			out = append(out, place{what, abs})
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
				out = append(out, place{what, real})
			}
		}
	}
	for _, d := range workDirs(cfg) {
		add("the working directory", d)
	}
	vars := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	home := vars["HOME"]
	if runAs != nil {
		home = runAs.Home
	}
	if home != "" {
		add("the CLI's config directory", filepath.Join(home, ".claude"))
		add("the CLI's config file", filepath.Join(home, ".claude.json"))
	}
	add("the CLI's config directory (CLAUDE_CONFIG_DIR)", vars["CLAUDE_CONFIG_DIR"])
	return out
}

// within reports whether path is dir or lies under it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// userCannotChange checks that u can read the file at path (fi) but can
// neither write it nor replace it through a directory above it. It reads
// the mode bits (owner, group, others); ACLs are not consulted.
func userCannotChange(path string, fi os.FileInfo, u *relay.RunAs) error {
	if !permits(fi, u, 4) {
		return fmt.Errorf("CLAUDE_USER %s cannot read it; make it readable to that user (e.g. chmod 0644) and writable by root only", u.Name)
	}
	if permits(fi, u, 2) {
		return fmt.Errorf("CLAUDE_USER %s can write it, and so could any command Claude runs; make it root's (chown root: and chmod 0644)", u.Name)
	}
	child := fi
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		di, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("checking %s: %w", dir, err)
		}
		sticky := di.Mode()&os.ModeSticky != 0
		if permits(di, u, 2) && (!sticky || owner(di) == u.UID || owner(child) == u.UID) {
			return fmt.Errorf("CLAUDE_USER %s can write the directory %s and so replace the file; keep it in a directory only root can write", u.Name, dir)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
		child = di
	}
}

// permits reports whether u has the permission bit (4 read, 2 write) on
// fi through its owner, group or others class.
func permits(fi os.FileInfo, u *relay.RunAs, bit os.FileMode) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // unknown: assume the worst
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == u.UID:
		return perm&(bit<<6) != 0
	case st.Gid == u.GID || slices.Contains(u.Groups, st.Gid):
		return perm&(bit<<3) != 0
	default:
		return perm&bit != 0
	}
}

func owner(fi os.FileInfo) uint32 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid
	}
	return 0
}
