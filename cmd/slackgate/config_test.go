package main

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := loadConfig(nil)
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	want := Config{
		ClaudeBin: "claude", PermissionMode: "default", RequestTimeout: 30 * time.Minute,
		MaxSessions: 8, IdleTimeout: 10 * time.Minute, WorkerTimeout: 30 * time.Second, MaxTranscriptBytes: 32 << 20, DataDir: "./data", RedisKeyPrefix: "slackgate", HTTPAddr: ":3000",
		LogLevel: "info", LogFormat: "json", HealthAddr: "127.0.0.1:9090",
		SlackPostsPerSecond: 1, SlackPostBurst: 4, SlackUpdatesPerMinute: 50, SlackUpdateBurst: 20, SlackLiveEditInterval: 3 * time.Second,
		CardClaimTimeout: time.Minute, ReconcileInterval: 30 * time.Second,
		Retention: 30 * 24 * time.Hour, AuditRetention: 365 * 24 * time.Hour, AuditMaxBacklog: 1000,
		MaxSessionsPerUser: 3, MaxQueuedInputs: 20, MaxPromptBytes: 16 << 10,
		APIMaxSessions: 100, APIMaxPending: 100, APIRequestsPerMinute: 60, APIToolResultsPerMinute: 120,
	}
	want.WorkDir = cfg.WorkDir // the current directory
	if cfg.WorkDir == "" {
		t.Error("WorkDir: want the current directory, got empty")
	}
	if cfg != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigReadsEveryVariable(t *testing.T) {
	cfg, err := loadConfig([]string{
		"CLAUDE_BIN=/opt/claude", "CLAUDE_WORKDIR=/srv/repo", "CLAUDE_PERMISSION_MODE=plan",
		"CLAUDE_MODEL=opus", "CLAUDE_ARGS=--max-turns 3", "REDIS_URL=redis://r:6379/1", "REDIS_KEY_PREFIX=team-a", "DATA_DIR=/var/lib/sg",
		"REQUEST_TIMEOUT=0", "MAX_SESSIONS=2", "SESSION_IDLE_TIMEOUT=1m", "WORKER_TIMEOUT=45s", "MAX_TRANSCRIPT_BYTES=0", "WORKER_ID=w1", "LOG_LEVEL=debug",
		"LOG_FORMAT=console", "SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "SLACK_SIGNING_SECRET=s",
		"SLACK_API_URL=http://127.0.0.1:1/api/", "HTTP_ADDR=:8080", "HEALTH_ADDR=127.0.0.1:9191", "APPROVERS=U1,S2",
		"CHANNEL_WORKDIRS=C1=/a", "UNRELATED=x",
		"SLACK_POSTS_PER_SECOND=2", "SLACK_POST_BURST=3", "SLACK_UPDATES_PER_MINUTE=100", "SLACK_UPDATE_BURST=5", "SLACK_LIVE_EDIT_INTERVAL=1s",
		"CARD_CLAIM_TIMEOUT=2m", "RECONCILE_INTERVAL=10s",
		"RETENTION=48h", "AUDIT_RETENTION=0",
		"AUDIT_CHANNEL=C9", "AUDIT_WEBHOOK_URL=https://logs.example.com/sg?token=t", "AUDIT_WEBHOOK_SECRET=" + strings.Repeat("s", 32), "AUDIT_MAX_BACKLOG=50",
		"STARTERS=U3", "ALLOWED_TEAMS=T9,E9", "ALLOWED_CHANNELS=C1", "ALLOW_DMS=true", "DM_WORKDIR=/srv/dm",
		"MAX_SESSIONS_PER_USER=5", "MAX_QUEUED_INPUTS=7", "MAX_PROMPT_BYTES=1000",
		"API_MAX_SESSIONS=9", "API_MAX_PENDING=8", "API_REQUESTS_PER_MINUTE=7", "API_TOOL_RESULTS_PER_MINUTE=6",
		"POLICY_FILE=/etc/slackgate/policy.yaml",
		"CLAUDE_SETTINGS=/etc/slackgate/claude.json", "CLAUDE_MCP_CONFIG=/etc/slackgate/mcp.json", "CLAUDE_SETTING_SOURCES=project",
	})
	if err != nil {
		t.Fatalf("loadConfig: %v", err)
	}
	want := Config{
		ClaudeBin: "/opt/claude", WorkDir: "/srv/repo", PermissionMode: "plan", Model: "opus",
		Args: "--max-turns 3", RequestTimeout: 0, MaxSessions: 2, IdleTimeout: time.Minute, WorkerTimeout: 45 * time.Second, MaxTranscriptBytes: 0, WorkerID: "w1",
		RedisURL: "redis://r:6379/1", RedisKeyPrefix: "team-a", DataDir: "/var/lib/sg", SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1",
		SlackSigningSecret: "s", SlackAPIURL: "http://127.0.0.1:1/api/", HTTPAddr: ":8080", Approvers: "U1,S2",
		ChannelWorkDirs: "C1=/a", LogLevel: "debug", LogFormat: "console", HealthAddr: "127.0.0.1:9191",
		SlackPostsPerSecond: 2, SlackPostBurst: 3, SlackUpdatesPerMinute: 100, SlackUpdateBurst: 5, SlackLiveEditInterval: time.Second,
		CardClaimTimeout: 2 * time.Minute, ReconcileInterval: 10 * time.Second,
		Retention: 48 * time.Hour, AuditRetention: 0,
		AuditChannel: "C9", AuditWebhookURL: "https://logs.example.com/sg?token=t", AuditWebhookSecret: strings.Repeat("s", 32), AuditMaxBacklog: 50,
		Starters: "U3", AllowedTeams: "T9,E9", AllowedChannels: "C1",
		AllowDMs: true, DMWorkDir: "/srv/dm", MaxSessionsPerUser: 5, MaxQueuedInputs: 7, MaxPromptBytes: 1000,
		APIMaxSessions: 9, APIMaxPending: 8, APIRequestsPerMinute: 7, APIToolResultsPerMinute: 6,
		PolicyFile:     "/etc/slackgate/policy.yaml",
		ClaudeSettings: "/etc/slackgate/claude.json", ClaudeMCPConfig: "/etc/slackgate/mcp.json", ClaudeSettingSources: "project",
	}
	if cfg != want {
		t.Errorf("\n got %+v\nwant %+v", cfg, want)
	}
}

