package blocks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackgate/slackgate/store"
)

// flagLine renders tool on input as a pending card and returns its line
// about the file that matters ("" when there is none) and its text.
func flagLine(t *testing.T, tool, input string) (line, text string) {
	t.Helper()
	m := Card(request("req-s", store.KindTool, tool, input), session)
	if err := ValidateMessage(m.Text, m.Blocks); err != nil {
		t.Fatalf("%s %s: %v", tool, input, err)
	}
	raw, _ := json.Marshal(m.Blocks)
	var blocks []struct {
		Text *struct{ Text string } `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		if b.Text != nil && (strings.Contains(b.Text.Text, "*Writes*") || strings.Contains(b.Text.Text, "*Edits*") || strings.Contains(b.Text.Text, "*Touches*")) {
			return b.Text.Text, m.Text
		}
	}
	return "", m.Text
}

func TestCardsSayWhyAFileThatRunsLaterMatters(t *testing.T) {
	path := func(p string) string { return `{"file_path":` + mustMarshal(p) + `,"content":"x"}` }
	tests := []struct {
		tool, input string
		want        string // in the line: the file as shown, then why
		short       string // in the notification text
	}{
		{"Write", path("/srv/repo/.git/hooks/pre-commit"), "*Writes* `.git/hooks/pre-commit`: git runs hooks", "writes git hooks"},
		{"Edit", `{"file_path":"/srv/repo/.git/config","old_string":"a","new_string":"b"}`, "*Edits* `.git/config`: it names programs git runs", "edits git config"},
		{"Write", path("/home/dev/.gitconfig"), "`/home/dev/.gitconfig`: it names programs git runs", "git config"},
		{"Write", path("/srv/repo/.claude/settings.local.json"), "`.claude/settings.local.json`: it can allow tools and run hooks", "Claude Code configuration"},
		{"MultiEdit", `{"file_path":"/home/dev/.claude/skills/deploy/SKILL.md","edits":[]}`, "*Edits* `/home/dev/.claude/skills/deploy/SKILL.md`", "Claude Code configuration"},
		{"Write", path("/home/dev/.claude.json"), "`/home/dev/.claude.json`: it can allow tools", "Claude Code configuration"},
		{"Write", path("/srv/repo/.mcp.json"), "`.mcp.json`: it names programs (MCP servers)", "MCP servers"},
		{"Edit", `{"file_path":"/srv/repo/CLAUDE.md","old_string":"a","new_string":"b"}`, "`CLAUDE.md`: Claude Code follows it as instructions", "Claude Code instructions"},
		{"Write", path("/srv/repo/pkg/CLAUDE.local.md"), "`pkg/CLAUDE.local.md`: Claude Code follows it", "Claude Code instructions"},
		{"Write", path("/srv/repo/.envrc"), "`.envrc`: direnv runs it", ".envrc"},
		{"Write", path("/home/dev/.zshrc"), "`/home/dev/.zshrc`: shells run it at start, Claude Code's too", "shell start-up file"},
		{"Write", path("/home/dev/.config/fish/config.fish"), "config.fish`: shells run it", "shell start-up file"},
		{"NotebookEdit", `{"notebook_path":"/srv/repo/.claude/agents/nb.ipynb","new_source":"x"}`, "*Edits* `.claude/agents/nb.ipynb`", "Claude Code configuration"},
		{"Bash", `{"command":"cp hooks/pre-push .git/hooks/pre-push && chmod +x .git/hooks/pre-push"}`, "*Touches* `.git/hooks/pre-push`: git runs hooks", "touches git hooks"},
		{"Bash", `{"command":"git config core.hooksPath .githooks"}`, "*Touches* `git config`: it names programs git runs", "git config"},
		{"Bash", `{"command":"git -C /srv/repo config --global alias.st '!sh -c x'"}`, "`git config`", "git config"},
		{"Bash", `{"command":"echo '{}' > \"$HOME/.claude/settings.json\""}`, "`$HOME/.claude/settings.json`: it can allow tools", "Claude Code configuration"},
		{"Bash", `{"command":"printf 'alias ls=rm' >> ~/.bash_profile"}`, "`~/.bash_profile`: shells run it", "shell start-up file"},
		{"Bash", `{"command":"ln -s ../team.envrc .envrc"}`, "`.envrc`: direnv runs it", ".envrc"},
		// A long path keeps its end, the part that says what it is.
		{"Write", path("/srv/repo/tools/release/scripts/.claude/commands/ship-to-production.md"), "*Writes* `…/.claude/commands/ship-to-production.md`", "Claude Code configuration"},
		// Several at once: the one git runs on its own comes first.
		{"Bash", `{"command":"echo x >> ~/.bashrc && cp h .git/hooks/post-checkout"}`, "`.git/hooks/post-checkout`", "git hooks"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			line, text := flagLine(t, tt.tool, tt.input)
			if !strings.HasPrefix(line, "⚠️ ") || !strings.Contains(line, tt.want) {
				t.Errorf("the card's line = %q, want one with %q", line, tt.want)
			}
			if strings.Count(line, "\n") > 0 {
				t.Errorf("the card says it in more than one line: %q", line)
			}
			if !strings.Contains(text, "⚠️ ") || !strings.Contains(text, tt.short) {
				t.Errorf("the notification text %q does not say %q", text, tt.short)
			}
		})
	}
}

func TestCardsDoNotFlagOrdinaryFiles(t *testing.T) {
	for _, tt := range []struct{ tool, input string }{
		{"Write", `{"file_path":"/srv/repo/main.go","content":"x"}`},
		{"Write", `{"file_path":"/srv/repo/hooks/pre-commit","content":"x"}`},
		{"Write", `{"file_path":"/srv/repo/.github/workflows/config","content":"x"}`},
		{"Write", `{"file_path":"/srv/repo/.mcp.json.example","content":"x"}`},
		{"Write", `{"file_path":"/srv/repo/docs/claude-code.md","content":"x"}`},
		{"Edit", `{"file_path":"/srv/repo/.gitignore","old_string":"a","new_string":"b"}`},
		{"Bash", `{"command":"git commit -m 'config and hooks'"}`},
		{"Bash", `{"command":"git status && make test"}`},
		{"Bash", `{"command":"grep -r config src/"}`},
		{"Read", `{"file_path":"/srv/repo/.claude/settings.json"}`},
	} {
		if line, _ := flagLine(t, tt.tool, tt.input); line != "" {
			t.Errorf("%s %s: flagged %q", tt.tool, tt.input, line)
		}
	}
}

func TestTheFileACardNamesIsEscaped(t *testing.T) {
	line, text := flagLine(t, "Write", `{"file_path":"/srv/repo/.claude/<!channel> `+"`x`"+` <@U0BOSS>.json","content":"x"}`)
	if line == "" {
		t.Fatal("no line about the file")
	}
	for _, raw := range []string{"<!channel>", "<@U0BOSS>", "`x`"} {
		if strings.Contains(line, raw) || strings.Contains(text, raw) {
			t.Errorf("the card shows %q unescaped: %q / %q", raw, line, text)
		}
	}
	if strings.Count(line, "`") != 2 {
		t.Errorf("the file's name breaks out of its code span: %q", line)
	}
}
