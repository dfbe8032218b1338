package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// installNote tells whoever installs the hook where its settings come
// from: never the token in Claude Code's environment.
const installNote = "The hook reads SLACKGATE_URL from Claude Code's environment and its token from " + tokenFileDefault +
	" (or the file SLACKGATE_TOKEN_FILE names), which only you may read: (umask 077; mkdir -p ~/.config/slackgate; cat > " + tokenFileDefault +
	"), paste one of the bot's API_TOKENS, Ctrl-D. Do not export SLACKGATE_TOKEN: every command Claude runs would see it."

// hookInstall prints the settings block that registers the hook, or with
// -write FILE merges it into a Claude Code settings file (keeping
// everything else there), printing the file as written.
func (p program) hookInstall(args []string) error {
	fl := flag.NewFlagSet("hook install", flag.ContinueOnError)
	fl.SetOutput(p.stderr)
	self, _ := os.Executable()
	command := fl.String("command", cmp.Or(self, "slackgate")+" hook", "the command Claude Code runs")
	wait := fl.Duration("wait", 10*time.Minute, "how long the hook waits for a person (it runs with -wait D)")
	write := fl.String("write", "", "merge into this settings file (~/.claude/settings.json, .claude/settings.json)")
	if err := fl.Parse(args); err != nil {
		return fmt.Errorf("hook install: %w", err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("hook install: unexpected argument %q (slackgate hook install -h says how to call it)", fl.Arg(0))
	}
	if *wait <= 0 || *wait > maxHookWait {
		return fmt.Errorf("hook install: -wait %s: must be positive and at most %s", *wait, maxHookWait)
	}
	settings := hookSettings(*command, *wait)
	if *write != "" {
		merged, err := mergeSettingsFile(*write, settings, *command)
		if err != nil {
			return fmt.Errorf("hook install: %w", err)
		}
		settings = merged
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	if *write != "" {
		if err := writeFileAtomic(*write, append(b, '\n')); err != nil {
			return fmt.Errorf("hook install: %w", err)
		}
		fmt.Fprintf(p.stderr, "wrote %s:\n", *write)
	}
	fmt.Fprintln(p.stderr, installNote)
	_, err = fmt.Fprintf(p.stdout, "%s\n", b)
	return err
}

// mergeSettingsFile reads path (absent: empty) and adds ours to its hooks:
// per event, entries that run command (with any -wait) are replaced,
// others kept.
func mergeSettingsFile(path string, ours map[string]any, command string) (map[string]any, error) {
	cur := map[string]any{}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(raw, &cur); err != nil {
			return nil, fmt.Errorf("%s is not a JSON object; fix it or merge by hand: %w", path, err)
		}
	}
	hooks, _ := cur["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	for event, entries := range ours["hooks"].(map[string]any) {
		mine := entries.([]any)
		old, _ := hooks[event].([]any)
		kept := slices.DeleteFunc(slices.Clone(old), func(e any) bool {
			c := commandOf(e)
			return c == command || strings.HasPrefix(c, command+" -wait ")
		})
		hooks[event] = append(kept, mine...)
	}
	cur["hooks"] = hooks
	return cur, nil
}

// commandOf is the command of a settings entry's first hook ("" if none).
func commandOf(entry any) string {
	e, _ := entry.(map[string]any)
	hs, _ := e["hooks"].([]any)
	if len(hs) == 0 {
		return ""
	}
	h, _ := hs[0].(map[string]any)
	c, _ := h["command"].(string)
	return c
}

// writeFileAtomic replaces path with data through a temporary file, so a
// crash never leaves Claude Code a half-written settings file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".settings-*.json")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