func TestLoadConfigRejectsBadValuesNamingTheVariable(t *testing.T) {
	tests := []struct {
		env  string
		want string
	}{
		{"CLAUDE_PERMISSION_MODE=nonsense", "CLAUDE_PERMISSION_MODE"},
		{"REQUEST_TIMEOUT=-1s", "REQUEST_TIMEOUT"},
		{"REQUEST_TIMEOUT=soon", "REQUEST_TIMEOUT"},
		{"CARD_CLAIM_TIMEOUT=15s", "CARD_CLAIM_TIMEOUT"},
		{"RECONCILE_INTERVAL=0s", "RECONCILE_INTERVAL"},
		{"MAX_SESSIONS=0", "MAX_SESSIONS"},
		{"RETENTION=-1h", "RETENTION"},
		{"RETENTION=a month", "RETENTION"},
		{"AUDIT_RETENTION=-1h", "AUDIT_RETENTION"},
		{"MAX_SESSIONS_PER_USER=0", "MAX_SESSIONS_PER_USER"},
		{"MAX_QUEUED_INPUTS=0", "MAX_QUEUED_INPUTS"},
		{"MAX_PROMPT_BYTES=-1", "MAX_PROMPT_BYTES"},
		{"API_MAX_PENDING=0", "API_MAX_PENDING"},
		{"API_TOOL_RESULTS_PER_MINUTE=-5", "API_TOOL_RESULTS_PER_MINUTE"},
		{"MAX_TRANSCRIPT_BYTES=-1", "MAX_TRANSCRIPT_BYTES"},
		{"MAX_TRANSCRIPT_BYTES=1000000000", "MAX_TRANSCRIPT_BYTES"},
		{"MAX_TRANSCRIPT_BYTES=32MiB", "MAX_TRANSCRIPT_BYTES"},
		{"ALLOW_DMS=maybe", "ALLOW_DMS"},
		{"LOG_LEVEL=loud", "LOG_LEVEL"},
		{"LOG_FORMAT=xml", "LOG_FORMAT"},
		{`CLAUDE_ARGS=--append-system-prompt "unterminated`, "CLAUDE_ARGS"},
		{"AUDIT_CHANNEL=general", "AUDIT_CHANNEL"},
		{"AUDIT_CHANNEL=C1,C2", "AUDIT_CHANNEL"},
		{"AUDIT_MAX_BACKLOG=0", "AUDIT_MAX_BACKLOG"},
		{"AUDIT_WEBHOOK_URL=https://logs.example.com/", "AUDIT_WEBHOOK_SECRET"},
		{"AUDIT_WEBHOOK_SECRET=" + strings.Repeat("s", 32), "AUDIT_WEBHOOK_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			_, err := loadConfig([]string{tt.env})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("loadConfig(%s) = %v, want an error naming %s", tt.env, err, tt.want)
			}
		})
	}
}

