package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The hook's and the MCP tool's token lives in a file, not in Claude
// Code's environment, where every command Claude runs would inherit it.
// A command running as the same user can still read the file once a
// person approves it; what the token then allows is only a hook's job
// (see package approvalapi). The file must be the user's own and
// private, as ssh insists for its keys: one others can read has leaked
// already, and one others can write lets them choose whose requests the
// hook makes.

// tokenFileDefault is where the token is looked for without
// SLACKGATE_TOKEN_FILE, as a person writes it.
const tokenFileDefault = "~/.config/slackgate/token"

// maxTokenFile bounds what is read: a token is a short line.
const maxTokenFile = 4 << 10

// defaultTokenFile is tokenFileDefault for this user: under
// XDG_CONFIG_HOME when set, else HOME/.config.
func defaultTokenFile(cfg HookConfig) (string, error) {
	dir := cfg.ConfigHome
	if dir == "" {
		if cfg.Home == "" {
			return "", errors.New("config: neither HOME nor XDG_CONFIG_HOME is set, so the token file " + tokenFileDefault + " cannot be found; set SLACKGATE_TOKEN_FILE")
		}
		dir = filepath.Join(cfg.Home, ".config")
	}
	return filepath.Join(dir, "slackgate", "token"), nil
}

// readTokenFile reads the API token from path: a regular file owned by
// this user that nobody else may read or write (the file itself, after
// following links, is what is checked).
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("config: the approval API token is read from %s (SLACKGATE_TOKEN_FILE; one of the bot's API_TOKENS, mode 600): %w", path, err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("config: token file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("config: token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("config: token file %s may be read or written by others (mode %04o), so the token may have leaked already: chmod 600 %s, and consider a new token", path, perm, path)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		return "", fmt.Errorf("config: token file %s belongs to uid %d, not to this user (uid %d): use a file of your own", path, sys.Uid, os.Getuid())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("config: read token file %s: %w", path, err)
	}
	token := strings.TrimSpace(string(raw))
	switch {
	case len(raw) > maxTokenFile:
		return "", fmt.Errorf("config: token file %s is larger than %d bytes; it should hold one token", path, maxTokenFile)
	case token == "" || strings.ContainsAny(token, "\r\n"):
		return "", fmt.Errorf("config: token file %s should hold one token on one line", path)
	}
	return token, nil
}
