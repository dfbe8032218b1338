package relay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestClaudeEnvPassesOnlyTheAllowlist(t *testing.T) {
	slackgateOwn := func(name string) bool {
		return name == "CLAUDE_BIN" || name == "CLAUDE_ENV" || strings.HasPrefix(name, "SLACK_") || strings.HasPrefix(name, "REDIS_")
	}
	tests := []struct {
		name    string
		environ []string
		pass    []string
		want    []string
	}{
		{name: "the basics pass",
			environ: []string{"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/bash", "TERM=xterm", "LANG=C.UTF-8", "TZ=UTC", "TMPDIR=/t"},
			want:    []string{"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "SHELL=/bin/bash", "TERM=xterm", "LANG=C.UTF-8", "TZ=UTC", "TMPDIR=/t"}},
		{name: "locale, proxies and certificates pass",
			environ: []string{"LC_ALL=C", "LC_TIME=de_DE", "HTTPS_PROXY=http://p", "https_proxy=http://p", "NO_PROXY=x", "no_proxy=x", "ALL_PROXY=socks5://p", "SSL_CERT_FILE=/c.pem", "NODE_EXTRA_CA_CERTS=/ca.pem"},
			want:    []string{"LC_ALL=C", "LC_TIME=de_DE", "HTTPS_PROXY=http://p", "https_proxy=http://p", "NO_PROXY=x", "no_proxy=x", "ALL_PROXY=socks5://p", "SSL_CERT_FILE=/c.pem", "NODE_EXTRA_CA_CERTS=/ca.pem"}},
		{name: "Claude's own prefixes pass",
			environ: []string{"ANTHROPIC_API_KEY=sk", "ANTHROPIC_BASE_URL=http://m", "CLAUDE_CODE_USE_BEDROCK=0", "DISABLE_AUTOUPDATER=1"},
			want:    []string{"ANTHROPIC_API_KEY=sk", "ANTHROPIC_BASE_URL=http://m", "CLAUDE_CODE_USE_BEDROCK=0", "DISABLE_AUTOUPDATER=1"}},
		{name: "everything else stays behind",
			environ: []string{"PATH=/bin", "DATABASE_URL=postgres://secret", "GITHUB_TOKEN=ghp_x", "LD_PRELOAD=/evil.so", "AWS_SECRET_ACCESS_KEY=k", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "AZURE_CLIENT_SECRET=s"},
			want:    []string{"PATH=/bin"}},
		{name: "CLAUDECODE never passes, even when named",
			environ: []string{"CLAUDECODE=1", "PATH=/bin"}, pass: []string{"CLAUDECODE"},
			want: []string{"PATH=/bin"}},
		{name: "Bedrock selected: AWS credentials pass",
			environ: []string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AK", "AWS_SECRET_ACCESS_KEY=k", "GOOGLE_CLOUD_PROJECT=p"},
			want:    []string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AK", "AWS_SECRET_ACCESS_KEY=k"}},
		{name: "Vertex selected: Google credentials and regions pass, AWS does not",
			environ: []string{"CLAUDE_CODE_USE_VERTEX=true", "CLOUD_ML_REGION=us-east5", "ANTHROPIC_VERTEX_PROJECT_ID=p", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "GOOGLE_CLOUD_PROJECT=p", "VERTEX_REGION_CLAUDE_3_5_HAIKU=us-central1", "AWS_SECRET_ACCESS_KEY=k", "GOOGLE_OTHER=x"},
			want:    []string{"CLAUDE_CODE_USE_VERTEX=true", "CLOUD_ML_REGION=us-east5", "ANTHROPIC_VERTEX_PROJECT_ID=p", "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "GOOGLE_CLOUD_PROJECT=p", "VERTEX_REGION_CLAUDE_3_5_HAIKU=us-central1"}},
		{name: "Foundry selected: Azure credentials pass",
			environ: []string{"CLAUDE_CODE_USE_FOUNDRY=1", "ANTHROPIC_FOUNDRY_RESOURCE=r", "AZURE_CLIENT_ID=c", "AWS_REGION=x"},
			want:    []string{"CLAUDE_CODE_USE_FOUNDRY=1", "ANTHROPIC_FOUNDRY_RESOURCE=r", "AZURE_CLIENT_ID=c"}},
		{name: "CLAUDE_ENV names pass as they are",
			environ: []string{"GITHUB_TOKEN=ghp_x", "NPM_TOKEN=n", "PATH=/bin"}, pass: []string{"GITHUB_TOKEN"},
			want: []string{"GITHUB_TOKEN=ghp_x", "PATH=/bin"}},
		{name: "slackgate's settings never pass, even when named or under an allowed prefix",
			environ: []string{"SLACK_BOT_TOKEN=xoxb", "SLACK_SIGNING_SECRET=s", "REDIS_URL=redis://:pw@r", "CLAUDE_BIN=/c", "CLAUDE_ENV=SLACK_BOT_TOKEN", "PATH=/bin"},
			pass:    []string{"SLACK_BOT_TOKEN", "REDIS_URL", "CLAUDE_BIN"},
			want:    []string{"PATH=/bin"}},
		{name: "entries without = are dropped", environ: []string{"PATH", "TERM=dumb"}, want: []string{"TERM=dumb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClaudeEnv(tt.environ, tt.pass, slackgateOwn)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ClaudeEnv(%q, pass %q)\n got %q\nwant %q", tt.environ, tt.pass, got, tt.want)
			}
		})
	}
}

func TestClaudeEnvDenyWinsOverEveryAllowRule(t *testing.T) {
	environ := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk", "CLAUDE_CODE_X=1", "HOME=/h"}
	got := ClaudeEnv(environ, []string{"HOME"}, func(string) bool { return true })
	if len(got) != 0 {
		t.Errorf("a deny-all filter let %q through", got)
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "_x": true, "a1": true, "": false, "1A": false, "A-B": false, "A B": false, "A=B": false, "É": false,
	} {
		if got := ValidEnvName(name); got != want {
			t.Errorf("ValidEnvName(%q) = %v, want %v", name, got, want)
		}
	}
}

// A process started without an explicit environment must not inherit
// slackgate's secrets: nil means the allowlist, not os.Environ().
func TestProcessWithoutEnvGetsTheAllowlistNotTheWholeEnvironment(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-must-not-leak")
	t.Setenv("SOME_DB_PASSWORD", "hunter2")
	t.Setenv("CLAUDECODE", "1")
	t.Setenv("LC_ALL", "C")
	out := filepath.Join(t.TempDir(), "env.txt")
	bin := script(t, "env > "+out)
	p, err := StartProcess(context.Background(), ProcessOptions{Bin: bin, SessionID: "s"}, ConnHandlers{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if exit := p.Wait(); exit.Code != 0 {
		t.Fatalf("exit = %+v", exit)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, leak := range []string{"xoxb-must-not-leak", "hunter2", "CLAUDECODE="} {
		if strings.Contains(got, leak) {
			t.Errorf("the child's environment contains %q:\n%s", leak, got)
		}
	}
	if !strings.Contains(got, "LC_ALL=C") || !strings.Contains(got, "PATH=") {
		t.Errorf("the child's environment lacks the allowed variables:\n%s", got)
	}
}

func TestLookupRunAsSaysHowToCreateAMissingUser(t *testing.T) {
	_, err := LookupRunAs("slackgate-no-such-user")
	if !errors.Is(err, ErrCannotRunAs) || !strings.Contains(err.Error(), "useradd --create-home slackgate-no-such-user") {
		t.Errorf("err = %v, want ErrCannotRunAs saying how to create the user", err)
	}
	_, err = LookupRunAs("root")
	if !errors.Is(err, ErrCannotRunAs) || !strings.Contains(err.Error(), "unprivileged") {
		t.Errorf("root: err = %v, want a refusal", err)
	}
}