// TestAuditWebhookSettingsAreChecked: the webhook needs https (plain http
// only to this host) and a secret of 32 bytes or more; an error never
// repeats the URL, whose query may hold a token.
func TestAuditWebhookSettingsAreChecked(t *testing.T) {
	secret := "AUDIT_WEBHOOK_SECRET=" + strings.Repeat("k", 32)
	for _, tt := range []struct {
		env  []string
		want string // "" for accepted
	}{
		{[]string{"AUDIT_WEBHOOK_URL=https://siem.example.com/in?token=hunter2", secret}, ""},
		{[]string{"AUDIT_WEBHOOK_URL=http://127.0.0.1:9880/in", secret}, ""},
		{[]string{"AUDIT_WEBHOOK_URL=http://siem.example.com/in?token=hunter2", secret}, "AUDIT_WEBHOOK_URL: http to siem.example.com would send the audit trail in the clear"},
		{[]string{"AUDIT_WEBHOOK_URL=siem.example.com/in?token=hunter2", secret}, "AUDIT_WEBHOOK_URL: not an absolute URL"},
		{[]string{"AUDIT_WEBHOOK_URL=https://siem.example.com/in?token=hunter2", "AUDIT_WEBHOOK_SECRET=short"}, "AUDIT_WEBHOOK_SECRET: 5 bytes; at least 32"},
		{[]string{"AUDIT_WEBHOOK_URL=https://siem.example.com/%zz?token=hunter2", secret}, "AUDIT_WEBHOOK_URL: not a URL"},
	} {
		_, err := loadConfig(tt.env)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("loadConfig(%q) = %v, want it accepted", tt.env, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("loadConfig(%q) = %v, want %q", tt.env, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("loadConfig(%q) = %v: the error repeats the URL's token", tt.env, err)
		}
	}
}

func TestValidateSlackExplainsWhatIsMissing(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no bot token", Config{SlackAppToken: "xapp-1"}, "SLACK_BOT_TOKEN"},
		{"no transport", Config{SlackBotToken: "xoxb-1"}, "SLACK_APP_TOKEN"},
		{"no approvers", Config{SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1"}, "APPROVERS is required: list the Slack user ids (U…) and user group ids (S…) who may approve, or set APPROVERS=* to let anyone who can see a card decide"},
		{"DMs without a workdir", Config{SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1", Approvers: "*", AllowDMs: true}, "DM_WORKDIR"},
		{"DMs with a relative workdir", Config{SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1", Approvers: "*", AllowDMs: true, DMWorkDir: "dm"}, "DM_WORKDIR"},
		{"socket mode", Config{SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1", Approvers: "U1"}, ""},
		{"http mode", Config{SlackBotToken: "xoxb-1", SlackSigningSecret: "s", Approvers: "*"}, ""},
		{"DMs in their own workdir", Config{SlackBotToken: "xoxb-1", SlackAppToken: "xapp-1", Approvers: "*", AllowDMs: true, DMWorkDir: "/srv/dm"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.validateSlack()
			if tt.want == "" && err != nil {
				t.Fatalf("validateSlack: %v", err)
			}
			if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("validateSlack = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  --max-turns   3 ", []string{"--max-turns", "3"}},
		{`--append-system-prompt "be brief, please"`, []string{"--append-system-prompt", "be brief, please"}},
		{`--x 'a "b" c'`, []string{"--x", `a "b" c`}},
		{`a\ b ""`, []string{"a b", ""}},
	}
	for _, tt := range tests {
		got, err := splitArgs(tt.in)
		if err != nil {
			t.Fatalf("splitArgs(%q): %v", tt.in, err)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// environ is c as the environment a slackgate process reads it from: one
// KEY=VALUE per setting, empty strings left out (an empty variable reads
// as unset). Tests start child processes with it, so a program run in the
// test process and one run as a process of its own share one
// configuration.
func (c Config) environ() []string {
	var out []string
	v := reflect.ValueOf(c)
	for i := range v.NumField() {
		name := v.Type().Field(i).Tag.Get("env")
		var value string
		switch f := v.Field(i); f.Interface().(type) {
		case string:
			value = f.String()
		case time.Duration:
			value = time.Duration(f.Int()).String()
		case int, int64:
			value = strconv.FormatInt(f.Int(), 10)
		case float64:
			value = strconv.FormatFloat(f.Float(), 'g', -1, 64)
		case bool:
			value = strconv.FormatBool(f.Bool())
		default:
			panic(fmt.Sprintf("Config.environ: %s is a %s; say how to write it", name, f.Type()))
		}
		if value != "" {
			out = append(out, name+"="+value)
		}
	}
	return out
}

// A configuration written out by environ reads back the same: every
// setting, of every type Config holds.
func TestConfigEnvironReadsBackTheSame(t *testing.T) {
	var cfg Config
	v := reflect.ValueOf(&cfg).Elem()
	for i := range v.NumField() {
		switch f := v.Field(i); f.Interface().(type) {
		case string:
			f.SetString("value-of-" + v.Type().Field(i).Name)
		case time.Duration:
			f.SetInt(int64(90*time.Second + 250*time.Millisecond))
		case int, int64:
			f.SetInt(int64(7 + i))
		case float64:
			f.SetFloat(0.1 + float64(i))
		case bool:
			f.SetBool(true)
		}
	}
	environ := cfg.environ()
	if len(environ) != v.NumField() {
		t.Errorf("environ wrote %d settings, want all %d:\n%q", len(environ), v.NumField(), environ)
	}
	back, err := parseConfig(environ)
	if err != nil {
		t.Fatalf("parseConfig: %v", err)
	}
	if back != cfg {
		t.Errorf("read back:\n got %+v\nwant %+v", back, cfg)
	}
	// A zero number is a setting too; an empty string is unset.
	var zero Config
	if back, err := parseConfig(zero.environ()); err != nil || back.MaxSessions != 0 || back.DataDir != "./data" {
		t.Errorf("zero config read back as %+v (%v): want zero numbers kept and defaults for empty strings", back, err)
	}
}

// TestMisspeltSettingsAreNamed: a variable that looks like one of
// slackgate's settings and is not gets a warning naming the closest one;
// Claude Code's, the system's, the hook's and a Kubernetes service's
// variables do not.
func TestMisspeltSettingsAreNamed(t *testing.T) {
	got := misspeltSettings([]string{"APROVERS=U1", "SLACK_BOT_TOKN=xoxb-1", "CLAUDE_WORKIDR=/srv/repo", "SLACK_TEAM=T1",
		"APPROVERS=U1", "PATH=/bin", "HOME=/root", "HTTPS_PROXY=x", "CLAUDE_CODE_USE_BEDROCK=1", "CLAUDE_CONFIG_DIR=/x", "ANTHROPIC_API_KEY=k",
		"MAX_THINKING_TOKENS=1", "API_TIMEOUT_MS=1", "SLACKGATE_URL=https://x", "REDIS_SERVICE_HOST=10.0.0.1", "REDIS_PORT=tcp://10.0.0.1:6379",
		"REDIS_PORT_6379_TCP_ADDR=10.0.0.1", "HOSTNAME=box", "GOFLAGS=-x", "CLAUDECODE=1"})
	want := []string{
		"APROVERS is not a setting slackgate reads: did you mean APPROVERS?",
		"CLAUDE_WORKIDR is not a setting slackgate reads: did you mean CLAUDE_WORKDIR?",
		"SLACK_BOT_TOKN is not a setting slackgate reads: did you mean SLACK_BOT_TOKEN?",
		"SLACK_TEAM looks like a setting of slackgate's, but is none it reads (README.md lists them)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	out, _ := doctor(t, []string{"APROVERS=U1", "DATA_DIR=" + t.TempDir()}, "-offline")
	if !strings.Contains(out, "! APROVERS is not a setting slackgate reads: did you mean APPROVERS?") {
		t.Errorf("doctor does not warn about APROVERS:\n%s", out)
	}
}
