package relay

import (
	"os"
	"slices"
	"strings"
)

// The CLI's environment is an allowlist: whatever runs beside slackgate
// (Slack tokens, store URLs, a cloud role's keys) reaches Claude, and every
// command a person approves, only when it is named here or by the operator.

// allowedNames pass as they are: what a shell and the CLI need to work,
// and the variables Claude Code documents that carry no prefix of its own.
var allowedNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "TERM": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "NODE_EXTRA_CA_CERTS": true,
	"CLAUDE_CONFIG_DIR": true, "API_TIMEOUT_MS": true, "MAX_THINKING_TOKENS": true,
	"BASH_DEFAULT_TIMEOUT_MS": true, "BASH_MAX_TIMEOUT_MS": true, "BASH_MAX_OUTPUT_LENGTH": true,
	"MCP_TIMEOUT": true, "MCP_TOOL_TIMEOUT": true, "MAX_MCP_OUTPUT_TOKENS": true, "USE_BUILTIN_RIPGREP": true,
	"DISABLE_AUTOUPDATER": true, "DISABLE_TELEMETRY": true, "DISABLE_ERROR_REPORTING": true,
	"DISABLE_BUG_COMMAND": true, "DISABLE_COST_WARNINGS": true, "DISABLE_NON_ESSENTIAL_MODEL_CALLS": true,
}

var allowedPrefixes = []string{"LC_", "ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_PROMPT_CACHING"}

// providers are the cloud platforms Claude Code can use instead of the
// Anthropic API. A platform's credentials pass only when the CLI is told to
// use it, so a machine's cloud role does not leak into a session that
// never needed it.
var providers = []struct {
	selector string // a truthy value selects the platform
	names    []string
	prefixes []string
}{
	{selector: "CLAUDE_CODE_USE_BEDROCK", prefixes: []string{"AWS_"}},
	{selector: "CLAUDE_CODE_USE_VERTEX",
		names:    []string{"GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUD_ML_REGION"},
		prefixes: []string{"VERTEX_REGION_"}},
	{selector: "CLAUDE_CODE_USE_FOUNDRY", prefixes: []string{"AZURE_"}},
}

// nestedSession makes the CLI believe it runs inside another Claude Code
// session; it never passes, even when named.
const nestedSession = "CLAUDECODE"

// ClaudeEnv builds the CLI's environment from environ (KEY=VALUE pairs): the
// variables on the allowlist, a selected cloud provider's credentials, and
// the names in pass. A name deny reports (slackgate's own settings) never
// passes, whatever list it is on; neither does CLAUDECODE. deny may be nil.
// The order of environ is kept.
func ClaudeEnv(environ, pass []string, deny func(name string) bool) []string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == nestedSession || (deny != nil && deny(name)) {
			continue
		}
		if slices.Contains(pass, name) || allowed(name, vars) {
			out = append(out, kv)
		}
	}
	return out
}

func allowed(name string, vars map[string]string) bool {
	if allowedNames[name] || hasAnyPrefix(name, allowedPrefixes) {
		return true
	}
	for _, p := range providers {
		if truthy(vars[p.selector]) && (slices.Contains(p.names, name) || hasAnyPrefix(name, p.prefixes)) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// truthy reads a switch the way Claude Code does.
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// ValidEnvName reports whether name can be an environment variable's name
// (letters, digits and underscores, not starting with a digit).
func ValidEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// defaultEnv is the CLI's environment when the caller gives none:
// slackgate's own, through the allowlist.
func defaultEnv() []string { return ClaudeEnv(os.Environ(), nil, nil) }
